/* SPDX-License-Identifier: BSD-3-Clause */
/* Derived datatypes (vector, indexed, struct, resized, and types of an F90 real) and different
 * datatypes on the two sides with equal type signatures; holes in the receive datatype stay
 * untouched. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 6
#define ROUNDS 2
#define SENTINEL 0xEE

typedef struct {
    const char* name;
    MPI_Datatype stype;
    int sparts;
    int scount;
    MPI_Datatype rtype;
    int rparts;
    int rcount;
} Case;

typedef struct {
    int i;
    double d;
    char c[3];
} Record;

static void run_case(const Case* c)
{
    size_t sbytes = tu_type_span(c->stype, c->sparts * c->scount);
    size_t rbytes = tu_type_span(c->rtype, c->rparts * c->rcount);
    unsigned char* sbuf = malloc(sbytes);
    unsigned char* rbuf = malloc(rbytes);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(sbuf, c->sparts, c->scount, c->stype, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(rbuf, c->rparts, c->rcount, c->rtype, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        tu_fill(sbuf, sbytes, 0, 0, round);
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req));
            tu_pready_all(c->sparts, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, c->name));
            continue;
        }
        memset(rbuf, SENTINEL, rbytes);
        TU_MPI(MPI_Start(&req));
        MPI_Status st;
        TU_MPI(tu_wait(&req, &st, c->name));
        int count = -1;
        MPI_Get_count(&st, c->rtype, &count);
        TU_CHECK_MSG(count == c->rparts * c->rcount, "%s: MPI_Get_count = %d, expected %d", c->name,
                     count, c->rparts * c->rcount);
        unsigned char* expect = tu_expected_recv(sbuf, c->sparts * c->scount, c->stype,
                                                 c->rparts * c->rcount, c->rtype, rbytes, SENTINEL);
        char what[96];
        snprintf(what, sizeof what, "%s round %d", c->name, round);
        tu_verify_expected(rbuf, expect, rbytes, SENTINEL, what);
        free(expect);
    }
    TU_MPI(MPI_Request_free(&req));
    free(sbuf);
    free(rbuf);
}

static MPI_Datatype commit(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

/* The op check of a reduction's init walks @p type down to its named types (a contiguous run of
 * an F90 real holds none) and must not free the F90 real it is handed. Open MPI and MPICH both
 * refuse MPI_SUM on a derived type of an F90 real when they reduce, so the request is only
 * initialised and freed; the init may accept it or refuse it with MPI_ERR_OP. */
static void f90_reduction_init(MPI_Datatype type)
{
    enum { PARTS = 4, N = 2 * PARTS };
    float send[N] = {0}, recv[N];
    MPI_Comm comm;
    TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    TU_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc =
        MPIX_Pallreduce_init(send, recv, PARTS, 1, type, MPI_SUM, comm, MPI_INFO_NULL, &req);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    TU_CHECK_MSG(cls == MPI_SUCCESS || cls == MPI_ERR_OP, "f90 allreduce init: class %d", cls);
    if (rc == MPI_SUCCESS) {
        TU_MPI(MPI_Request_free(&req));
    }
    TU_MPI(MPI_Comm_free(&comm));
}

/* Types built from an MPI_Type_create_f90_real type: predefined without being named, so MPI
 * forbids freeing it, also as a handle MPI_Type_get_contents returns (Open MPI refuses, and
 * the default error handler aborts). The library reads these types (RMA flattening, the op
 * check of a reduction) and must leave that handle alone. */
static void f90_cases(void)
{
    MPI_Datatype real, rvec, rcontig;
    int size = 0;
    if (MPI_Type_create_f90_real(6, MPI_UNDEFINED, &real) != MPI_SUCCESS ||
        MPI_Type_size(real, &size) != MPI_SUCCESS || size != (int)sizeof(float)) {
        return; /* no 4-byte F90 real in this MPI: nothing to check */
    }
    MPI_Type_vector(4, 2, 3, real, &rvec); /* 8 reals in 11 */
    MPI_Type_contiguous(2, real, &rcontig);
    const Case c = {"f90 vector/contiguous", commit(rvec), 2, 2, commit(rcontig), 4, 4};
    run_case(&c);
    f90_reduction_init(rcontig);
    MPI_Type_free(&rvec);
    MPI_Type_free(&rcontig);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Datatype vec_s, vec_r, indexed, record, record_raw, int_gap, dcontig, dvec;
    MPI_Type_vector(4, 2, 3, MPI_INT, &vec_s); /* 8 ints in 11, holes of 1 */
    MPI_Type_vector(2, 4, 6, MPI_INT, &vec_r); /* 8 ints in 10, holes of 2 */
    int blocklens[3] = {1, 3, 2};
    int displs[3] = {5, 0, 9}; /* not monotone */
    MPI_Type_indexed(3, blocklens, displs, MPI_INT, &indexed);
    int rlens[3] = {1, 1, 3};
    MPI_Aint rdispls[3] = {offsetof(Record, i), offsetof(Record, d), offsetof(Record, c)};
    MPI_Datatype rtypes[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, rlens, rdispls, rtypes, &record_raw);
    MPI_Type_create_resized(record_raw, 0, sizeof(Record), &record); /* padding = holes */
    MPI_Type_create_resized(MPI_INT, 0, 12, &int_gap);               /* 8-byte hole per int */
    MPI_Type_contiguous(3, MPI_DOUBLE, &dcontig);
    MPI_Type_vector(5, 2, 3, MPI_DOUBLE, &dvec);
    const Case cases[] = {
        {"vector/vector", commit(vec_s), 4, 3, commit(vec_r), 6, 2},
        {"indexed/int", commit(indexed), 3, 4, MPI_INT, 8, 9},
        {"struct/struct", commit(record), 5, 4, record, 2, 10},
        {"int/resized", MPI_INT, 2, 30, commit(int_gap), 3, 20},
        {"contiguous/vector", commit(dcontig), 4, 5, commit(dvec), 2, 3},
        {"resized/indexed", int_gap, 6, 12, indexed, 12, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        run_case(&cases[i]);
    }
    MPI_Datatype all[] = {vec_s, vec_r, indexed, record, record_raw, int_gap, dcontig, dvec};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        MPI_Type_free(&all[i]);
    }
    f90_cases();
    return tu_finish();
}
