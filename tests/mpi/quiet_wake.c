/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress thread's quiet nap ends when new work comes. Rank 0 keeps a partitioned send
 * to rank 1 running (both sides started, so it is paired) with every partition but the last
 * ready: on Open MPI that send needs nothing more from rank 0 until the last Pready
 * (docs/design.md, Threads), so rank 0's progress thread naps MPIPCL_PROGRESS_QUIET_US, which
 * the test sets to its maximum, 1 s.
 * Each of ROUNDS rounds, rank 0 lets the nap begin, initializes a fresh partitioned receive
 * from rank 1 and starts it, then tells rank 1 to create its matching send and blocks in a
 * plain MPI_Recv (no library code runs in there) for a token that rank 1 sends only after
 * that send completed. The send pairs only once rank 0's progress thread has answered its
 * Setup, so a nap that the new request did not end would cost up to 1 s per round: the
 * test's CTest timeout (half of ROUNDS seconds) fails it then. Bytes verified. Elsewhere (MPICH,
 * the rma backend) the thread never naps so, and the program checks the same data path. Below
 * MPI_THREAD_MULTIPLE it skips. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define LONG_TAG 21
#define ROUND_TAG 22
#define PARTS 4
#define PART_BYTES (64 * 1024)
#define ROUNDS 30
#define NAP_START_US 5000

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    const size_t total = (size_t)PARTS * PART_BYTES;
    unsigned char* held = malloc(total);
    unsigned char* buf = malloc(total);
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Request held_req;
    if (tu_rank == 0) {
        tu_fill(held, total, 0, 0, 0);
        TU_MPI(MPI_Psend_init(held, PARTS, PART_BYTES, MPI_BYTE, 1, LONG_TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &held_req));
        TU_MPI(MPI_Start(&held_req));
        TU_MPI(MPI_Pready_range(0, PARTS - 2, held_req));
    } else {
        memset(held, 0, total);
        TU_MPI(MPI_Precv_init(held, PARTS, PART_BYTES, MPI_BYTE, 0, LONG_TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &held_req));
        TU_MPI(MPI_Start(&held_req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        MPI_Request req;
        int token = round;
        if (tu_rank == 0) {
            usleep(NAP_START_US); /* the progress thread finds only the held send: it naps */
            memset(buf, 0, total);
            TU_MPI(MPI_Precv_init(buf, PARTS, PART_BYTES, MPI_BYTE, 1, ROUND_TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req));
            TU_MPI(MPI_Start(&req));
            /* Rank 1 creates its send only now, and this rank then blocks until that send
             * completed: only the progress thread can pair it meanwhile. */
            TU_MPI(MPI_Send(&token, 1, MPI_INT, 1, 0, ctl));
            TU_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE));
            TU_CHECK_MSG(token == round, "round %d: token %d", round, token);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "round receive"));
            tu_verify(buf, total, 0, 1, round, "round data");
        } else {
            tu_fill(buf, total, 0, 1, round);
            TU_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 0, ctl, MPI_STATUS_IGNORE));
            TU_CHECK_MSG(token == round, "round %d: go %d", round, token);
            TU_MPI(MPI_Psend_init(buf, PARTS, PART_BYTES, MPI_BYTE, 0, ROUND_TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req));
            TU_MPI(MPI_Start(&req));
            TU_MPI(MPI_Pready_range(0, PARTS - 1, req));
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "round send"));
            TU_MPI(MPI_Send(&token, 1, MPI_INT, 0, 0, ctl));
        }
        TU_MPI(MPI_Request_free(&req));
    }
    if (tu_rank == 0) {
        TU_MPI(MPI_Pready(PARTS - 1, held_req));
    }
    TU_MPI(tu_wait(&held_req, MPI_STATUS_IGNORE, "held transfer"));
    if (tu_rank == 1) {
        tu_verify(held, total, 0, 0, 0, "held data");
    }
    TU_MPI(MPI_Request_free(&held_req));
    MPI_Comm_free(&ctl);
    free(buf);
    free(held);
    return tu_finish();
}
