/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank: partitioned send and receive to itself on MPI_COMM_SELF, in several start orders. */
#include <string.h>

#include "testutil.h"

#define TAG 13
#define SPARTS 6
#define RPARTS 4
#define TOTAL (SPARTS * RPARTS * 100)

enum { STARTALL, RECV_FIRST, SEND_READY_FIRST, NUM_ROUNDS };

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 1);
    static unsigned char sbuf[TOTAL], rbuf[TOTAL];
    MPI_Request req[2];
    TU_MPI(MPI_Psend_init(sbuf, SPARTS, TOTAL / SPARTS, MPI_BYTE, 0, TAG, MPI_COMM_SELF,
                          MPI_INFO_NULL, &req[0]));
    TU_MPI(MPI_Precv_init(rbuf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_SELF,
                          MPI_INFO_NULL, &req[1]));
    for (int round = 0; round < NUM_ROUNDS; ++round) {
        memset(rbuf, 0, TOTAL);
        tu_fill(sbuf, TOTAL, 0, 0, round);
        switch (round) {
            case STARTALL:
                TU_MPI(MPI_Startall(2, req));
                tu_pready_all(SPARTS, req[0]);
                break;
            case RECV_FIRST:
                TU_MPI(MPI_Start(&req[1]));
                TU_MPI(MPI_Start(&req[0]));
                TU_MPI(MPI_Pready_range(0, SPARTS - 1, req[0]));
                break;
            default: /* all partitions ready before the receive is even started */
                TU_MPI(MPI_Start(&req[0]));
                tu_pready_all(SPARTS, req[0]);
                TU_MPI(MPI_Start(&req[1]));
                break;
        }
        MPI_Status st[2];
        TU_MPI(tu_waitall(2, req, st, "self transfer"));
        tu_verify(rbuf, TOTAL, 0, 0, round, "self-received data");
        int count = -1;
        MPI_Get_count(&st[1], MPI_BYTE, &count);
        TU_CHECK(st[1].MPI_SOURCE == 0 && st[1].MPI_TAG == TAG && count == TOTAL);
    }
    TU_MPI(MPI_Request_free(&req[0]));
    TU_MPI(MPI_Request_free(&req[1]));
    return tu_finish();
}
