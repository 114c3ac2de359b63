/* SPDX-License-Identifier: BSD-3-Clause */
/* Once MPI_Parrived has reported every partition, ONE MPI_Test completes the receive, even
 * while another thread keeps the library's progress engine busy.
 *
 * A second request pair (tag TAG_BUSY) stays incomplete for the whole test: the sender marks
 * all its partitions but the last one. On the receiver a helper pthread loops MPI_Parrived on
 * that missing partition and MPI_Test on that request, so it enters the progress engine all
 * the time (and must never see the partition or the request complete). Meanwhile the main
 * thread runs ROUNDS rounds of the measured pair: MPI_Start, poll MPI_Parrived until every
 * partition is there (bounded), then exactly one MPI_Test, which must return flag = 1; the
 * test fails on the first round where it does not, and checks every received byte. At the end
 * the sender marks the missing partition and the busy pair completes with its data checked.
 * The race needs the last partition to land while another thread is inside a progress pass,
 * so a defect shows in some runs only (Open MPI, rma backend, 2 cores: about 1 run in 8).
 * Needs MPI_THREAD_MULTIPLE (else skipped).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define ROUNDS 1000
#define SPARTS 16
#define RPARTS 8
#define TOTAL 4096
#define TAG 33
#define TAG_BUSY 34
#define BUSY_PARTS 4
#define BUSY_BYTES 256
#define BUSY_ROUND 7777
#define WATCH_S 15

/* Relaxed atomics: g_stop is set by the main thread, g_calls counts the helper's loops. */
static int g_stop = 0;
static long g_calls = 0;
static MPI_Request g_busy = MPI_REQUEST_NULL;

/* Receiver helper: drive progress through the incomplete request until told to stop. */
static void* busy_thread(void* arg)
{
    (void)arg;
    long calls = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        int arrived = 0;
        if (TU_MPI(MPI_Parrived(g_busy, BUSY_PARTS - 1, &arrived)) != MPI_SUCCESS ||
            !TU_CHECK_MSG(!arrived,
                          "busy request: its last partition arrived, but the sender "
                          "never marked it")) {
            break;
        }
        int done = 0;
        if (TU_MPI(MPI_Test(&g_busy, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS ||
            !TU_CHECK_MSG(!done,
                          "busy request: MPI_Test completed it before its last "
                          "partition was marked")) {
            break;
        }
        __atomic_store_n(&g_calls, ++calls, __ATOMIC_RELAXED);
    }
    TU_CHECK_MSG(calls > 0, "the helper thread never entered the library");
    printf("helper thread: %ld MPI_Parrived + MPI_Test pairs on the busy request\n", calls);
    return NULL;
}

static void run_sender(void)
{
    static unsigned char sbuf[TOTAL];
    static unsigned char busy[BUSY_PARTS * BUSY_BYTES];
    tu_fill(busy, sizeof busy, 0, 0, BUSY_ROUND);
    MPI_Request req, breq;
    TU_MPI(MPI_Psend_init(busy, BUSY_PARTS, BUSY_BYTES, MPI_BYTE, 1, TAG_BUSY, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &breq));
    TU_MPI(MPI_Start(&breq));
    TU_MPI(MPI_Pready_range(0, BUSY_PARTS - 2, breq));
    TU_MPI(MPI_Psend_init(sbuf, SPARTS, TOTAL / SPARTS, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req));
    for (int round = 0; round < ROUNDS; ++round) {
        tu_watchdog_arm(WATCH_S, "sender round %d", round);
        TU_MPI(MPI_Start(&req));
        tu_fill(sbuf, TOTAL, 0, 0, round);
        tu_pready_all(SPARTS, req);
        if (TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send round")) != MPI_SUCCESS) {
            break;
        }
    }
    tu_watchdog_arm(WATCH_S, "sender: end of the test");
    /* The receiver has stopped polling the busy request: now let it complete. */
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Pready(BUSY_PARTS - 1, breq));
    TU_MPI(tu_wait(&breq, MPI_STATUS_IGNORE, "busy send"));
    TU_MPI(MPI_Request_free(&req));
    TU_MPI(MPI_Request_free(&breq));
}

/* One round on the receiver; returns 0 when MPI_Test did not complete it (the failure). After
 * a failure (@p strict = 0) the remaining rounds only complete and check their data, so that
 * the sender is not left waiting. */
static int receive_round(MPI_Request* req, unsigned char* rbuf, int round, int strict)
{
    memset(rbuf, 0, TOTAL);
    if (TU_MPI(MPI_Start(req)) != MPI_SUCCESS) {
        return 0;
    }
    if (!strict) {
        int ok = TU_MPI(tu_wait(req, MPI_STATUS_IGNORE, "receive round")) == MPI_SUCCESS;
        return ok && tu_verify(rbuf, TOTAL, 0, 0, round, "received data");
    }
    double deadline = tu_deadline();
    for (int p = 0; p < RPARTS; ++p) {
        int arrived = 0;
        while (!arrived) {
            if (TU_MPI(MPI_Parrived(*req, p, &arrived)) != MPI_SUCCESS) {
                return 0;
            }
            tu_check_deadline(deadline, "every partition to arrive (MPI_Parrived)");
        }
    }
    int flag = 0;
    MPI_Status st;
    TU_MPI(MPI_Test(req, &flag, &st));
    if (!TU_CHECK_MSG(flag,
                      "round %d: MPI_Parrived reported all %d partitions, but the next "
                      "MPI_Test returned flag = 0",
                      round, RPARTS)) {
        TU_MPI(tu_wait(req, &st, "completion after the failed MPI_Test"));
    }
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    TU_CHECK_MSG(count == TOTAL, "round %d: MPI_Get_count = %d, expected %d", round, count, TOTAL);
    tu_verify(rbuf, TOTAL, 0, 0, round, "received data");
    return flag;
}

static void run_receiver(void)
{
    static unsigned char rbuf[TOTAL];
    static unsigned char busy[BUSY_PARTS * BUSY_BYTES];
    TU_MPI(MPI_Precv_init(busy, BUSY_PARTS, BUSY_BYTES, MPI_BYTE, 0, TAG_BUSY, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &g_busy));
    TU_MPI(MPI_Start(&g_busy));
    MPI_Request req;
    TU_MPI(MPI_Precv_init(rbuf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req));
    pthread_t helper;
    if (pthread_create(&helper, NULL, busy_thread, NULL) != 0) {
        TU_ABORT("pthread_create failed");
    }
    int strict = 1; /* fail on the first round that does not complete at once */
    /* The helper must be inside the library before the rounds start. */
    double deadline = tu_deadline();
    while (__atomic_load_n(&g_calls, __ATOMIC_RELAXED) == 0) {
        tu_check_deadline(deadline, "the helper thread's first loop");
        tu_sleep_us(100);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        tu_watchdog_arm(WATCH_S, "receiver round %d", round);
        strict = receive_round(&req, rbuf, round, strict) && strict;
    }
    tu_watchdog_arm(WATCH_S, "receiver: end of the test");
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
    pthread_join(helper, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (TU_MPI(tu_wait(&g_busy, MPI_STATUS_IGNORE, "busy receive")) == MPI_SUCCESS) {
        tu_verify(busy, sizeof busy, 0, 0, BUSY_ROUND, "busy request data");
    }
    TU_MPI(MPI_Request_free(&req));
    TU_MPI(MPI_Request_free(&g_busy));
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (tu_rank == 0) {
        run_sender();
    } else {
        run_receiver();
    }
    return tu_finish();
}
