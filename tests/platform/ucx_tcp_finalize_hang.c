/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl): does MPI_Finalize return when 3+ processes on two hosts talk over
 * UCX's TCP transport? Every process exchanges messages of 1 B ... 4 MiB with every other one
 * (MPI_Isend/MPI_Irecv, all completed), rank 0 prints "exchanged", then all call MPI_Finalize
 * and rank 0 prints "finalized" after it. A hang shows as "exchanged" without "finalized".
 *   mpicc.mpich -O2 ucx_tcp_finalize_hang.c -o ucx_tcp_finalize_hang
 *   for i in $(seq 10); do
 *     MPIPCL_MH_TIMEOUT=30 ../multihost/mpiexec.sh mpich tcp 3 ./ucx_tcp_finalize_hang
 *   done                                  # (as root, with ../multihost/hosts.sh up)
 * Result (3 processes, 2 on one emulated host and 1 on the other, UCX_TLS=sm,tcp,self, so
 * TCP between the hosts and shared memory within one):
 *   MPICH 4.0.2 + UCX 1.13.1 (Debian 12): hangs in 2 to 7 of 10 launches. One process stays
 *     in MPI_Finalize -> ucp_worker_progress -> uct_tcp_iface_progress, waiting for the close
 *     of its endpoint to a peer that already went on to the PMI barrier of MPI_Finalize (UCX
 *     DEBUG log: "close_nbx" with no "close flushed callback" for that endpoint). With only
 *     the message exchange replaced by one MPI_Allreduce it still hangs; 2 processes never
 *     did (0 of 16). It matches openucx/ucx#8738 ("TCP transport hangs during cleanup").
 *   Open MPI 4.1.4, pml ob1 + btl tcp: no hang. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (4 << 20)

int main(int argc, char** argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char* out = malloc(MAX_BYTES);
    char* in = malloc(MAX_BYTES);
    memset(out, rank, MAX_BYTES);
    int bad = 0;
    for (int round = 0; round < 46; ++round) {
        const int bytes = 1 << (round % 23);
        for (int k = 1; k < size; ++k) {
            const int to = (rank + k) % size;
            const int from = (rank - k + size) % size;
            MPI_Request req[2];
            MPI_Irecv(in, bytes, MPI_BYTE, from, round, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out, bytes, MPI_BYTE, to, round, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            bad |= in[0] != (char)from || in[bytes - 1] != (char)from;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("exchanged (%s)\n", bad ? "wrong data" : "data correct");
        fflush(stdout);
    }
    free(out);
    free(in);
    MPI_Finalize();
    if (rank == 0) {
        printf("finalized\n");
    }
    return bad;
}
