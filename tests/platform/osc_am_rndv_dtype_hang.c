/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl), MPI_THREAD_MULTIPLE: btl sm fragment exhaustion on Open MPI 5 by
 * many-block Puts (tests/platform/README.md). Rank 1 sends MSGS rendezvous-sized messages
 * (MSG_BYTES, contiguous MPI_INT) to rank 0, which receives them into a derived datatype with
 * holes (8 ints per element in two blocks of 4, extent 12 ints), with persistent requests
 * (Send_init/Recv_init, Startall, Testsome loops), round after round. Meanwhile a thread of
 * rank 0 Puts PUT_BYTES + MPI_Win_flush into rank 1's attached buffer of a dynamic window
 * (lock_all), in a loop. A round that completes nothing for WATCHDOG_S seconds is a hang
 * (exit 3).
 *   mpicc -O2 -pthread osc_am_rndv_dtype_hang.c -o osc_am_rndv_dtype_hang
 *   mpiexec -n 2 ./osc_am_rndv_dtype_hang [seconds (10)] [rma 0|1 (1)] [holes 0|1 (1)]
 *                                         [persistent 0|1 (1)] [strided 0|1 (1)]
 * rma 0: no Put thread (the window exists all the same); holes 0: a contiguous receive type;
 * strided 0: each Put is one contiguous block of PUT_INTS ints instead of PUT_INTS blocks of one
 * int (origin and target: MPI_Type_vector with stride 2). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PUT_INTS 1024 /* Put as PUT_INTS separate ints (stride 2) or one contiguous block */
#define PUT_BYTES (2 * PUT_INTS * (int)sizeof(int))
#define MSGS 3
#define MSG_INTS 4376 /* 17504 bytes: above the eager limit */
#define WATCHDOG_S 20

static MPI_Win g_win;
static MPI_Aint g_peer_addr;
static volatile int g_stop;
static volatile long g_puts;
static volatile long g_rounds;

static MPI_Datatype g_put_type;
static int g_put_count;

static void* rma_loop(void* arg)
{
    char* src = arg;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        int rc =
            MPI_Put(src, g_put_count, g_put_type, 1, g_peer_addr, g_put_count, g_put_type, g_win);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_flush(1, g_win);
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "MPI_Put/MPI_Win_flush failed: %d\n", rc);
            abort();
        }
        __atomic_add_fetch(&g_puts, 1, __ATOMIC_RELAXED);
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
    const int rma = argc > 2 ? atoi(argv[2]) : 1;
    const int holes = argc > 3 ? atoi(argv[3]) : 1;
    const int persistent = argc > 4 ? atoi(argv[4]) : 1;
    const int strided = argc > 5 ? atoi(argv[5]) : 1;
    if (strided) {
        MPI_Type_vector(PUT_INTS, 1, 2, MPI_INT, &g_put_type);
        g_put_count = 1;
    } else {
        MPI_Type_contiguous(PUT_INTS, MPI_INT, &g_put_type);
        g_put_count = 1;
    }
    MPI_Type_commit(&g_put_type);
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
    MPI_Sendrecv(&mine, 1, MPI_AINT, 1 - rank, 0, &g_peer_addr, 1, MPI_AINT, 1 - rank, 0, p2p_comm,
                 MPI_STATUS_IGNORE);

    /* Receive element: 8 ints as two blocks of 4 with a leading, inner and trailing hole. */
    MPI_Datatype elem;
    int elem_ints = 8;
    if (holes) {
        int len[2] = {4, 4};
        MPI_Aint disp[2] = {sizeof(int), 7 * sizeof(int)};
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};
        MPI_Datatype s;
        MPI_Type_create_struct(2, len, disp, types, &s);
        MPI_Type_create_resized(s, 0, 12 * sizeof(int), &elem);
        MPI_Type_free(&s);
    } else {
        MPI_Type_contiguous(elem_ints, MPI_INT, &elem);
    }
    MPI_Type_commit(&elem);
    MPI_Aint lb = 0;
    MPI_Aint extent = 0;
    MPI_Type_get_extent(elem, &lb, &extent);
    const int elems = MSG_INTS / elem_ints;
    int* sbuf = malloc(sizeof(int) * MSG_INTS * MSGS);
    char* rbuf = malloc((size_t)extent * elems * MSGS);
    for (int i = 0; i < MSG_INTS * MSGS; ++i) {
        sbuf[i] = i;
    }
    MPI_Request req[MSGS];
    for (int m = 0; persistent && m < MSGS; ++m) {
        if (rank == 1) {
            MPI_Send_init(sbuf + m * MSG_INTS, MSG_INTS, MPI_INT, 0, 100 + m, p2p_comm, &req[m]);
        } else {
            MPI_Recv_init(rbuf + (size_t)m * elems * extent, elems, elem, 1, 100 + m, p2p_comm,
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
        if (persistent) {
            MPI_Startall(MSGS, req);
        } else {
            for (int m = 0; m < MSGS; ++m) {
                if (rank == 1) {
                    MPI_Isend(sbuf + m * MSG_INTS, MSG_INTS, MPI_INT, 0, 100 + m, p2p_comm,
                              &req[m]);
                } else {
                    MPI_Irecv(rbuf + (size_t)m * elems * extent, elems, elem, 1, 100 + m, p2p_comm,
                              &req[m]);
                }
            }
        }
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
        /* Both agree when to stop: rank 0's clock decides. */
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
        printf("%ld rounds of %d x %d B (receive type %s, %s), %ld concurrent Puts: ok\n", g_rounds,
               MSGS, (int)(MSG_INTS * sizeof(int)), holes ? "with holes" : "contiguous",
               persistent ? "persistent" : "Isend/Irecv", puts);
    }
    for (int m = 0; persistent && m < MSGS; ++m) {
        MPI_Request_free(&req[m]);
    }
    MPI_Type_free(&elem);
    MPI_Type_free(&g_put_type);
    MPI_Win_detach(g_win, target);
    MPI_Win_unlock_all(g_win);
    MPI_Win_free(&g_win);
    MPI_Comm_free(&rma_comm);
    MPI_Comm_free(&p2p_comm);
    free(target);
    free(src);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
