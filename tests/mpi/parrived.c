/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Parrived byte-range mapping: args <send parts> <recv parts> [strict]; no false positives,
 * a loop of only MPI_Parrived terminates, then one MPI_Test completes the receive. With strict=1
 * a receive partition must turn true once the send partitions covering it are ready (one
 * internal message per send partition is requested with the info key "mpipcl_messages"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 5
#define ROUNDS 4
#define EARLY_POLL_S 0.3
#define STRICT_POLL_S 5.0

/* Round-dependent subset of send partitions marked before the out-of-band signal. */
static int in_first_batch(int round, int i, int sparts)
{
    switch (round) {
        case 0:
            return i % 3 == 0;
        case 1:
            return i < sparts / 2;
        case 2:
            return i == sparts - 1;
        default:
            return 0;
    }
}

/* Receive partition p covers bytes [p*rb, (p+1)*rb); it is covered when every send partition
 * overlapping that range is in the first batch. */
static int covered(int round, int p, long rb, long sb, int sparts)
{
    if (rb == 0) {
        return 0;
    }
    long lo = p * rb / sb;
    long hi = ((p + 1) * rb - 1) / sb;
    for (long i = lo; i <= hi; ++i) {
        if (!in_first_batch(round, (int)i, sparts)) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    int sparts = tu_arg_int(argc, argv, 1, 8);
    int rparts = tu_arg_int(argc, argv, 2, 8);
    int strict = tu_arg_int(argc, argv, 3, 0);
    long total = (long)sparts * rparts * 8;
    long sb = total / sparts;
    long rb = total / rparts;
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Info info;
    MPI_Info_create(&info);
    char value[16];
    snprintf(value, sizeof value, "%d", sparts);
    MPI_Info_set(info, "mpipcl_messages", value);
    unsigned char* buf = malloc((size_t)total);
    int* seen = calloc((size_t)rparts, sizeof(int));
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, sparts, sb, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, rparts, rb, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, info, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        int token = 0;
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req));
            tu_fill(buf, (size_t)total, 0, 0, round);
            for (int i = 0; i < sparts; ++i) {
                if (in_first_batch(round, i, sparts)) {
                    TU_MPI(MPI_Pready(i, req));
                }
            }
            MPI_Send(&token, 1, MPI_INT, 1, 0, ctl);
            MPI_Recv(&token, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
            for (int i = 0; i < sparts; ++i) {
                if (!in_first_batch(round, i, sparts)) {
                    TU_MPI(MPI_Pready(i, req));
                }
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
            continue;
        }
        memset(buf, 0, (size_t)total);
        memset(seen, 0, sizeof(int) * (size_t)rparts);
        TU_MPI(MPI_Start(&req));
        MPI_Recv(&token, 1, MPI_INT, 0, 0, ctl, MPI_STATUS_IGNORE);
        /* Phase 1: only the first batch is ready. Poll briefly (strict: until every covered
         * partition has arrived); an uncovered partition must never report true. */
        int want = 0;
        for (int p = 0; p < rparts; ++p) {
            want += covered(round, p, rb, sb, sparts);
        }
        int got = 0;
        double until = MPI_Wtime() + (strict ? STRICT_POLL_S : EARLY_POLL_S);
        while (MPI_Wtime() < until && !(strict && got == want)) {
            for (int p = 0; p < rparts; ++p) {
                int flag = 0;
                TU_MPI(MPI_Parrived(req, p, &flag));
                if (flag && !seen[p]) {
                    seen[p] = 1;
                    ++got;
                    TU_CHECK_MSG(covered(round, p, rb, sb, sparts),
                                 "round %d: receive partition %d reported arrived but its send "
                                 "partitions are not all ready",
                                 round, p);
                    tu_verify(buf + p * rb, (size_t)rb, (size_t)(p * rb), 0, round,
                              "early partition");
                }
            }
        }
        if (strict) {
            TU_CHECK_MSG(got == want, "round %d: %d of %d covered partitions arrived early", round,
                         got, want);
        }
        MPI_Send(&token, 1, MPI_INT, 0, 0, ctl);
        /* Phase 2: everything is ready; only MPI_Parrived drives progress until all arrived. */
        double deadline = tu_deadline();
        while (got < rparts) {
            for (int p = 0; p < rparts; ++p) {
                int flag = 0;
                TU_MPI(MPI_Parrived(req, p, &flag));
                if (flag && !seen[p]) {
                    seen[p] = 1;
                    ++got;
                    tu_verify(buf + p * rb, (size_t)rb, (size_t)(p * rb), 0, round, "partition");
                }
            }
            tu_check_deadline(deadline, "MPI_Parrived on every partition");
        }
        int flag = 0;
        MPI_Status st;
        TU_MPI(MPI_Test(&req, &flag, &st));
        TU_CHECK_MSG(flag, "round %d: MPI_Test did not complete after all partitions arrived",
                     round);
        if (!flag) {
            TU_MPI(tu_wait(&req, &st, "receive"));
        }
        TU_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == TAG);
        tu_verify(buf, (size_t)total, 0, 0, round, "received data");
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Info_free(&info);
    MPI_Comm_free(&ctl);
    free(seen);
    free(buf);
    return tu_finish();
}
