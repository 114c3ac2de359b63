/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl): is memory that the target attached to a dynamic window reachable by
 * the origin as soon as the origin learns its address? Per round the target (rank 1)
 * allocates and attaches a fresh buffer, sends its address (MPI_Send) and waits; the origin
 * (rank 0) receives the address and at once does MPI_Put + MPI_Win_flush. MPI_Win_attach has
 * returned before the address was sent, so MPI-4 allows the Put right away. A failing Put is
 * retried after a back-off (1 us, doubling up to 10 ms, 10 s in all), which tells a transient
 * failure from a lasting one. Counts of first-try failures, retried successes and final
 * failures are printed.
 *   mpicc -O2 osc_attach_race.c -o osc_attach_race && mpiexec -n 2 ./osc_attach_race [rounds]
 * Exit 0 when no Put failed on its first try, 1 when some needed a retry but all made it,
 * 2 when some failed for good.
 * Result (2 processes on one 2-core VM, shared memory, 2000 rounds): no failure on
 * Open MPI 5.0.7 (osc rdma), Open MPI 4.1.4, MPICH 4.2.1 and MPICH 4.0.2 (exit 0). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES 4096

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int put_flush(const char* src, MPI_Aint disp, MPI_Win win)
{
    int rc = MPI_Put(src, BYTES, MPI_BYTE, 1, disp, BYTES, MPI_BYTE, win);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Win_flush(1, win);
    }
    return rc;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            fprintf(stderr, "run with 2 processes\n");
        }
        MPI_Finalize();
        return 3;
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    int first_fail = 0;
    int retried_ok = 0;
    int final_fail = 0;
    int first_class = MPI_SUCCESS;
    double max_retry_s = 0;
    char* src = malloc(BYTES);
    for (int r = 0; r < rounds; ++r) {
        if (rank == 1) {
            /* A fresh buffer of a varying size each round: new pages, new registrations. */
            const size_t len = BYTES + (size_t)(r % 7) * 4096;
            char* buf = malloc(len);
            memset(buf, 0, len);
            MPI_Win_attach(win, buf, (MPI_Aint)len);
            MPI_Aint addr = 0;
            MPI_Get_address(buf, &addr);
            MPI_Send(&addr, 1, MPI_AINT, 0, 0, MPI_COMM_WORLD);
            int rc = 0;
            MPI_Recv(&rc, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS && (buf[0] != (char)r || buf[BYTES - 1] != (char)r)) {
                fprintf(stderr, "round %d: Put reported success, data missing\n", r);
                final_fail++;
            }
            MPI_Win_detach(win, buf);
            free(buf);
        } else {
            MPI_Aint addr = 0;
            MPI_Recv(&addr, 1, MPI_AINT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            memset(src, (char)r, BYTES);
            int rc = put_flush(src, addr, win);
            if (rc != MPI_SUCCESS) {
                if (first_fail++ == 0) {
                    MPI_Error_class(rc, &first_class);
                }
                const double t0 = MPI_Wtime();
                long back_off = 1;
                while (rc != MPI_SUCCESS && MPI_Wtime() - t0 < 10.0) {
                    sleep_us(back_off);
                    back_off = back_off < 10000 ? back_off * 2 : 10000;
                    rc = put_flush(src, addr, win);
                }
                const double took = MPI_Wtime() - t0;
                max_retry_s = took > max_retry_s ? took : max_retry_s;
                if (rc == MPI_SUCCESS) {
                    retried_ok++;
                } else {
                    final_fail++;
                }
            }
            MPI_Send(&rc, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        }
    }
    int fails[2] = {final_fail, 0};
    MPI_Allreduce(MPI_IN_PLACE, fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    final_fail = fails[0];
    if (rank == 0) {
        char cls[MPI_MAX_ERROR_STRING] = "none";
        int len = 0;
        if (first_fail > 0) {
            MPI_Error_string(first_class, cls, &len);
        }
        printf(
            "%d rounds: %d Puts failed on the first try (class: %s), %d of them succeeded "
            "on a retry (longest retry %.3f ms), %d failed for good\n",
            rounds, first_fail, first_class == MPI_ERR_RMA_RANGE ? "MPI_ERR_RMA_RANGE" : cls,
            retried_ok, max_retry_s * 1e3, final_fail);
    }
    MPI_Bcast(&first_fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(src);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return final_fail ? 2 : first_fail ? 1 : 0;
}
