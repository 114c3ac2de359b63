/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl): does a Put to memory that the target attached to a dynamic window
 * long ago fail while the target attaches and detaches *other* memory? Rank 0 attaches one
 * page (the stable page), sends its address to every other rank, and then, until all of them
 * are done, attaches and detaches 8 pages that lie below the stable page in memory (so the
 * window's sorted region table shifts the stable page's entry each time), calling
 * MPI_Iprobe between steps so that it progresses RMA. Every other rank does `rounds`
 * MPI_Put + MPI_Win_flush of 64 bytes into its own slot of the stable page. A failing Put is
 * retried after a back-off (1 us, doubling up to 10 ms, 10 s in all), which tells a transient
 * failure from a lasting one. At the end rank 0 checks every slot.
 *   mpicc -O2 osc_attach_churn.c -o osc_attach_churn && mpiexec -n 4 ./osc_attach_churn [rounds]
 * At least 2 processes; at 3 or more, several origins read the table at once. Exit 0 when no
 * Put failed on its first try, 1 when some needed a retry but all made it, 2 when some failed
 * for good or the data is wrong.
 * Result (one 2-core VM, shared memory, 2000 rounds per origin): Open MPI 5.0.7 (osc rdma)
 * fails first tries with MPI_ERR_RMA_RANGE in every run, 4 processes (4-78 per run, 5 runs)
 * and 2 (15-40, 3 runs), and every retry succeeds within 0.3 ms (exit 1). Its osc rdma reads a
 * peer's region table in shared memory without the table's lock
 * (ompi_osc_rdma_find_dynamic_region, local-state path) while ompi_osc_rdma_attach/detach
 * memmove that table under the lock. Open MPI 4.1.4, MPICH 4.2.1 and MPICH 4.0.2, 4
 * processes, 3 runs each: no failure (exit 0). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOT 64
#define CHURN 8
#define DONE_TAG 9

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Rank 0: churn the pages below the stable one until every origin said it is done. */
static void churn(char* pages, long page, int origins, MPI_Win win)
{
    int done = 0;
    long cycles = 0;
    while (done < origins) {
        for (int i = 0; i < CHURN; ++i) {
            MPI_Win_attach(win, pages + i * page, page);
            int flag = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < CHURN; ++i) {
            MPI_Win_detach(win, pages + i * page);
            int flag = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
        ++cycles;
        int flag = 1;
        while (flag && done < origins) {
            MPI_Iprobe(MPI_ANY_SOURCE, DONE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (flag) {
                MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, DONE_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                ++done;
            }
        }
    }
    printf("rank 0: %ld attach/detach cycles of %d pages\n", cycles, CHURN);
}

/* An origin: rounds of Put + flush into its slot; counts and retries failures. */
static void put_rounds(int rank, int rounds, MPI_Aint stable, MPI_Win win, int counts[3],
                       double* max_retry_s)
{
    char src[SLOT];
    for (int r = 0; r < rounds; ++r) {
        memset(src, (char)(rank + r), SLOT);
        const MPI_Aint disp = stable + (MPI_Aint)rank * SLOT;
        int rc = MPI_Put(src, SLOT, MPI_BYTE, 0, disp, SLOT, MPI_BYTE, win);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_flush(0, win);
            counts[2] += rc != MPI_SUCCESS; /* a failed flush counts as a final failure */
            continue;
        }
        if (counts[0]++ == 0) {
            char text[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, text, &len);
            printf("rank %d round %d: first failure: %s\n", rank, r, text);
        }
        const double t0 = MPI_Wtime();
        long wait = 1;
        while (rc != MPI_SUCCESS && MPI_Wtime() - t0 < 10.0) {
            sleep_us(wait);
            wait = wait < 10000 ? wait * 2 : 10000;
            rc = MPI_Put(src, SLOT, MPI_BYTE, 0, disp, SLOT, MPI_BYTE, win);
        }
        if (rc == MPI_SUCCESS && MPI_Win_flush(0, win) == MPI_SUCCESS) {
            counts[1]++;
            const double s = MPI_Wtime() - t0;
            *max_retry_s = s > *max_retry_s ? s : *max_retry_s;
        } else {
            counts[2]++;
        }
    }
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long page = sysconf(_SC_PAGESIZE);
    if (size < 2 || (long)size * SLOT > page) {
        if (rank == 0) {
            fprintf(stderr, "run with 2 to %ld processes\n", page / SLOT);
        }
        MPI_Finalize();
        return 3;
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    /* One block: CHURN pages to churn, a gap page, then the stable page above them all. */
    char* block = NULL;
    if (posix_memalign((void**)&block, (size_t)page, (size_t)page * (CHURN + 2)) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    char* stable = block + page * (CHURN + 1);
    memset(stable, 0, (size_t)page);
    MPI_Aint addr = 0;
    if (rank == 0) {
        MPI_Win_attach(win, stable, page);
        MPI_Get_address(stable, &addr);
    }
    MPI_Bcast(&addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    int counts[3] = {0, 0, 0}; /* first-try failures, retried successes, final failures */
    double max_retry_s = 0;
    if (rank == 0) {
        churn(block, page, size - 1, win);
    } else {
        put_rounds(rank, rounds, addr, win, counts, &max_retry_s);
        MPI_Send(NULL, 0, MPI_BYTE, 0, DONE_TAG, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int o = 1; o < size; ++o) {
            for (int i = 0; i < SLOT; ++i) {
                if (stable[o * SLOT + i] != (char)(o + rounds - 1)) {
                    printf("rank 0: slot of rank %d holds the wrong data\n", o);
                    counts[2]++;
                    break;
                }
            }
        }
    }
    int total[3] = {0, 0, 0};
    MPI_Reduce(counts, total, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    double max_all = 0;
    MPI_Reduce(&max_retry_s, &max_all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(
            "%d origins x %d Puts: %d failed on the first try, %d succeeded on a retry "
            "(longest %.3f ms), %d failed for good\n",
            size - 1, rounds, total[0], total[1], max_all * 1e3, total[2]);
        MPI_Win_detach(win, stable);
    }
    int rc = total[2] > 0 ? 2 : total[0] > 0 ? 1 : 0;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(block);
    MPI_Finalize();
    return rc;
}
