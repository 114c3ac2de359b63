/* SPDX-License-Identifier: BSD-3-Clause */
/* The persistent backend's receive window (docs/design.md, "Receive window"; the ctest entry
 * sets MPIPCL_RECV_WINDOW=2): 16 send partitions of 256 KiB, so one internal message each,
 * large enough for the window on Open MPI between ranks of one node. Each round, in turn:
 * - held: the sender marks every partition but the first HELD (more than the window holds)
 *   and keeps those back until the receiver answered. The receiver must see every other
 *   partition arrive, with its data, while the first ones have not (within a timeout that
 *   fails instead of hanging): the window's receives wait for messages that are not coming, so
 *   only its probes can post the others.
 * - reverse: one thread marks the partitions last to first, the receiver polls MPI_Parrived
 *   on all of them and checks each partition's bytes as soon as it is reported.
 * - threads: four threads mark the partitions in a scrambled order; the receiver only waits.
 * Every byte is checked after MPI_Wait; the requests are restarted ROUNDS times per case. The
 * checks hold for every backend and MPI (the window is a data path, not a semantic change). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 21
#define PARTS 16
#define PART_BYTES (256L * 1024L)
#define HELD 4
#define THREADS 4
#define ROUNDS 3
#define EARLY_S 10.0

enum { kHeld, kReverse, kThreads, kCases };
static const char* const case_name[kCases] = {"held", "reverse", "threads"};

struct marker {
    MPI_Request req;
    const int* order;
    int first;
};

static void* mark_share(void* arg)
{
    const struct marker* m = arg;
    for (int i = m->first; i < PARTS; i += THREADS) {
        TU_MPI(MPI_Pready(m->order[i], m->req));
    }
    return NULL;
}

/* Sender: waits for the receiver's token without hanging (a failure after the timeout). */
static void await_token(MPI_Comm ctl, int tag)
{
    int token = 0;
    MPI_Request r;
    MPI_Irecv(&token, 1, MPI_INT, 1, tag, ctl, &r);
    int done = 0;
    const double until = MPI_Wtime() + EARLY_S + TU_WAIT_TIMEOUT_S;
    while (!done && MPI_Wtime() < until) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    }
    if (!done) {
        TU_ABORT("the receiver never answered the partitions that were sent");
    }
}

static void send_round(int c, MPI_Request req, MPI_Comm ctl, int tag, unsigned seed)
{
    if (c == kHeld) {
        for (int p = HELD; p < PARTS; ++p) {
            TU_MPI(MPI_Pready(p, req));
        }
        await_token(ctl, tag);
        TU_MPI(MPI_Pready_range(0, HELD - 1, req));
    } else if (c == kReverse) {
        for (int p = PARTS - 1; p >= 0; --p) {
            TU_MPI(MPI_Pready(p, req));
        }
    } else {
        int order[PARTS];
        tu_shuffled_indices(order, PARTS, seed);
        pthread_t th[THREADS];
        struct marker m[THREADS];
        for (int t = 0; t < THREADS; ++t) {
            m[t].req = req;
            m[t].order = order;
            m[t].first = t;
            pthread_create(&th[t], NULL, mark_share, &m[t]);
        }
        for (int t = 0; t < THREADS; ++t) {
            pthread_join(th[t], NULL);
        }
    }
}

/* Receiver: polls MPI_Parrived on partitions [lo, PARTS) until all have arrived (a failure
 * after EARLY_S), checking each one's bytes when it is first reported. */
static void poll_each(MPI_Request req, const unsigned char* buf, int lo, int round)
{
    int seen[PARTS] = {0};
    int got = 0;
    const double until = MPI_Wtime() + EARLY_S;
    while (got < PARTS - lo && MPI_Wtime() < until) {
        for (int p = lo; p < PARTS; ++p) {
            if (seen[p]) {
                continue;
            }
            int flag = 0;
            TU_MPI(MPI_Parrived(req, p, &flag));
            if (flag) {
                seen[p] = 1;
                ++got;
                tu_verify(buf + p * PART_BYTES, (size_t)PART_BYTES, (size_t)(p * PART_BYTES), 0,
                          round, "a partition as MPI_Parrived reported it");
            }
        }
    }
    TU_CHECK_MSG(got == PARTS - lo, "round %d: %d of %d partitions arrived", round, got,
                 PARTS - lo);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    const size_t total = (size_t)(PARTS * PART_BYTES);
    unsigned char* buf = malloc(total);
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, PARTS, PART_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, PARTS, PART_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int c = 0; c < kCases; ++c) {
        for (int r = 0; r < ROUNDS; ++r) {
            const int round = c * ROUNDS + r;
            tu_watchdog_rearm(60);
            if (tu_rank == 0) {
                tu_fill(buf, total, 0, 0, round);
                TU_MPI(MPI_Start(&req));
                send_round(c, req, ctl, round, (unsigned)round);
                TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
                continue;
            }
            memset(buf, 0, total);
            TU_MPI(MPI_Start(&req));
            if (c == kHeld) {
                poll_each(req, buf, HELD, round);
                for (int p = 0; p < HELD; ++p) {
                    int flag = 0;
                    TU_MPI(MPI_Parrived(req, p, &flag));
                    TU_CHECK_MSG(!flag, "%s round %d: held-back partition %d arrived", case_name[c],
                                 round, p);
                }
                MPI_Send(&round, 1, MPI_INT, 0, round, ctl);
            } else if (c == kReverse) {
                poll_each(req, buf, 0, round);
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
            tu_verify(buf, total, 0, 0, round, case_name[c]);
        }
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
