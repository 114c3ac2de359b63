/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl), MPI_THREAD_MULTIPLE: does point-to-point traffic between two processes
 * complete while RMA traffic runs between the same two processes at the same time? Each rank
 * runs an RMA thread (MPI_Put of PUT_BYTES + MPI_Win_flush into the peer's attached buffer of
 * a dynamic window under lock_all, in a loop) while P2P_THREADS threads exchange messages with
 * the peer on another communicator (MPI_Isend/MPI_Irecv + MPI_Test loops, sizes from 8 B to
 * 1 MiB, so eager and rendezvous protocols). A watchdog thread reports a hang (no p2p progress
 * for WATCHDOG_S seconds) and exits 3.
 *   mpicc -O2 -pthread osc_am_p2p_hang.c -o osc_am_p2p_hang
 *   mpiexec -n 2 ./osc_am_p2p_hang [seconds (default 10)] [rma 0|1 (default 1)]
 * With rma 0 the RMA threads stay idle (the control run). Exit 0: every message arrived.
 * Result (2 processes on one 2-core VM, shared memory, 20 s, 4 p2p threads): no
 * hang on Open MPI 5.0.7 (osc rdma over btl sm), Open MPI 4.1.4, MPICH 4.2.1, MPICH 4.0.2
 * (1 p2p thread, 5-10 s: none either). Contiguous Puts alone do not exhaust btl sm's
 * fragments: see osc_am_rndv_dtype_hang.c (tests/platform/README.md). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PUT_BYTES (64 * 1024)
#define MAX_MSG (1024 * 1024)
#define WATCHDOG_S 30
#define P2P_THREADS 4

static MPI_Win g_win;
static MPI_Aint g_peer_addr;
static int g_peer;
static volatile int g_stop;
static volatile long g_puts;
static volatile long g_msgs;
static volatile int g_step; /* 0 sending, 1 receiving */
static volatile int g_size;

static void* rma_loop(void* arg)
{
    char* src = arg;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        int rc = MPI_Put(src, PUT_BYTES, MPI_BYTE, g_peer, g_peer_addr, PUT_BYTES, MPI_BYTE, g_win);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_flush(g_peer, g_win);
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "MPI_Put/MPI_Win_flush failed: %d\n", rc);
            abort();
        }
        __atomic_add_fetch(&g_puts, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void* watchdog(void* arg)
{
    (void)arg;
    long last = -1;
    int still = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        sleep(1);
        const long now = __atomic_load_n(&g_msgs, __ATOMIC_RELAXED);
        still = now == last ? still + 1 : 0;
        last = now;
        if (still >= WATCHDOG_S) {
            int rank = 0;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            fprintf(stderr,
                    "rank %d: HANG: no message completed for %d s (%ld done, stuck %s %d bytes; "
                    "%ld Puts done)\n",
                    rank, WATCHDOG_S, now, g_step ? "receiving" : "sending", g_size,
                    __atomic_load_n(&g_puts, __ATOMIC_RELAXED));
            fflush(stderr);
            _exit(3);
        }
    }
    return NULL;
}

static void wait_test(MPI_Request* req)
{
    int done = 0;
    while (!done) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
    }
}

typedef struct {
    MPI_Comm comm;
    int tag;
    double seconds;
    long rounds;
} P2p;

/* One p2p thread: exchanges of 8 B .. 1 MiB with the peer on its own tag until the time is up
 * (each thread stops by its own clock after a complete exchange round; the peer's thread with
 * the same tag does the same number of rounds: the last round's messages tell it to stop). */
static void* p2p_loop(void* arg)
{
    P2p* p = arg;
    char* sbuf = malloc(MAX_MSG);
    char* rbuf = malloc(MAX_MSG);
    memset(sbuf, 7, MAX_MSG);
    const double t0 = MPI_Wtime();
    int go = 1;
    while (go) {
        for (int bytes = 8; bytes <= MAX_MSG; bytes *= 8) {
            MPI_Request req[2];
            g_size = bytes;
            g_step = 0;
            sbuf[0] = MPI_Wtime() - t0 < p->seconds;
            MPI_Irecv(rbuf, bytes, MPI_BYTE, g_peer, p->tag, p->comm, &req[1]);
            MPI_Isend(sbuf, bytes, MPI_BYTE, g_peer, p->tag, p->comm, &req[0]);
            wait_test(&req[0]);
            g_step = 1;
            wait_test(&req[1]);
            go = sbuf[0] && rbuf[0];
            __atomic_add_fetch(&g_msgs, 1, __ATOMIC_RELAXED);
            if (!go) {
                break;
            }
        }
        p->rounds++;
    }
    free(sbuf);
    free(rbuf);
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
    const int rma = argc > 2 ? atoi(argv[2]) : 1;
    g_peer = 1 - rank;
    MPI_Comm rma_comm;
    MPI_Comm p2p_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &rma_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm);
    MPI_Win_create_dynamic(MPI_INFO_NULL, rma_comm, &g_win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, g_win);
    char* target = calloc(PUT_BYTES, 1);
    char* src = malloc(PUT_BYTES);
    memset(src, rank + 1, PUT_BYTES);
    MPI_Win_attach(g_win, target, PUT_BYTES);
    MPI_Aint mine = 0;
    MPI_Get_address(target, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, g_peer, 0, &g_peer_addr, 1, MPI_AINT, g_peer, 0, p2p_comm,
                 MPI_STATUS_IGNORE);

    pthread_t rma_tid;
    pthread_t dog_tid;
    if (rma) {
        pthread_create(&rma_tid, NULL, rma_loop, src);
    }
    pthread_create(&dog_tid, NULL, watchdog, NULL);
    pthread_t p2p_tid[P2P_THREADS];
    P2p p2p[P2P_THREADS];
    memset(p2p, 0, sizeof p2p);
    for (int k = 0; k < P2P_THREADS; ++k) {
        p2p[k].comm = p2p_comm;
        p2p[k].tag = k;
        p2p[k].seconds = seconds;
        pthread_create(&p2p_tid[k], NULL, p2p_loop, &p2p[k]);
    }
    long rounds = 0;
    for (int k = 0; k < P2P_THREADS; ++k) {
        pthread_join(p2p_tid[k], NULL);
        rounds += p2p[k].rounds;
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    if (rma) {
        pthread_join(rma_tid, NULL);
    }
    pthread_join(dog_tid, NULL);
    long puts = g_puts;
    MPI_Allreduce(MPI_IN_PLACE, &puts, 1, MPI_LONG, MPI_SUM, p2p_comm);
    if (rank == 0) {
        printf(
            "%d p2p threads: %ld exchange rounds, %ld messages each way, %ld concurrent Puts: "
            "ok\n",
            P2P_THREADS, rounds, g_msgs, puts);
    }
    MPI_Win_detach(g_win, target);
    MPI_Win_unlock_all(g_win);
    MPI_Win_free(&g_win);
    MPI_Comm_free(&rma_comm);
    MPI_Comm_free(&p2p_comm);
    free(target);
    free(src);
    MPI_Finalize();
    return 0;
}
