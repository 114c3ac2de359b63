/* SPDX-License-Identifier: BSD-3-Clause */
/* Statuses: receive source/tag/count, MPI_ERROR in array calls, the empty status of inactive
 * requests, and MPI_Request_get_status on partitioned requests. */
#include <string.h>

#include "testutil.h"

#define TAG 14
#define SPARTS 4
#define SCOUNT 30 /* ints */
#define RPARTS 5
#define RCOUNT 8 /* int3 elements */
#define TOTAL_INTS (SPARTS * SCOUNT)
#define GARBAGE 4711

enum { WAITALL, TESTALL, WAITSOME, TESTSOME, NUM_ROUNDS };
static const char* const round_name[] = {"MPI_Waitall", "MPI_Testall", "MPI_Waitsome",
                                         "MPI_Testsome"};

static MPI_Datatype int3;
static int peer;

static void poison(MPI_Status* st)
{
    st->MPI_SOURCE = GARBAGE;
    st->MPI_TAG = GARBAGE;
    st->MPI_ERROR = GARBAGE;
}

static void expect_empty(const MPI_Status* st, const char* what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    TU_CHECK_MSG(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG &&
                     st->MPI_ERROR == MPI_SUCCESS && count == 0,
                 "%s: not the empty status (source %d, tag %d, error %d, count %d)", what,
                 st->MPI_SOURCE, st->MPI_TAG, st->MPI_ERROR, count);
}

static void expect_recv_status(const MPI_Status* st, const char* what)
{
    int count = -1, ints = -1;
    MPI_Get_count(st, int3, &count);
    MPI_Get_count(st, MPI_INT, &ints);
    TU_CHECK_MSG(st->MPI_SOURCE == peer && st->MPI_TAG == TAG && count == RPARTS * RCOUNT &&
                     ints == TOTAL_INTS,
                 "%s: receive status source %d tag %d count %d (int3) %d (int)", what,
                 st->MPI_SOURCE, st->MPI_TAG, count, ints);
}

/* Wait, Test and Request_get_status on a request that was never started or has completed. */
static void inactive(MPI_Request* req, const char* what)
{
    MPI_Status st;
    poison(&st);
    TU_MPI(MPI_Wait(req, &st));
    expect_empty(&st, what);
    int flag = 0;
    poison(&st);
    TU_MPI(MPI_Test(req, &flag, &st));
    TU_CHECK_MSG(flag, "%s: MPI_Test flag false", what);
    expect_empty(&st, what);
    flag = 0;
    poison(&st);
    TU_MPI(MPI_Request_get_status(*req, &flag, &st));
    TU_CHECK_MSG(flag, "%s: MPI_Request_get_status flag false", what);
    expect_empty(&st, what);
    TU_CHECK_MSG(*req != MPI_REQUEST_NULL, "%s: persistent request was freed", what);
}

/* Exchange in both directions; the receiver learns completion from MPI_Request_get_status
 * first, which must not deactivate the request: the following MPI_Wait gets the same status. */
static void get_status_round(MPI_Request req[2], MPI_Comm ctl, int* sbuf, int* rbuf)
{
    int token = 0;
    memset(rbuf, 0, TOTAL_INTS * sizeof(int));
    TU_MPI(MPI_Startall(2, req));
    int flag = 1;
    MPI_Status st;
    TU_MPI(MPI_Request_get_status(req[1], &flag, &st));
    TU_CHECK_MSG(!flag, "MPI_Request_get_status: receive complete before the peer's Pready");
    /* Both ranks checked before either marks its partitions. */
    MPI_Sendrecv(&token, 1, MPI_INT, peer, 0, &token, 1, MPI_INT, peer, 0, ctl, MPI_STATUS_IGNORE);
    tu_fill(sbuf, TOTAL_INTS * sizeof(int), 0, tu_rank, 99);
    tu_pready_all(SPARTS, req[0]);
    double deadline = tu_deadline();
    for (int i = 0; i < 2; ++i) {
        flag = 0;
        while (!flag) {
            poison(&st);
            TU_MPI(MPI_Request_get_status(req[i], &flag, &st));
            tu_check_deadline(deadline, "MPI_Request_get_status");
        }
    }
    expect_recv_status(&st, "MPI_Request_get_status");
    tu_verify(rbuf, TOTAL_INTS * sizeof(int), 0, peer, 99, "data after MPI_Request_get_status");
    poison(&st);
    TU_MPI(MPI_Wait(&req[1], &st));
    expect_recv_status(&st, "MPI_Wait after MPI_Request_get_status");
    TU_MPI(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    inactive(&req[1], "completed receive");
    inactive(&req[0], "completed send");
}

/* Complete both requests with one of the array calls and check every returned status. */
static void array_round(int round, MPI_Request req[2], int* sbuf, int* rbuf)
{
    memset(rbuf, 0, TOTAL_INTS * sizeof(int));
    TU_MPI(MPI_Startall(2, req));
    tu_fill(sbuf, TOTAL_INTS * sizeof(int), 0, tu_rank, round);
    tu_pready_all(SPARTS, req[0]);
    MPI_Status st[2];
    poison(&st[0]);
    poison(&st[1]);
    int done[2] = {0, 0};
    double deadline = tu_deadline();
    int flag = 0, outcount = 0, idx[2];
    switch (round) {
        case WAITALL:
            TU_MPI(MPI_Waitall(2, req, st));
            done[0] = done[1] = 1;
            break;
        case TESTALL:
            while (!flag) {
                TU_MPI(MPI_Testall(2, req, &flag, st));
                tu_check_deadline(deadline, "MPI_Testall");
            }
            done[0] = done[1] = 1;
            break;
        default:
            for (;;) {
                MPI_Status some[2];
                poison(&some[0]);
                poison(&some[1]);
                if (round == WAITSOME) {
                    TU_MPI(MPI_Waitsome(2, req, &outcount, idx, some));
                } else {
                    TU_MPI(MPI_Testsome(2, req, &outcount, idx, some));
                }
                if (outcount == MPI_UNDEFINED) {
                    break;
                }
                for (int k = 0; k < outcount; ++k) {
                    TU_CHECK(idx[k] == 0 || idx[k] == 1);
                    TU_CHECK_MSG(!done[idx[k]], "request %d completed twice", idx[k]);
                    done[idx[k]] = 1;
                    st[idx[k]] = some[k];
                }
                tu_check_deadline(deadline, round_name[round]);
            }
            break;
    }
    TU_CHECK_MSG(done[0] && done[1], "%s did not complete both requests", round_name[round]);
    TU_CHECK_MSG(st[0].MPI_ERROR == MPI_SUCCESS && st[1].MPI_ERROR == MPI_SUCCESS,
                 "%s: MPI_ERROR %d (send) %d (receive), expected MPI_SUCCESS", round_name[round],
                 st[0].MPI_ERROR, st[1].MPI_ERROR);
    expect_recv_status(&st[1], round_name[round]);
    tu_verify(rbuf, TOTAL_INTS * sizeof(int), 0, peer, round, round_name[round]);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    peer = 1 - tu_rank;
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Type_contiguous(3, MPI_INT, &int3);
    MPI_Type_commit(&int3);
    static int sbuf[TOTAL_INTS], rbuf[TOTAL_INTS];
    MPI_Request req[2];
    TU_MPI(MPI_Psend_init(sbuf, SPARTS, SCOUNT, MPI_INT, peer, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[0]));
    TU_MPI(MPI_Precv_init(rbuf, RPARTS, RCOUNT, int3, peer, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[1]));
    inactive(&req[1], "never-started receive");
    inactive(&req[0], "never-started send");
    get_status_round(req, ctl, sbuf, rbuf);
    for (int round = 0; round < NUM_ROUNDS; ++round) {
        array_round(round, req, sbuf, rbuf);
    }
    TU_MPI(MPI_Request_free(&req[0]));
    TU_MPI(MPI_Request_free(&req[1]));
    MPI_Type_free(&int3);
    MPI_Comm_free(&ctl);
    return tu_finish();
}
