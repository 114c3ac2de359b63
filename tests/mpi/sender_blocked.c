/* SPDX-License-Identifier: BSD-3-Clause */
/* The sender marks every partition ready, then blocks in a plain MPI_Recv (a request that is
 * not the library's, so no library code runs in that call) for a token the receiver sends
 * only after its partitioned MPI_Wait returned. The data must therefore move while the sender
 * is blocked: at MPI_THREAD_MULTIPLE the library issues it from the Pready caller
 * (persistent; rma without a progress thread) or from its progress thread (rma leaves its
 * Puts to that thread). 16 partitions of 64 KiB, above every eager limit, 3 rounds, bytes
 * verified. Without the progress thread (MPIPCL_PROGRESS=caller) the handshakes (pairing,
 * the rma receiver's per-round Ready) still need a library call on the sender: it calls
 * MPIX_Pbuf_prepare after MPI_Start there (with the thread it does not). Below
 * MPI_THREAD_MULTIPLE data moves only inside the library's calls (README, "Thread levels"),
 * so the program skips there. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 12
#define PARTS 16
#define PART_BYTES (64 * 1024)
#define ROUNDS 3

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    const size_t total = (size_t)PARTS * PART_BYTES;
    MPI_Comm ctl;
    MPI_Request req;
    unsigned char* buf = tu_pair_setup(PARTS, PART_BYTES, TAG, &ctl, &req);
    const int prepare = tu_progress_thread_off();
    for (int round = 0; round < ROUNDS; ++round) {
        int token = round;
        if (tu_rank == 0) {
            tu_fill(buf, total, 0, 0, round);
            TU_MPI(MPI_Start(&req));
            if (prepare) {
                TU_MPI(MPIX_Pbuf_prepare(req));
            }
            for (int p = 0; p < PARTS; ++p) {
                TU_MPI(MPI_Pready(p, req));
            }
            /* Blocks until the receiver has every byte: nothing of ours runs in here. */
            TU_MPI(MPI_Recv(&token, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE));
            TU_CHECK_MSG(token == round, "round %d: token %d", round, token);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
            continue;
        }
        memset(buf, 0, total);
        TU_MPI(MPI_Start(&req));
        /* Bounded: fails (instead of hanging) when the data waits for the sender's next
         * library call. */
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive while the sender is blocked"));
        tu_verify(buf, total, 0, 0, round, "received data");
        TU_MPI(MPI_Send(&token, 1, MPI_INT, 0, 0, ctl));
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
