/* SPDX-License-Identifier: BSD-3-Clause */
/* Downstream program built against the installed library and headers (find_package or
 * pkg-config): 2 ranks, 3 rounds of a partitioned transfer, every element verified. */
#include <mpipcl.h>

#include "two_ranks.h"

#define PARTS 4
#define COUNT 1000
#define ROUNDS 3

int main(int argc, char** argv)
{
    static int buf[PARTS * COUNT];
    int interposed = 0;
    int errs = 0;
    MPI_Request req;
    const int rank = two_ranks_init(&argc, &argv, "consumer");
    MPIX_Pcl_interposed(&interposed);
    errs += !interposed;
    if (rank == 0) {
        MPI_Psend_init(buf, PARTS, COUNT, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    } else {
        /* Any number of receive partitions with the same total. */
        MPI_Precv_init(buf, PARTS / 2, 2 * COUNT, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &req);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 0; i < PARTS * COUNT; ++i) {
            buf[i] = rank == 0 ? round * 100003 + i : -1;
        }
        MPI_Start(&req);
        if (rank == 0) {
            MPI_Pready_range(0, PARTS - 1, req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; rank == 1 && i < PARTS * COUNT; ++i) {
            errs += buf[i] != round * 100003 + i;
        }
    }
    MPI_Request_free(&req);
    return two_ranks_finish(rank, errs, "consumer (mpipcl " MPIPCL_VERSION ")");
}
