/* SPDX-License-Identifier: BSD-3-Clause */
/* The user frees the datatype right after MPI_Psend_init / MPI_Precv_init (legal: MPI keeps a
 * datatype alive while a communication uses it), on both sides, before pairing.
 *
 * For each case both ranks build their datatype, init the request, free the datatype at once
 * (for the nested case also the inner types it was built from), then build and commit other
 * types of other shapes, so that a library that kept the bare handle or pointer sees a
 * different or destroyed type. Then ROUNDS rounds: the receiver's buffer is byte-exact with
 * what the send datatype packs and the receive datatype unpacks (computed with freshly built
 * copies of the two types), the holes of the receive datatype keep SENTINEL, and MPI_Get_count
 * counts receive elements. Cases: contiguous, vector with stride, struct with holes (resized
 * to its C size), resized (an int with a hole), and a vector of structs whose inner types are
 * freed first.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 17
#define ROUNDS 3
#define SENTINEL 0xA5
#define CLOBBER 8

typedef struct {
    int i;
    double d;
    char c[3];
} Record;

typedef MPI_Datatype (*Builder)(void);

typedef struct {
    const char* name;
    Builder stype;
    int sparts;
    int scount;
    Builder rtype;
    int rparts;
    int rcount;
} Case;

static MPI_Datatype committed(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

static MPI_Datatype contig4(void)
{
    MPI_Datatype t;
    MPI_Type_contiguous(4, MPI_INT, &t);
    return committed(t);
}

static MPI_Datatype contig2(void)
{
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    return committed(t);
}

static MPI_Datatype vector_s(void) /* 8 ints in 11, holes of 1 */
{
    MPI_Datatype t;
    MPI_Type_vector(4, 2, 3, MPI_INT, &t);
    return committed(t);
}

static MPI_Datatype vector_r(void) /* 8 ints in 10, holes of 2 */
{
    MPI_Datatype t;
    MPI_Type_vector(2, 4, 6, MPI_INT, &t);
    return committed(t);
}

/* Record as a struct resized to sizeof(Record): the padding bytes are holes. Not committed. */
static MPI_Datatype record_uncommitted(void)
{
    int lens[3] = {1, 1, 3};
    MPI_Aint displs[3] = {offsetof(Record, i), offsetof(Record, d), offsetof(Record, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype raw, t;
    MPI_Type_create_struct(3, lens, displs, types, &raw);
    MPI_Type_create_resized(raw, 0, sizeof(Record), &t);
    MPI_Type_free(&raw);
    return t;
}

static MPI_Datatype record(void) { return committed(record_uncommitted()); }

static MPI_Datatype int_gap12(void) /* an int and an 8-byte hole */
{
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 12, &t);
    return committed(t);
}

static MPI_Datatype int_gap8(void) /* an int and a 4-byte hole */
{
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 8, &t);
    return committed(t);
}

/* 3 blocks of 2 Records, 5 Records apart; the inner type is freed before this one is used. */
static MPI_Datatype record_vector(void)
{
    MPI_Datatype inner = record_uncommitted();
    MPI_Datatype t;
    MPI_Type_vector(3, 2, 5, inner, &t);
    MPI_Type_free(&inner);
    return committed(t);
}

/* 6 Records in a row, from a freed inner type. */
static MPI_Datatype record_contig(void)
{
    MPI_Datatype inner = record_uncommitted();
    MPI_Datatype t;
    MPI_Type_contiguous(6, inner, &t);
    MPI_Type_free(&inner);
    return committed(t);
}

/* Other types of other sizes, created after the free so that MPI may reuse the freed handles
 * and memory for them. */
static void clobber(MPI_Datatype out[CLOBBER])
{
    for (int i = 0; i < CLOBBER; ++i) {
        MPI_Type_vector(1 + i, 3, 7 + i, i % 2 ? MPI_DOUBLE : MPI_SHORT, &out[i]);
        MPI_Type_commit(&out[i]);
    }
}

static void run_case(const Case* c)
{
    const int send = tu_rank == 0;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Datatype type = send ? c->stype() : c->rtype();
    /* Fresh copies of both types, for buffer sizes and the expected result. */
    MPI_Datatype sref = c->stype();
    MPI_Datatype rref = c->rtype();
    const size_t sbytes = tu_type_span(sref, c->sparts * c->scount);
    const size_t rbytes = tu_type_span(rref, c->rparts * c->rcount);
    unsigned char* sbuf = malloc(sbytes);
    unsigned char* rbuf = malloc(rbytes);
    if (send) {
        TU_MPI(MPI_Psend_init(sbuf, c->sparts, c->scount, type, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(rbuf, c->rparts, c->rcount, type, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    TU_MPI(MPI_Type_free(&type));
    MPI_Datatype others[CLOBBER];
    clobber(others);
    for (int round = 0; round < ROUNDS && req != MPI_REQUEST_NULL; ++round) {
        char what[96];
        snprintf(what, sizeof what, "%s round %d", c->name, round);
        tu_fill(sbuf, sbytes, 0, 0, round);
        if (send) {
            TU_MPI(MPI_Start(&req));
            tu_pready_all(c->sparts, req);
            if (TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, what)) != MPI_SUCCESS) {
                break; /* the failure is reported; later rounds would only repeat it */
            }
            continue;
        }
        memset(rbuf, SENTINEL, rbytes);
        TU_MPI(MPI_Start(&req));
        MPI_Status st;
        if (TU_MPI(tu_wait(&req, &st, what)) != MPI_SUCCESS) {
            break;
        }
        int count = -1;
        MPI_Get_count(&st, rref, &count);
        TU_CHECK_MSG(count == c->rparts * c->rcount, "%s: MPI_Get_count = %d, expected %d", what,
                     count, c->rparts * c->rcount);
        unsigned char* expect = tu_expected_recv(sbuf, c->sparts * c->scount, sref,
                                                 c->rparts * c->rcount, rref, rbytes, SENTINEL);
        tu_verify_expected(rbuf, expect, rbytes, SENTINEL, what);
        free(expect);
    }
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req));
    }
    for (int i = 0; i < CLOBBER; ++i) {
        MPI_Type_free(&others[i]);
    }
    MPI_Type_free(&sref);
    MPI_Type_free(&rref);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const Case cases[] = {
        /* 96 ints: 8 x 3 blocks of 4 / 6 x 8 pairs */
        {"contiguous/contiguous", contig4, 8, 3, contig2, 6, 8},
        /* 96 ints in strided blocks on both sides */
        {"vector/vector", vector_s, 4, 3, vector_r, 6, 2},
        /* 20 Records with padding holes on both sides */
        {"struct/struct", record, 5, 4, record, 2, 10},
        /* 60 ints, 8-byte holes / 4-byte holes */
        {"resized/resized", int_gap12, 6, 10, int_gap8, 4, 15},
        /* 72 Records: strided blocks of records / contiguous runs, inner types freed first */
        {"vector(struct)/contiguous(struct)", record_vector, 4, 3, record_contig, 3, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        run_case(&cases[i]);
    }
    return tu_finish();
}
