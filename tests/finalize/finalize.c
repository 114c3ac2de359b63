/* SPDX-License-Identifier: BSD-3-Clause */
/* Two ranks create a partitioned pair, run 10 rounds ("rounds") or none ("idle"), free it and
 * finalize; run_finalize.cmake launches it repeatedly and fails on any warning on stderr. */
#include <mpipcl.h>
#include <stdio.h>
#include <string.h>

#define TAG 3
#ifndef PARTS
#define PARTS 8
#endif
#ifndef TOTAL
#define TOTAL (PARTS * 8192)
#endif
#define ROUNDS 10

int main(int argc, char** argv)
{
    int provided = 0;
    int rank = 0;
    int size = 0;
    int errors = 0;
    const int rounds = argc > 1 && strcmp(argv[1], "idle") == 0 ? 0 : ROUNDS;
    static unsigned char buf[TOTAL];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            fprintf(stderr, "finalize: needs 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = rank == 0 ? MPI_Psend_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                                        MPI_INFO_NULL, &req)
                       : MPI_Precv_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                                        MPI_INFO_NULL, &req);
    errors += rc != MPI_SUCCESS;
    for (int round = 0; round < rounds && !errors; ++round) {
        for (int i = 0; i < TOTAL; ++i) {
            buf[i] = rank == 0 ? (unsigned char)(i * 7 + round) : 0;
        }
        errors += MPI_Start(&req) != MPI_SUCCESS;
        for (int p = 0; rank == 0 && p < PARTS; ++p) {
            errors += MPI_Pready(PARTS - 1 - p, req) != MPI_SUCCESS;
        }
        errors += MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
        for (int i = 0; rank == 1 && i < TOTAL; ++i) {
            errors += buf[i] != (unsigned char)(i * 7 + round);
        }
    }
    if (req != MPI_REQUEST_NULL) {
        errors += MPI_Request_free(&req) != MPI_SUCCESS;
    }
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all != 0) {
        fprintf(stderr, "finalize: %d errors\n", all);
    }
    return all != 0;
}
