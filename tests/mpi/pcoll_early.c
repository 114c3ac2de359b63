/* SPDX-License-Identifier: BSD-3-Clause */
/* Pipelining: MPI_Parrived reports partition 0 of the result before the last contributor's
 * last MPI_Pready. Rank 0 marks every partition but the last, then waits (driving progress
 * with MPI_Test on its request) until every receiving rank reported, by an ordinary message,
 * that it saw partition 0 arrive with the right data; only then does it mark the last one. A
 * receiver that never sees it fails the test after TU_WAIT_TIMEOUT_S instead of hanging (and
 * reports anyway, so rank 0 goes on).
 * A case of pcoll.c, arguments: bcast|reduce|allreduce <partitions> <ints per partition>. */
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "testutil.h"

#define SIGNAL_TAG 77

static int receives(const char* mode, int rank, int root)
{
    if (strcmp(mode, "bcast") == 0) {
        return rank != root;
    }
    return strcmp(mode, "allreduce") == 0 || rank == root;
}

/* A receiver: waits (bounded) for partition 0, checks it, tells rank 0. */
static void see_first(MPI_Request req, const int* buf, const int* ref, long count)
{
    const double deadline = MPI_Wtime() + TU_WAIT_TIMEOUT_S;
    int flag = 0;
    while (!flag && MPI_Wtime() < deadline) {
        TU_MPI(MPI_Parrived(req, 0, &flag));
    }
    if (TU_CHECK_MSG(flag, "partition 0 did not arrive before the last MPI_Pready")) {
        for (long i = 0; i < count; ++i) {
            if (!TU_CHECK_MSG(buf[i] == ref[i], "element %ld: %d, not %d", i, buf[i], ref[i])) {
                break;
            }
        }
    }
    if (tu_rank != 0) {
        TU_MPI(MPI_Send(&flag, 1, MPI_INT, 0, SIGNAL_TAG, MPI_COMM_WORLD));
    }
}

/* Rank 0: waits (bounded, driving progress) for every other receiver's report. */
static void await_reports(MPI_Request req, const char* mode, int root)
{
    int n = 0;
    MPI_Request* sig = malloc(sizeof(MPI_Request) * (size_t)tu_size);
    /* Statuses, not MPI_STATUSES_IGNORE: gcc reads MPICH's access attribute as a zero-size
     * region for that (-Wstringop-overflow). */
    MPI_Status* st = malloc(sizeof(MPI_Status) * (size_t)tu_size);
    int* got = malloc(sizeof(int) * (size_t)tu_size);
    for (int r = 1; r < tu_size; ++r) {
        if (receives(mode, r, root)) {
            TU_MPI(MPI_Irecv(&got[n], 1, MPI_INT, r, SIGNAL_TAG, MPI_COMM_WORLD, &sig[n]));
            ++n;
        }
    }
    const double deadline = MPI_Wtime() + 2 * TU_WAIT_TIMEOUT_S;
    int all = 0;
    while (!all) {
        int flag = 0;
        TU_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        TU_CHECK_MSG(!flag, "the round completed before its last partition was marked");
        TU_MPI(MPI_Testall(n, sig, &all, st));
        if (MPI_Wtime() > deadline) {
            TU_ABORT("no report from the receivers");
        }
    }
    free(sig);
    free(st);
    free(got);
}

void pcoll_early_case(int argc, char** argv, int level)
{
    (void)level;
    const char* mode = argc > 1 ? argv[1] : "allreduce";
    const int parts = tu_arg_int(argc, argv, 2, 4);
    const long count = tu_arg_int(argc, argv, 3, 1000);
    const long total = parts * count;
    const int root = strcmp(mode, "reduce") == 0 ? tu_size - 1 : 0;
    int* send = malloc(sizeof(int) * (size_t)total);
    int* buf = malloc(sizeof(int) * (size_t)total);
    int* ref = malloc(sizeof(int) * (size_t)total);
    for (long i = 0; i < total; ++i) {
        send[i] = tu_rank * 1000 + (int)i;
        buf[i] = strcmp(mode, "bcast") == 0 && tu_rank == root ? send[i] : -1;
    }
    MPI_Request req;
    if (strcmp(mode, "bcast") == 0) {
        memcpy(ref, send, sizeof(int) * (size_t)total);
        TU_MPI(MPI_Bcast(ref, (int)total, MPI_INT, root, MPI_COMM_WORLD));
        TU_MPI(MPIX_Pbcast_init(buf, parts, count, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &req));
    } else if (strcmp(mode, "reduce") == 0) {
        TU_MPI(MPI_Reduce(send, ref, (int)total, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        TU_MPI(MPIX_Preduce_init(send, buf, parts, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Allreduce(send, ref, (int)total, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        TU_MPI(MPIX_Pallreduce_init(send, buf, parts, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                    MPI_INFO_NULL, &req));
    }
    TU_MPI(MPI_Start(&req));
    const int contributes = strcmp(mode, "bcast") != 0 || tu_rank == root;
    if (contributes) {
        TU_MPI(MPI_Pready_range(0, parts - 2, req));
    }
    if (tu_rank != 0) {
        if (contributes) {
            TU_MPI(MPI_Pready(parts - 1, req));
        }
        if (receives(mode, tu_rank, root)) {
            see_first(req, buf, ref, count);
        }
    } else {
        if (receives(mode, 0, root)) {
            see_first(req, buf, ref, count);
        }
        await_reports(req, mode, root);
        TU_MPI(MPI_Pready(parts - 1, req)); /* the last contributor's last partition */
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "the collective"));
    if (receives(mode, tu_rank, root)) {
        for (long i = 0; i < total; ++i) {
            if (!TU_CHECK_MSG(buf[i] == ref[i], "element %ld after the wait", i)) {
                break;
            }
        }
    }
    TU_MPI(MPI_Request_free(&req));
    free(send);
    free(buf);
    free(ref);
}
