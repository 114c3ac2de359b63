/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-partition arrival of small partitions: args <send parts> <recv parts> <send part bytes>
 * <mode>. Each round the sender marks every send partition but the last (mode: single = one
 * MPI_Pready each, range = MPI_Pready_range, list = MPI_Pready_list, threads = four threads
 * calling MPI_Pready, sparse = as single with a datatype that has holes) and holds the last one
 * back until the receiver answers. On the persistent backend with a dense datatype the receiver
 * must see every receive partition that those partitions cover arrive (within a timeout that
 * fails instead of hanging) while the last receive partition has not; with the sparse datatype
 * and a transfer of at most one aggregated message (4 KiB), no partition may arrive early. Data
 * is checked byte for byte in every round; the request is restarted ROUNDS times. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 9
#define ROUNDS 3
#define THREADS 4
#define EARLY_S 10.0
#define LATE_POLL_S 0.2

struct marker {
    MPI_Request req;
    int first;
    int held; /* partitions [0, held) are marked */
};

static void* mark_every_fourth(void* arg)
{
    struct marker* m = arg;
    for (int i = m->first; i < m->held; i += THREADS) {
        TU_MPI(MPI_Pready(i, m->req));
    }
    return NULL;
}

/* Marks send partitions [0, held) in the way @p mode names. */
static void mark_held_back(const char* mode, MPI_Request req, int held)
{
    if (held == 0) {
        return;
    }
    if (strcmp(mode, "range") == 0) {
        TU_MPI(MPI_Pready_range(0, held - 1, req));
    } else if (strcmp(mode, "list") == 0) {
        int* list = malloc(sizeof(int) * (size_t)held);
        for (int i = 0; i < held; ++i) {
            list[i] = held - 1 - i; /* descending: order must not matter */
        }
        TU_MPI(MPI_Pready_list(held, list, req));
        free(list);
    } else if (strcmp(mode, "threads") == 0) {
        pthread_t th[THREADS];
        struct marker m[THREADS];
        for (int t = 0; t < THREADS; ++t) {
            m[t].req = req;
            m[t].first = t;
            m[t].held = held;
            pthread_create(&th[t], NULL, mark_every_fourth, &m[t]);
        }
        for (int t = 0; t < THREADS; ++t) {
            pthread_join(th[t], NULL);
        }
    } else {
        for (int i = 0; i < held; ++i) {
            TU_MPI(MPI_Pready(i, req));
        }
    }
}

/* Receiver: polls until every receive partition inside the first @p early_bytes data bytes has
 * arrived (or EARLY_S passes: a failure); checks that the last one has not. Returns how many
 * arrived. */
static int poll_early(MPI_Request req, int rparts, long rb, long early_bytes, int round)
{
    int want = (int)(early_bytes / rb);
    int got = 0;
    double until = MPI_Wtime() + EARLY_S;
    while (got < want && MPI_Wtime() < until) {
        got = 0;
        for (int p = 0; p < want; ++p) {
            int flag = 0;
            TU_MPI(MPI_Parrived(req, p, &flag));
            got += flag;
        }
    }
    TU_CHECK_MSG(got == want,
                 "round %d: %d of %d receive partitions arrived while the sender held back its "
                 "last partition",
                 round, got, want);
    int flag = 0;
    TU_MPI(MPI_Parrived(req, rparts - 1, &flag));
    TU_CHECK_MSG(!flag, "round %d: the last receive partition arrived before it was ready", round);
    return got;
}

/* Receiver, aggregated layout: no partition may arrive while the last one is held back. */
static void poll_late(MPI_Request req, int rparts, int round)
{
    double until = MPI_Wtime() + LATE_POLL_S;
    while (MPI_Wtime() < until) {
        for (int p = 0; p < rparts; ++p) {
            int flag = 0;
            TU_MPI(MPI_Parrived(req, p, &flag));
            TU_CHECK_MSG(!flag, "round %d: partition %d arrived early in one aggregated message",
                         round, p);
            if (flag) {
                return;
            }
        }
    }
}

/* Sender: waits for the receiver's token without hanging (a failure after the timeout). */
static void await_token(MPI_Comm ctl, int round)
{
    int token = 0;
    MPI_Request r;
    MPI_Irecv(&token, 1, MPI_INT, 1, round, ctl, &r);
    int done = 0;
    double until = MPI_Wtime() + EARLY_S + TU_WAIT_TIMEOUT_S;
    while (!done && MPI_Wtime() < until) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    }
    if (!done) {
        TU_ABORT("the receiver never answered the early partitions");
    }
}

int main(int argc, char** argv)
{
    const char* mode = argc > 4 ? argv[4] : "single";
    const int threads = strcmp(mode, "threads") == 0;
    tu_init(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, 2);
    int sparts = tu_arg_int(argc, argv, 1, 16);
    int rparts = tu_arg_int(argc, argv, 2, 16);
    long sb = tu_arg_int(argc, argv, 3, 1);
    const int sparse = strcmp(mode, "sparse") == 0;
    const char* backend = getenv("MPIPCL_BACKEND");
    const int persistent = backend != NULL && strcmp(backend, "persistent") == 0;
    long total = sparts * sb;
    long rb = total / rparts;
    /* sparse: 4-byte ints 8 bytes apart (a hole after each); else bytes. */
    MPI_Datatype type = MPI_BYTE;
    long elem = 1;
    if (sparse) {
        MPI_Type_create_resized(MPI_INT, 0, 8, &type);
        MPI_Type_commit(&type);
        elem = 4;
    }
    long elems = total / elem;
    unsigned char* buf = calloc((size_t)(sparse ? elems * 8 : total), 1);
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, sparts, sb / elem, type, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, rparts, rb / elem, type, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req));
    }
    /* Without a progress thread the sender pairs only in its own passes (Start, Wait), and
     * await_token makes none: one plain round first, so the checked rounds are paired. */
    if (tu_progress_thread_off()) {
        TU_MPI(MPI_Start(&req));
        if (tu_rank == 0) {
            TU_MPI(MPI_Pready_range(0, sparts - 1, req));
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "pairing round"));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        int token = round;
        if (tu_rank == 0) {
            tu_type_fill(buf, type, (int)elems, 0, round);
            TU_MPI(MPI_Start(&req));
            mark_held_back(mode, req, sparts - 1);
            await_token(ctl, round);
            TU_MPI(MPI_Pready(sparts - 1, req));
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
            continue;
        }
        tu_type_set(buf, type, (int)elems, 0);
        TU_MPI(MPI_Start(&req));
        if (persistent && !sparse) {
            int got = poll_early(req, rparts, rb, (sparts - 1) * sb, round);
            tu_verify(buf, (size_t)(got * rb), 0, 0, round, "early partitions");
        } else if (persistent && total <= 4096) {
            poll_late(req, rparts, round);
        }
        MPI_Send(&token, 1, MPI_INT, 0, round, ctl);
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
        tu_type_verify(buf, type, (int)elems, 0, round, "received data");
    }
    TU_MPI(MPI_Request_free(&req));
    if (sparse) {
        MPI_Type_free(&type);
    }
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
