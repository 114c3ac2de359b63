/* SPDX-License-Identifier: BSD-3-Clause */
/* Repeated Start/Wait rounds with new data; a restarted request must not look complete early. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SPARTS 8
#define RPARTS 4
#define TOTAL (64 * 1024)
#define ROUNDS 6
#define POLLS 200
#define TAG 3

/* Receiver side of a restarted round: nothing may look complete before the sender's Pready. */
static void check_not_complete_yet(MPI_Request req, int round)
{
    for (int i = 0; i < POLLS; ++i) {
        int flag = 1;
        TU_MPI(MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE));
        TU_CHECK_MSG(!flag, "round %d: Request_get_status reports completion before Pready", round);
        for (int p = 0; p < RPARTS; ++p) {
            flag = 1;
            TU_MPI(MPI_Parrived(req, p, &flag));
            TU_CHECK_MSG(!flag, "round %d: partition %d arrived before Pready", round, p);
        }
        flag = 1;
        TU_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        if (!TU_CHECK_MSG(!flag, "round %d: MPI_Test completed before Pready", round)) {
            return;
        }
        tu_sleep_us(500);
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    unsigned char* buf = malloc(TOTAL);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, SPARTS, TOTAL / SPARTS, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        int go = 0;
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req));
            int flag = 1;
            TU_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            TU_CHECK_MSG(!flag, "round %d: send completed before any Pready", round);
            if (round > 0) {
                MPI_Recv(&go, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
            }
            tu_fill(buf, TOTAL, 0, 0, round);
            tu_pready_all(SPARTS, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
        } else {
            memset(buf, 0, TOTAL);
            TU_MPI(MPI_Start(&req));
            if (round > 0) {
                check_not_complete_yet(req, round);
                MPI_Send(&go, 1, MPI_INT, 0, 0, ctl);
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
            tu_verify(buf, TOTAL, 0, 0, round, "received data");
        }
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
