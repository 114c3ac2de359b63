/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl): does an MPI_Put complete at a passive target that makes no MPI call?
 * The target (rank 1) attaches BYTES to a dynamic window (lock_all epoch), sends the address,
 * then sleeps SLEEP_MS without any MPI call and counts the bytes that landed meanwhile. The
 * origin (rank 0) Puts BYTES and flushes; it prints how long MPI_Win_flush took. MPI-4 does
 * not require this progress (it is allowed to wait for the target to call MPI), so the result
 * is only reported: exit 0 either way (1 on wrong data after the target woke).
 *   mpicc -O2 osc_passive_progress.c -o osc_passive_progress && mpiexec -n 2 ./osc_passive_progress
 * Result (2 processes on one 2-core VM, shared memory):
 *   Open MPI 5.0.7 (osc rdma): 0 bytes land during the sleep, the flush takes 795 ms (it
 *     returns once the target is back in MPI); so does mpipcl's busy_receiver_nothread.rma:
 *     0 of 16 partitions;
 *   Open MPI 4.1.4 (osc rdma over vader, single copy): all 1 MiB lands, the flush takes 1.2 ms;
 *   MPICH 4.2.1: 0 bytes, 809 ms; MPICH 4.0.2: 0 bytes, 837 ms. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES (1024 * 1024)
#define SLEEP_MS 800

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        MPI_Finalize();
        return 2;
    }
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    unsigned char* buf = calloc(BYTES, 1);
    int bad = 0;
    if (rank == 1) {
        MPI_Win_attach(win, buf, BYTES);
        MPI_Aint addr = 0;
        MPI_Get_address(buf, &addr);
        MPI_Send(&addr, 1, MPI_AINT, 0, 0, MPI_COMM_WORLD);
        struct timespec ts = {SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL); /* no MPI call */
        long landed = 0;
        for (long i = 0; i < BYTES; ++i) {
            landed += buf[i] == 0x5A;
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the origin's flush has returned */
        for (long i = 0; i < BYTES; ++i) {
            bad += buf[i] != 0x5A;
        }
        printf("target: %ld of %d bytes landed while it slept %d ms without MPI calls; %s\n",
               landed, BYTES, SLEEP_MS, bad ? "WRONG DATA afterwards" : "all there afterwards");
        MPI_Win_detach(win, buf);
    } else {
        MPI_Aint addr = 0;
        MPI_Recv(&addr, 1, MPI_AINT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memset(buf, 0x5A, BYTES);
        const double t0 = MPI_Wtime();
        MPI_Put(buf, BYTES, MPI_BYTE, 1, addr, BYTES, MPI_BYTE, win);
        MPI_Win_flush(1, win);
        printf("origin: MPI_Put + MPI_Win_flush took %.1f ms\n", (MPI_Wtime() - t0) * 1e3);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return bad ? 1 : 0;
}
