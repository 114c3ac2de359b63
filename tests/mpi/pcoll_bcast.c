/* SPDX-License-Identifier: BSD-3-Clause */
/* MPIX_Pbcast_init: one request per root, all started together each round (restarts), mixed
 * in MPI_Waitall with an ordinary ring exchange. The root's partitions are marked by several
 * threads (MPI_Pready, _range, _list in turn); every other rank polls MPI_Parrived and checks
 * each partition element by element, when it is first reported, against MPI_Bcast of the same
 * input, and the whole buffer again after MPI_Waitall.
 * A case of pcoll.c, arguments: <partitions> <ints per partition> <threads at the root>. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "testutil.h"

#define ROUNDS 3

typedef struct {
    int id;
    int nthreads;
    int parts;
    int round;
    MPI_Request req;
} Marker;

static int value(int root, int round, long i)
{
    return (root + 1) * 1000003 + round * 7919 + (int)i;
}

/* Marks partitions id, id + nthreads, ... (single, range or list by round). */
static void* mark(void* arg)
{
    Marker* m = arg;
    int n = 0;
    int* list = malloc(sizeof(int) * (size_t)(m->parts / m->nthreads + 1));
    for (int p = m->id; p < m->parts; p += m->nthreads) {
        list[n++] = p;
    }
    if (m->round % 3 == 1 && m->nthreads == 1) {
        TU_MPI(MPI_Pready_range(0, m->parts - 1, m->req));
    } else if (m->round % 3 == 2) {
        TU_MPI(MPI_Pready_list(n, list, m->req));
    } else {
        for (int i = n - 1; i >= 0; --i) {
            TU_MPI(MPI_Pready(list[i], m->req));
        }
    }
    free(list);
    return NULL;
}

static void mark_all(MPI_Request req, int parts, int nthreads, int round)
{
    pthread_t th[16];
    Marker m[16];
    for (int t = 0; t < nthreads; ++t) {
        m[t] = (Marker){t, nthreads, parts, round, req};
        pthread_create(&th[t], NULL, mark, &m[t]);
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(th[t], NULL);
    }
}

/* What a partition of a bcast must hold once MPI_Parrived reports it. */
struct bcast_check {
    const int* buf;
    const int* ref;
    long count;
    int root;
};

static void check_partition(int p, void* ctx)
{
    const struct bcast_check* c = ctx;
    for (long i = p * c->count; i < (p + 1) * c->count; ++i) {
        if (!TU_CHECK_MSG(c->buf[i] == c->ref[i], "root %d partition %d element %ld: %d, not %d",
                          c->root, p, i, c->buf[i], c->ref[i])) {
            break;
        }
    }
}

void pcoll_bcast_case(int argc, char** argv, int level)
{
    const int parts = tu_arg_int(argc, argv, 1, 8);
    const long count = tu_arg_int(argc, argv, 2, 100);
    int nthreads = tu_arg_int(argc, argv, 3, 1);
    if (level < MPI_THREAD_MULTIPLE || nthreads > 16) {
        nthreads = 1;
    }
    const long total = parts * count;
    const int n = tu_size;
    int** buf = malloc(sizeof(int*) * (size_t)n);
    int** ref = malloc(sizeof(int*) * (size_t)n);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)(n + 2));
    for (int root = 0; root < n; ++root) {
        buf[root] = malloc(sizeof(int) * (size_t)(total + 1));
        ref[root] = malloc(sizeof(int) * (size_t)(total + 1));
        TU_MPI(MPIX_Pbcast_init(buf[root], parts, count, MPI_INT, root, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &reqs[root]));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int root = 0; root < n; ++root) {
            /* The reference: MPI_Bcast of the same input. */
            for (long i = 0; i < total; ++i) {
                ref[root][i] = tu_rank == root ? value(root, round, i) : -1;
                buf[root][i] = tu_rank == root ? ref[root][i] : -2;
            }
            TU_MPI(MPI_Bcast(ref[root], (int)total, MPI_INT, root, MPI_COMM_WORLD));
        }
        int ring_out = tu_rank * 100 + round;
        int ring_in = -1;
        TU_MPI(MPI_Irecv(&ring_in, 1, MPI_INT, (tu_rank + n - 1) % n, 5, MPI_COMM_WORLD, &reqs[n]));
        TU_MPI(
            MPI_Isend(&ring_out, 1, MPI_INT, (tu_rank + 1) % n, 5, MPI_COMM_WORLD, &reqs[n + 1]));
        TU_MPI(MPI_Startall(n, reqs));
        mark_all(reqs[tu_rank], parts, nthreads, round);
        for (int root = 0; root < n; ++root) {
            if (root != tu_rank) {
                struct bcast_check c = {buf[root], ref[root], count, root};
                pcoll_poll_arrivals(reqs[root], parts, check_partition, &c,
                                    "MPI_Parrived of every bcast partition");
            }
        }
        TU_MPI(tu_waitall(n + 2, reqs, MPI_STATUSES_IGNORE, "bcast round"));
        TU_CHECK(ring_in == ((tu_rank + n - 1) % n) * 100 + round);
        for (int root = 0; root < n; ++root) {
            for (long i = 0; i < total; ++i) {
                if (!TU_CHECK_MSG(buf[root][i] == ref[root][i],
                                  "round %d root %d element %ld after the wait: %d, not %d", round,
                                  root, i, buf[root][i], ref[root][i])) {
                    break;
                }
            }
        }
    }
    for (int root = 0; root < n; ++root) {
        TU_MPI(MPI_Request_free(&reqs[root]));
        TU_CHECK(reqs[root] == MPI_REQUEST_NULL);
        free(buf[root]);
        free(ref[root]);
    }
    free(buf);
    free(ref);
    free(reqs);
}
