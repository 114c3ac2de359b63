/* SPDX-License-Identifier: BSD-3-Clause */
/* Three ranks: rank 0 sends to and receives from ranks 1 and 2, all with the same tag. */
#include <string.h>

#include "testutil.h"

#define TAG 8
#define TOTAL 6144
#define ROUNDS 3

/* Pattern id of the data that rank src sends to rank dst. */
static int stream(int src, int dst) { return 10 * src + dst; }

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 3);
    static unsigned char sbuf[2][TOTAL], rbuf[2][TOTAL];
    MPI_Request req[4];
    int n = 0;
    if (tu_rank == 0) {
        for (int peer = 1; peer <= 2; ++peer) {
            TU_MPI(MPI_Psend_init(sbuf[peer - 1], 6, TOTAL / 6, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req[n++]));
        }
        for (int peer = 1; peer <= 2; ++peer) {
            TU_MPI(MPI_Precv_init(rbuf[peer - 1], 4, TOTAL / 4, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req[n++]));
        }
    } else {
        TU_MPI(MPI_Psend_init(sbuf[0], 3, TOTAL / 3, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req[n++]));
        TU_MPI(MPI_Precv_init(rbuf[0], 8, TOTAL / 8, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req[n++]));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        memset(rbuf, 0, sizeof rbuf);
        TU_MPI(MPI_Startall(n, req));
        if (tu_rank == 0) {
            /* Mark the second peer's partitions first. */
            for (int peer = 2; peer >= 1; --peer) {
                tu_fill(sbuf[peer - 1], TOTAL, 0, stream(0, peer), round);
                tu_pready_all(6, req[peer - 1]);
            }
        } else {
            tu_fill(sbuf[0], TOTAL, 0, stream(tu_rank, 0), round);
            tu_pready_all(3, req[0]);
        }
        TU_MPI(tu_waitall(n, req, MPI_STATUSES_IGNORE, "all transfers"));
        if (tu_rank == 0) {
            tu_verify(rbuf[0], TOTAL, 0, stream(1, 0), round, "data from rank 1");
            tu_verify(rbuf[1], TOTAL, 0, stream(2, 0), round, "data from rank 2");
        } else {
            tu_verify(rbuf[0], TOTAL, 0, stream(0, tu_rank), round, "data from rank 0");
        }
    }
    for (int i = 0; i < n; ++i) {
        TU_MPI(MPI_Request_free(&req[i]));
    }
    return tu_finish();
}
