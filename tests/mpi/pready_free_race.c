/* SPDX-License-Identifier: BSD-3-Clause */
/* Pready threads racing the owner's Wait + Request_free + re-init, cycle after cycle.
 *
 * Rank 0: 16 pthreads own 2 send partitions each. Every cycle the owner thread calls
 * MPI_Psend_init, MPI_Start, publishes the request (generation counter under a mutex), then at
 * once MPI_Wait and MPI_Request_free. The threads fill their partitions and mark them with
 * MPI_Pready (argv[1] = pready), MPI_Pready_range (range) or MPI_Pready_list (list), then wait
 * for the next generation. They never Pready cycle k+1 before the owner started it, but nothing
 * keeps them from still being inside MPI_Pready (after their partition was counted) while the
 * owner's Wait completes and it frees the request and creates the next one, whose handle MPI
 * may give the same value: that is the race under test (use-after-free, lost or double
 * counted partitions, a Pready reaching the next cycle's request). On odd cycles the owner
 * calls MPIX_Pbuf_prepare before publishing, so the request is paired and the last Pready
 * sends the data itself: that is when the Wait can overtake it. Unaided, a Pready is over in
 * microseconds and the overlap almost never happens, so the test widens the window the way a
 * preemption would: each cycle one thread arms a per-thread timer (SIGUSR2 to itself) that
 * expires 0..3.75 us (varying) after it enters MPI_Pready*; the handler sleeps STALL_US, so
 * the thread stops at a varying point inside the call. Rank 0 prints
 * how many signals landed inside MPI_Pready and how many Pready calls returned only after the
 * owner had freed their request (coverage, not asserted: it depends on timing).
 * Rank 1: the matching MPI_Precv_init / Start / Wait / verify every byte / free, each cycle.
 * argv[2] = cycles (default 10000). A cycle that makes no progress for WATCH_S seconds fails
 * the job with a one-line message naming the cycle. Needs MPI_THREAD_MULTIPLE (else skipped).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define THREADS 16
#define PER_THREAD 2
#define SPARTS (THREADS * PER_THREAD)
#define PART_BYTES 8
#define TOTAL (SPARTS * PART_BYTES)
#define RPARTS 4
#define TAG 91
#define WATCH_S 15
#define STALL_US 300

enum Mode { MODE_PREADY, MODE_RANGE, MODE_LIST };

/* Generation published by the owner: the cycle whose request the threads must mark, -1 =
 * stop. Guarded by g_lock; g_req is written before g_gen under the same lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_gen = -2;
static MPI_Request g_req = MPI_REQUEST_NULL;
static unsigned char g_sbuf[TOTAL];
static enum Mode g_mode = MODE_PREADY;
/* Coverage statistics (relaxed atomics): the last cycle whose send the owner has freed, and
 * how many Pready calls returned only after that. */
static int g_freed = -1;
static long g_late = 0;

/* Aborts the job on the first error: the peer would otherwise wait for a cycle that never
 * completes. */
static void must(int rc, const char* what, int cycle)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        char msg[MPI_MAX_ERROR_STRING + 128];
        snprintf(msg, sizeof msg, "cycle %d: %s returned %d (%s)", cycle, what, rc, text);
        TU_ABORT(msg);
    }
}

/* Blocks until the owner publishes a generation other than @p seen; returns it (-1 = stop). */
static int next_generation(int seen, MPI_Request* req)
{
    pthread_mutex_lock(&g_lock);
    while (g_gen == seen) {
        pthread_cond_wait(&g_cond, &g_lock);
    }
    const int gen = g_gen;
    *req = g_req;
    pthread_mutex_unlock(&g_lock);
    return gen;
}

static void* pready_thread(void* arg)
{
    const int id = (int)(size_t)arg;
    const int first = id * PER_THREAD;
    timer_t timer = tu_stall_timer_create();
    MPI_Request req = MPI_REQUEST_NULL;
    for (int gen = -2; (gen = next_generation(gen, &req)) >= 0;) {
        tu_fill(g_sbuf + (size_t)first * PART_BYTES, (size_t)PER_THREAD * PART_BYTES,
                (size_t)first * PART_BYTES, 0, gen);
        const int stall = gen * 7 % THREADS == id;
        if (stall) {
            tu_stall_arm(timer, 1 + (gen / THREADS % 16) * 250L, 0);
        }
        tu_in_call = 1;
        switch (g_mode) {
            case MODE_PREADY:
                /* Alternate the order, so the last partition of a thread varies. */
                for (int i = 0; i < PER_THREAD; ++i) {
                    int p = (gen + id) % 2 ? first + PER_THREAD - 1 - i : first + i;
                    must(MPI_Pready(p, req), "MPI_Pready", gen);
                }
                break;
            case MODE_RANGE:
                must(MPI_Pready_range(first, first + PER_THREAD - 1, req), "MPI_Pready_range", gen);
                break;
            case MODE_LIST: {
                int list[PER_THREAD];
                for (int i = 0; i < PER_THREAD; ++i) {
                    list[i] = first + PER_THREAD - 1 - i;
                }
                must(MPI_Pready_list(PER_THREAD, list, req), "MPI_Pready_list", gen);
                break;
            }
        }
        tu_in_call = 0;
        if (stall) {
            tu_stall_arm(timer, 0, 0);
        }
        if (__atomic_load_n(&g_freed, __ATOMIC_RELAXED) >= gen) {
            __atomic_fetch_add(&g_late, 1, __ATOMIC_RELAXED);
        }
    }
    timer_delete(timer);
    return NULL;
}

static void publish(int gen, MPI_Request req)
{
    pthread_mutex_lock(&g_lock);
    g_req = req;
    g_gen = gen;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

static void run_sender(int cycles)
{
    tu_stall_install(STALL_US);
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        if (pthread_create(&tid[t], NULL, pready_thread, (void*)(size_t)t) != 0) {
            TU_ABORT("pthread_create failed");
        }
    }

    for (int k = 0; k < cycles; ++k) {
        tu_watchdog_arm(WATCH_S, "sender cycle %d of %d", k, cycles);
        MPI_Request req = MPI_REQUEST_NULL;
        must(MPI_Psend_init(g_sbuf, SPARTS, PART_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req),
             "MPI_Psend_init", k);
        must(MPI_Start(&req), "MPI_Start", k);
        if (k % 2) {
            /* Odd cycles: paired and the receiver started, so the last Pready sends the data
             * itself and the Wait can complete while that Pready is still returning. Even
             * cycles: the Preadys usually come before pairing, which hands them over. */
            must(MPIX_Pbuf_prepare(req), "MPIX_Pbuf_prepare", k);
        }
        publish(k, req);
        /* No hand-shake with the threads: the last Pready may still be running. */
        must(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (send)", k);
        must(MPI_Request_free(&req), "MPI_Request_free (send)", k);
        __atomic_store_n(&g_freed, k, __ATOMIC_RELAXED);
        TU_CHECK_MSG(req == MPI_REQUEST_NULL, "cycle %d: the freed handle is not null", k);
    }
    publish(-1, MPI_REQUEST_NULL);
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(tid[t], NULL);
    }
    printf(
        "%d cycles: %ld stalls inside MPI_Pready, %ld of %d Pready calls returned after the "
        "owner's Wait + free\n",
        cycles, tu_stalls(1), g_late, cycles * THREADS);
}

static void run_receiver(int cycles)
{
    static unsigned char rbuf[TOTAL];
    for (int k = 0; k < cycles; ++k) {
        tu_watchdog_arm(WATCH_S, "receiver cycle %d of %d", k, cycles);
        memset(rbuf, 0, sizeof rbuf);
        MPI_Request req = MPI_REQUEST_NULL;
        must(MPI_Precv_init(rbuf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req),
             "MPI_Precv_init", k);
        must(MPI_Start(&req), "MPI_Start (receive)", k);
        MPI_Status st;
        must(MPI_Wait(&req, &st), "MPI_Wait (receive)", k);
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        char what[64];
        snprintf(what, sizeof what, "cycle %d", k);
        if (!TU_CHECK_MSG(count == TOTAL, "cycle %d: MPI_Get_count = %d, expected %d", k, count,
                          TOTAL) ||
            !tu_verify(rbuf, TOTAL, 0, 0, k, what)) {
            TU_ABORT("wrong data received (first failing cycle above)");
        }
        must(MPI_Request_free(&req), "MPI_Request_free (receive)", k);
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char* mode = argc > 1 ? argv[1] : "pready";
    if (strcmp(mode, "range") == 0) {
        g_mode = MODE_RANGE;
    } else if (strcmp(mode, "list") == 0) {
        g_mode = MODE_LIST;
    } else if (strcmp(mode, "pready") != 0) {
        TU_ABORT("argv[1] must be pready, range or list");
    }
    const int cycles = tu_arg_int(argc, argv, 2, 10000);
    if (tu_rank == 0) {
        run_sender(cycles);
    } else {
        run_receiver(cycles);
    }
    return tu_finish();
}
