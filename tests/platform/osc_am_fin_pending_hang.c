/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl), MPI_THREAD_MULTIPLE: btl sm fragment exhaustion on Open MPI 5 by many
 * small Puts (tests/platform/README.md). Rank 0 sends MSGS contiguous messages of MSG_BYTES
 * (above btl sm's 4 KiB eager limit: pml ob1's RGET protocol, the receiver fetches the data and
 * answers with a FIN) to rank 1 with persistent requests (Send_init/Recv_init, Startall, Testsome
 * loops), round after round, each round closed by an MPI_Bcast from rank 0. Meanwhile a thread of
 * rank 0 Puts PUT_BYTES-sized contiguous pieces into rank 1's attached buffer of a dynamic window
 * (lock_all), PUTS of them (every other piece: separate operations) before each MPI_Win_flush,
 * in a loop. The Puts go in the same direction as the messages. A round that completes nothing
 * for WATCHDOG_S seconds is a hang (exit 3).
 *   mpicc -O2 -pthread osc_am_fin_pending_hang.c -o osc_am_fin_pending_hang
 *   mpiexec -n 2 ./osc_am_fin_pending_hang [seconds (10)] [puts per flush (2000)] [rma 0|1 (1)]
 * rma 0: no Put thread (the window exists all the same).
 * Open MPI 5.0.7 (osc rdma over btl sm: one active message and one response per Put): the
 * target answers each Put with a btl sm fragment; with a few thousand Puts outstanding its
 * fragments (btl_sm_free_list_max, 512) or its fast box to rank 0 run out for a moment, and a
 * FIN that pml ob1 could not send then goes to ob1's pckt_pending list. ob1 retries that list
 * only from the completion callback of another ob1 descriptor; rank 1 sends nothing more (it
 * waits in MPI_Bcast), so rank 0's sends never complete. Calling ob1's
 * mca_pml_ob1_process_pending_packets() in rank 1 from a debugger ends the hang.
 * Result (2 processes on one loaded 2-core VM, Debian 13): Open MPI 5.0.7
 * hangs in 3 of 3 runs with 2000 Puts per flush (rank 1's ob1 pckt_pending held FIN packets);
 * no hang with 32 Puts per flush (3 of 3) nor with rma 0 (2 of 2). Other MPIs not run. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PUT_BYTES 24
#define MAX_PUTS 4096
#define MSGS 24
#define MSG_BYTES 4080 /* above the eager limit (4 KiB minus the match header) */
#define WATCHDOG_S 20

static MPI_Win g_win;
static MPI_Aint g_peer_addr;
static int g_puts_per_flush;
static volatile int g_stop;
static volatile long g_puts;
static volatile long g_rounds;

static void* rma_loop(void* arg)
{
    char* src = arg;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        int rc = MPI_SUCCESS;
        for (int i = 0; i < g_puts_per_flush && rc == MPI_SUCCESS; ++i) {
            const MPI_Aint off = (MPI_Aint)2 * i * PUT_BYTES;
            rc = MPI_Put(src + off, PUT_BYTES, MPI_BYTE, 1, g_peer_addr + off, PUT_BYTES, MPI_BYTE,
                         g_win);
        }
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_flush(1, g_win);
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "MPI_Put/MPI_Win_flush failed: %d\n", rc);
            abort();
        }
        __atomic_add_fetch(&g_puts, g_puts_per_flush, __ATOMIC_RELAXED);
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void* watchdog(void* arg)
{
    int rank = *(int*)arg;
    long last = -1;
    int still = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        sleep(1);
        const long now = __atomic_load_n(&g_rounds, __ATOMIC_RELAXED);
        still = now == last ? still + 1 : 0;
        last = now;
        if (still >= WATCHDOG_S) {
            fprintf(stderr, "rank %d: HANG: round %ld incomplete for %d s (%ld Puts done)\n", rank,
                    now, WATCHDOG_S, __atomic_load_n(&g_puts, __ATOMIC_RELAXED));
            fflush(stderr);
            _exit(3);
        }
    }
    return NULL;
}

int main(int argc, char** argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) {
            fprintf(stderr, "needs 2 processes and MPI_THREAD_MULTIPLE\n");
        }
        MPI_Finalize();
        return 2;
    }
    const double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    g_puts_per_flush = argc > 2 ? atoi(argv[2]) : 2000;
    const int rma = argc > 3 ? atoi(argv[3]) : 1;
    if (g_puts_per_flush < 1 || g_puts_per_flush > MAX_PUTS) {
        g_puts_per_flush = MAX_PUTS;
    }
    MPI_Comm rma_comm;
    MPI_Comm p2p_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &rma_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm);
    MPI_Win_create_dynamic(MPI_INFO_NULL, rma_comm, &g_win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, g_win);
    const size_t win_bytes = (size_t)2 * MAX_PUTS * PUT_BYTES;
    char* target = calloc(win_bytes, 1);
    char* src = malloc(win_bytes);
    memset(src, rank + 1, win_bytes);
    MPI_Win_attach(g_win, target, (MPI_Aint)win_bytes);
    MPI_Aint mine = 0;
    MPI_Get_address(target, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, 1 - rank, 0, &g_peer_addr, 1, MPI_AINT, 1 - rank, 0, p2p_comm,
                 MPI_STATUS_IGNORE);

    char* buf = malloc((size_t)MSG_BYTES * MSGS);
    memset(buf, 0, (size_t)MSG_BYTES * MSGS);
    MPI_Request req[MSGS];
    for (int m = 0; m < MSGS; ++m) {
        if (rank == 0) {
            MPI_Send_init(buf + (size_t)m * MSG_BYTES, MSG_BYTES, MPI_BYTE, 1, 100 + m, p2p_comm,
                          &req[m]);
        } else {
            MPI_Recv_init(buf + (size_t)m * MSG_BYTES, MSG_BYTES, MPI_BYTE, 0, 100 + m, p2p_comm,
                          &req[m]);
        }
    }

    pthread_t rma_tid;
    pthread_t dog_tid;
    if (rma && rank == 0) {
        pthread_create(&rma_tid, NULL, rma_loop, src);
    }
    pthread_create(&dog_tid, NULL, watchdog, &rank);
    const double t0 = MPI_Wtime();
    int go = 1;
    while (go) {
        MPI_Startall(MSGS, req);
        int left = MSGS;
        while (left > 0) {
            int out = 0;
            int idx[MSGS];
            MPI_Testsome(MSGS, req, &out, idx, MPI_STATUSES_IGNORE);
            if (out != MPI_UNDEFINED) {
                left -= out;
            }
        }
        __atomic_add_fetch(&g_rounds, 1, __ATOMIC_RELAXED);
        /* Both agree when to stop: rank 0's clock decides. Rank 1 only receives here. */
        int more = MPI_Wtime() - t0 < seconds;
        MPI_Bcast(&more, 1, MPI_INT, 0, p2p_comm);
        go = more;
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    if (rma && rank == 0) {
        pthread_join(rma_tid, NULL);
    }
    pthread_join(dog_tid, NULL);
    long puts = g_puts;
    MPI_Allreduce(MPI_IN_PLACE, &puts, 1, MPI_LONG, MPI_SUM, p2p_comm);
    if (rank == 0) {
        printf(
            "%ld rounds of %d x %d B 0->1, %ld concurrent %d-byte Puts 0->1 (%d per flush): ok\n",
            g_rounds, MSGS, MSG_BYTES, puts, PUT_BYTES, g_puts_per_flush);
    }
    for (int m = 0; m < MSGS; ++m) {
        MPI_Request_free(&req[m]);
    }
    MPI_Win_detach(g_win, target);
    MPI_Win_unlock_all(g_win);
    MPI_Win_free(&g_win);
    MPI_Comm_free(&rma_comm);
    MPI_Comm_free(&p2p_comm);
    free(target);
    free(src);
    free(buf);
    MPI_Finalize();
    return 0;
}
