/* SPDX-License-Identifier: BSD-3-Clause */
/* MPIX_Preduce_init (one request per root, all started together) and MPIX_Pallreduce_init:
 * MPI_SUM on int and double, MPI_MAX, a non-commutative user op (composition of affine maps
 * x -> a*x + b on pairs of unsigned ints), with and without MPI_IN_PLACE, several rounds
 * (restarts), partitions marked by several threads. Every partition is checked element by
 * element against MPI_Reduce / MPI_Allreduce of the same input when MPI_Parrived first reports
 * it, and the whole result again after MPI_Waitall.
 * A case of pcoll.c, arguments: reduce|allreduce <partitions> <elements per partition> <threads>.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "testutil.h"

#define ROUNDS 3

enum { SUM_INT, SUM_DOUBLE, MAX_INT, AFFINE, NCASES };

static MPI_Datatype g_pair;
static MPI_Op g_compose;

/* inout = in ∘ inout: apply in's map first, then inout's. */
static void compose(void* in, void* inout, int* len, MPI_Datatype* type)
{
    (void)type;
    const unsigned* a = in;
    unsigned* b = inout;
    for (int i = 0; i < *len; ++i) {
        const unsigned a1 = a[2 * i], b1 = a[2 * i + 1];
        const unsigned a2 = b[2 * i], b2 = b[2 * i + 1];
        b[2 * i] = a2 * a1;
        b[2 * i + 1] = a2 * b1 + b2;
    }
}

static MPI_Datatype type_of(int c)
{
    return c == SUM_DOUBLE ? MPI_DOUBLE : c == AFFINE ? g_pair : MPI_INT;
}
static MPI_Op op_of(int c) { return c == MAX_INT ? MPI_MAX : c == AFFINE ? g_compose : MPI_SUM; }
static size_t elem_of(int c) { return c == SUM_DOUBLE ? sizeof(double) : c == AFFINE ? 8 : 4; }

/* This rank's input for (case, round): small integers, so sums of doubles are exact. */
static void fill(void* buf, int c, int round, long n)
{
    for (long i = 0; i < n; ++i) {
        const int v = (int)((tu_rank * 131 + round * 17 + i * 7) % 1001) - 500;
        if (c == SUM_DOUBLE) {
            ((double*)buf)[i] = v;
        } else if (c == AFFINE) {
            ((unsigned*)buf)[2 * i] = 2u * (unsigned)(v + 500) + 1u;
            ((unsigned*)buf)[2 * i + 1] = (unsigned)(tu_rank + 3 * round + (int)i);
        } else {
            ((int*)buf)[i] = v;
        }
    }
}

typedef struct {
    int id, nthreads, parts;
    MPI_Request* reqs;
    int nreqs;
} Marker;

static void* mark(void* arg)
{
    Marker* m = arg;
    for (int p = m->parts - 1 - m->id; p >= 0; p -= m->nthreads) {
        for (int r = 0; r < m->nreqs; ++r) {
            TU_MPI(MPI_Pready(p, m->reqs[r]));
        }
    }
    return NULL;
}

static void mark_all(MPI_Request* reqs, int nreqs, int parts, int nthreads)
{
    pthread_t th[16];
    Marker m[16];
    for (int t = 0; t < nthreads; ++t) {
        m[t] = (Marker){t, nthreads, parts, reqs, nreqs};
        pthread_create(&th[t], NULL, mark, &m[t]);
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(th[t], NULL);
    }
}

static int same(const char* got, const char* want, size_t elem, long from, long to,
                const char* what, int c, int round)
{
    for (long i = from; i < to; ++i) {
        if (memcmp(got + i * elem, want + i * elem, elem) != 0) {
            return TU_CHECK_MSG(0, "%s: case %d round %d element %ld differs from MPI's", what, c,
                                round, i);
        }
    }
    return 1;
}

/* What a partition of a reduction's result must hold once MPI_Parrived reports it. */
struct result_check {
    const char* got;
    const char* want;
    size_t elem;
    long count;
    int c;
    int round;
};

static void check_partition(int p, void* ctx)
{
    const struct result_check* k = ctx;
    same(k->got, k->want, k->elem, p * k->count, (p + 1) * k->count, "at MPI_Parrived", k->c,
         k->round);
}

/* One case: n requests (reduce: one per root) or one (allreduce), ROUNDS rounds. */
static void run(int allreduce, int c, int in_place, int parts, long count, int nthreads)
{
    const int n = allreduce ? 1 : tu_size;
    const long total = parts * count;
    const size_t elem = elem_of(c);
    const size_t bytes = (size_t)total * elem + 1;
    char* send = malloc(bytes);
    char** recv = malloc(sizeof(char*) * (size_t)n);
    char** ref = malloc(sizeof(char*) * (size_t)n);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    for (int r = 0; r < n; ++r) {
        recv[r] = malloc(bytes);
        ref[r] = malloc(bytes);
        /* MPI_IN_PLACE: at every rank (allreduce) or at the root (reduce). */
        const int ip = in_place && (allreduce || tu_rank == r);
        const void* sb = ip ? MPI_IN_PLACE : send;
        if (allreduce) {
            TU_MPI(MPIX_Pallreduce_init(sb, recv[r], parts, count, type_of(c), op_of(c),
                                        MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[r]));
        } else {
            TU_MPI(MPIX_Preduce_init(sb, recv[r], parts, count, type_of(c), op_of(c), r,
                                     MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[r]));
        }
    }
    for (int round = 0; round < ROUNDS; ++round) {
        fill(send, c, round, total);
        for (int r = 0; r < n; ++r) {
            const int ip = in_place && (allreduce || tu_rank == r);
            memset(recv[r], 0x5a, bytes);
            if (ip) {
                memcpy(recv[r], send, (size_t)total * elem);
            }
            if (allreduce) {
                TU_MPI(
                    MPI_Allreduce(send, ref[r], (int)total, type_of(c), op_of(c), MPI_COMM_WORLD));
            } else {
                TU_MPI(
                    MPI_Reduce(send, ref[r], (int)total, type_of(c), op_of(c), r, MPI_COMM_WORLD));
            }
        }
        TU_MPI(MPI_Startall(n, reqs));
        mark_all(reqs, n, parts, nthreads);
        for (int r = 0; r < n; ++r) {
            if (allreduce || tu_rank == r) {
                struct result_check k = {recv[r], ref[r], elem, count, c, round};
                pcoll_poll_arrivals(reqs[r], parts, check_partition, &k,
                                    "MPI_Parrived of every result partition");
            }
        }
        TU_MPI(tu_waitall(n, reqs, MPI_STATUSES_IGNORE, "reduction round"));
        for (int r = 0; r < n; ++r) {
            if (allreduce || tu_rank == r) {
                same(recv[r], ref[r], elem, 0, total, "after the wait", c, round);
            }
        }
    }
    for (int r = 0; r < n; ++r) {
        TU_MPI(MPI_Request_free(&reqs[r]));
        free(recv[r]);
        free(ref[r]);
    }
    free(send);
    free(recv);
    free(ref);
    free(reqs);
}

void pcoll_reduce_case(int argc, char** argv, int level)
{
    const int allreduce = argc > 1 && strcmp(argv[1], "allreduce") == 0;
    const int parts = tu_arg_int(argc, argv, 2, 8);
    const long count = tu_arg_int(argc, argv, 3, 100);
    int nthreads = tu_arg_int(argc, argv, 4, 1);
    if (level < MPI_THREAD_MULTIPLE || nthreads > 16) {
        nthreads = 1;
    }
    MPI_Type_contiguous(2, MPI_UNSIGNED, &g_pair);
    MPI_Type_commit(&g_pair);
    MPI_Op_create(compose, 0, &g_compose);
    for (int c = 0; c < NCASES; ++c) {
        for (int in_place = 0; in_place < 2; ++in_place) {
            run(allreduce, c, in_place, parts, count, nthreads);
        }
    }
    MPI_Op_free(&g_compose);
    MPI_Type_free(&g_pair);
}
