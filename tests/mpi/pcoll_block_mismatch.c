/* SPDX-License-Identifier: BSD-3-Clause */
/* Block-wise partitioned collectives whose members disagree on a block's size: one rank's
 * receive blocks are larger or smaller than what the others send it, or it sends larger
 * blocks than the others receive. Every rank's wait returns an error (MPI_ERR_TRUNCATE,
 * MPI_ERR_COUNT or MPI_ERR_ARG) within the wait timeout, no hang, and the requests free
 * cleanly; a matching allgather on the same communicator afterwards works. Runs on a
 * duplicate of MPI_COMM_WORLD (and a periodic ring over it) with MPI_ERRORS_RETURN.
 * A case of pcoll_block.c, no arguments (2 ranks or more); mismatch_reuse: see reuse();
 * mismatch_race: see race(). */
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "pcoll_block.h"
#include "testutil.h"

#define P 2
#define C 4

enum What { AG_RECV_LARGER, AG_RECV_SMALLER, GATHER_ROOT_SMALLER, A2A_SEND_LARGER, RING_RECV };

static const char* const g_names[] = {
    "allgather, one rank's receive blocks larger", "allgather, one rank's receive blocks smaller",
    "gather, the root's receive blocks smaller", "alltoall, one rank's send blocks larger",
    "ring neighbour alltoall, one rank's receive blocks larger"};

/* The request of case @p w; returns the partitions this rank marks. */
static int init(enum What w, MPI_Comm comm, MPI_Comm ring, int* send, int* recv, MPI_Request* r)
{
    const int odd = tu_rank == tu_size - 1;
    const int last = tu_size - 1;
    switch (w) {
        case AG_RECV_LARGER:
        case AG_RECV_SMALLER: {
            const int rc = C + (odd ? (w == AG_RECV_LARGER ? 1 : -1) : 0);
            TU_MPI(MPIX_Pallgather_init(send, P, C, MPI_INT, recv, P, rc, MPI_INT, comm,
                                        MPI_INFO_NULL, r));
            return P;
        }
        case GATHER_ROOT_SMALLER:
            TU_MPI(MPIX_Pgather_init(send, P, C, MPI_INT, recv, P, odd ? C - 1 : C, MPI_INT, last,
                                     comm, MPI_INFO_NULL, r));
            return P;
        case A2A_SEND_LARGER:
            TU_MPI(MPIX_Palltoall_init(send, P, odd ? C + 1 : C, MPI_INT, recv, P, C, MPI_INT, comm,
                                       MPI_INFO_NULL, r));
            return tu_size * P;
        case RING_RECV:
            TU_MPI(MPIX_Pneighbor_alltoall_init(send, P, C, MPI_INT, recv, P, odd ? C + 1 : C,
                                                MPI_INT, ring, MPI_INFO_NULL, r));
            return 2 * P;
    }
    return 0;
}

static void one(enum What w, MPI_Comm comm, MPI_Comm ring, int* send, int* recv)
{
    MPI_Request req = MPI_REQUEST_NULL;
    const int nmark = init(w, comm, ring, send, recv, &req);
    /* Receive partitions: P per block, a block per rank (gather: at the root; the others'
     * MPI_Parrived fails at once) or per ring neighbour. */
    const int npoll = (w == RING_RECV ? 2 : tu_size) * P;
    const int cls = pcoll_failed_round(&req, nmark, npoll, g_names[w]);
    TU_CHECK_MSG(cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_COUNT || cls == MPI_ERR_ARG,
                 "%s: the wait returned class %d", g_names[w], cls);
}

/* A matching allgather after the failed ones into @p recv: the communicator still works, and
 * @p recv holds exactly the allgather's data. */
static void afterwards(MPI_Comm comm, int* send, int* recv)
{
    MPI_Request req = MPI_REQUEST_NULL;
    for (int i = 0; i < P * C; ++i) {
        send[i] = tu_rank * 1000 + i;
    }
    memset(recv, 0, sizeof(int) * (size_t)(tu_size * P * C));
    TU_MPI(
        MPIX_Pallgather_init(send, P, C, MPI_INT, recv, P, C, MPI_INT, comm, MPI_INFO_NULL, &req));
    TU_MPI(MPI_Start(&req));
    TU_MPI(MPI_Pready_range(0, P - 1, req));
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "the allgather after the mismatches"));
    for (int i = 0; i < tu_size * P * C; ++i) {
        const int want = (i / (P * C)) * 1000 + i % (P * C);
        if (!TU_CHECK_MSG(recv[i] == want, "element %d: %d, not %d", i, recv[i], want)) {
            break;
        }
    }
    TU_MPI(MPI_Request_free(&req));
}

/* Every case in turn, then a matching allgather into a buffer of its own (that the failed
 * rounds' buffer is left alone is mismatch_reuse's). */
static void all_cases(MPI_Comm comm, MPI_Comm ring, int* send, int* recv, size_t ints)
{
    for (int w = AG_RECV_LARGER; w <= RING_RECV; ++w) {
        tu_watchdog_rearm(TU_WATCHDOG_S);
        one((enum What)w, comm, ring, send, recv);
    }
    int* fresh = calloc(ints, sizeof(int));
    afterwards(comm, send, fresh);
    free(fresh);
}

/* mismatch_reuse: a failed round leaves its receive buffer alone once its wait returned. 10
 * times, the ring neighbour alltoall whose last rank has larger receive blocks fails (the send
 * blocks hold -7), then a matching allgather into the same receive buffer must hold exactly its
 * own data on every rank (where the failed round's data still lands later, rank 0's own block
 * reads -7: the ring data its lower neighbour sent it). */
static void reuse(MPI_Comm comm, MPI_Comm ring, int* send, int* recv, size_t ints)
{
    for (int round = 0; round < 10; ++round) {
        tu_watchdog_rearm(TU_WATCHDOG_S);
        for (size_t i = 0; i < ints; ++i) {
            send[i] = -7;
        }
        one(RING_RECV, comm, ring, send, recv);
        afterwards(comm, send, recv);
    }
}

/* mismatch_race [rounds]: an allgather whose last rank's receive blocks are larger fails,
 * round after round (a barrier between rounds keeps the ranks in step), each partition marked
 * on its own. The other ranks' own block goes to themselves: its internal message matches in
 * the marking thread's send call while the peer's failure makes the progress thread cancel
 * the receive it matches (Open MPI's ob1 corrupts its posted queue if that cancel comes
 * between the match and the mark that it matched: persistent/backend.hpp, self_send_gate). */
static void race(MPI_Comm comm, int rounds)
{
    enum { RP = 8 };
    int send[RP * C];
    int* recv = calloc((size_t)tu_size * RP * (C + 1), sizeof(int));
    const int rc = tu_rank == tu_size - 1 ? C + 1 : C;
    for (int round = 0; round < rounds; ++round) {
        if (round % 200 == 0) {
            tu_watchdog_rearm(TU_WATCHDOG_S);
        }
        MPI_Request req = MPI_REQUEST_NULL;
        TU_MPI(MPIX_Pallgather_init(send, RP, C, MPI_INT, recv, RP, rc, MPI_INT, comm,
                                    MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        for (int p = 0; p < RP; ++p) {
            MPI_Pready(p, req); /* the round may have failed already: allowed all the same */
        }
        const int err = tu_wait(&req, MPI_STATUS_IGNORE, "mismatch_race");
        int cls = MPI_SUCCESS;
        MPI_Error_class(err, &cls);
        TU_CHECK_MSG(cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_COUNT || cls == MPI_ERR_ARG,
                     "mismatch_race round %d: the wait returned class %d", round, cls);
        TU_MPI(MPI_Request_free(&req));
        TU_MPI(MPI_Barrier(comm));
    }
    free(recv);
}

void pcb_mismatch_case(char** args, int n, int level)
{
    (void)level;
    if (tu_size < 2) {
        return;
    }
    MPI_Comm comm, ring;
    pcb_error_comms(&comm, &ring);
    if (strcmp(args[0], "mismatch_race") == 0) {
        race(comm, n > 1 ? atoi(args[1]) : 500);
        pcb_error_comms_free(&comm, &ring);
        return;
    }
    /* Room for the largest blocks of every case. */
    const size_t ints = (size_t)tu_size * P * (C + 1) + 1;
    int* send = calloc(ints, sizeof(int));
    int* recv = calloc(ints, sizeof(int));
    if (strcmp(args[0], "mismatch_reuse") == 0) {
        reuse(comm, ring, send, recv, ints);
    } else {
        all_cases(comm, ring, send, recv, ints);
    }
    free(send);
    free(recv);
    pcb_error_comms_free(&comm, &ring);
}
