/* SPDX-License-Identifier: BSD-3-Clause */
/* Members of a partitioned collective that disagree: one rank passes another count, op, root
 * or number of partitions than the others. Every rank's wait returns an error of the class the
 * difference calls for, within the wait timeout (no hang), and the requests free cleanly (no
 * internal receive is left writing into freed memory); a matching collective on the same
 * communicator afterwards works. Runs on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN.
 * A case of pcoll.c, no arguments (2 ranks or more). */
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "testutil.h"

#define PARTS 4
#define COUNT 64

enum What { COUNT_DIFFERS, OP_DIFFERS, REDUCE_ROOT_DIFFERS, BCAST_ROOT_DIFFERS, PARTS_DIFFER };

static const char* const g_names[] = {"count", "op", "reduce root", "bcast root", "partitions"};

/* The rank that disagrees: the last one (rank 1 at 2 ranks, an interior or leaf rank else). */
static int odd_rank(void) { return tu_size - 1; }

static void init(enum What w, MPI_Comm comm, int* send, int* recv, MPI_Request* req, int* contrib)
{
    const int odd = tu_rank == odd_rank();
    const int last = tu_size - 1;
    *contrib = 1;
    switch (w) {
        case COUNT_DIFFERS:
            TU_MPI(MPIX_Pallreduce_init(send, recv, PARTS, COUNT + odd, MPI_INT, MPI_SUM, comm,
                                        MPI_INFO_NULL, req));
            break;
        case OP_DIFFERS:
            TU_MPI(MPIX_Pallreduce_init(send, recv, PARTS, COUNT, MPI_INT, odd ? MPI_MAX : MPI_SUM,
                                        comm, MPI_INFO_NULL, req));
            break;
        case REDUCE_ROOT_DIFFERS:
            TU_MPI(MPIX_Preduce_init(send, recv, PARTS, COUNT, MPI_INT, MPI_SUM, odd ? 0 : last,
                                     comm, MPI_INFO_NULL, req));
            break;
        case BCAST_ROOT_DIFFERS: {
            const int root = tu_rank == 0 ? 0 : last;
            *contrib = tu_rank == root;
            TU_MPI(MPIX_Pbcast_init(recv, PARTS, COUNT, MPI_INT, root, comm, MPI_INFO_NULL, req));
            break;
        }
        case PARTS_DIFFER:
            *contrib = tu_rank == 0;
            TU_MPI(MPIX_Pbcast_init(recv, odd ? PARTS * 2 : PARTS, odd ? COUNT / 2 : COUNT, MPI_INT,
                                    0, comm, MPI_INFO_NULL, req));
            break;
    }
}

static int expected(enum What w, int cls)
{
    switch (w) {
        case COUNT_DIFFERS:
            return cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_COUNT;
        case OP_DIFFERS:
            return cls == MPI_ERR_OP;
        case REDUCE_ROOT_DIFFERS:
        case BCAST_ROOT_DIFFERS:
            return cls == MPI_ERR_ROOT;
        case PARTS_DIFFER:
            return cls == MPI_ERR_ARG;
    }
    return 0;
}

static void one(enum What w, MPI_Comm comm, int* send, int* recv)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int contrib = 0;
    init(w, comm, send, recv, &req, &contrib);
    const int cls = pcoll_failed_round(&req, contrib ? PARTS : 0, PARTS, g_names[w]);
    TU_CHECK_MSG(expected(w, cls), "%s differs: the wait returned class %d", g_names[w], cls);
}

/* A matching allreduce after the failed ones: the communicator still works. */
static void afterwards(MPI_Comm comm, int* send, int* recv)
{
    MPI_Request req = MPI_REQUEST_NULL;
    for (int i = 0; i < PARTS * COUNT; ++i) {
        send[i] = tu_rank + i;
        recv[i] = -1;
    }
    TU_MPI(MPIX_Pallreduce_init(send, recv, PARTS, COUNT, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                                &req));
    TU_MPI(MPI_Start(&req));
    TU_MPI(MPI_Pready_range(0, PARTS - 1, req));
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "the allreduce after the mismatches"));
    const int ranks = tu_size * (tu_size - 1) / 2;
    for (int i = 0; i < PARTS * COUNT; ++i) {
        if (!TU_CHECK_MSG(recv[i] == ranks + tu_size * i, "element %d: %d", i, recv[i])) {
            break;
        }
    }
    TU_MPI(MPI_Request_free(&req));
}

void pcoll_mismatch_case(int argc, char** argv, int level)
{
    (void)argc;
    (void)argv;
    (void)level;
    if (tu_size < 2) {
        return;
    }
    MPI_Comm comm;
    TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    TU_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    int* send = calloc(PARTS * (COUNT + 1), sizeof(int));
    int* recv = calloc(PARTS * (COUNT + 1), sizeof(int));
    for (int w = COUNT_DIFFERS; w <= PARTS_DIFFER; ++w) {
        tu_watchdog_rearm(TU_WATCHDOG_S);
        one((enum What)w, comm, send, recv);
    }
    afterwards(comm, send, recv);
    free(send);
    free(recv);
    TU_MPI(MPI_Comm_free(&comm));
}
