/* SPDX-License-Identifier: BSD-3-Clause */
/* Every completion call on arrays mixing partitioned, ordinary nonblocking, ordinary persistent,
 * inactive and null requests; MPI_Startall over partitioned and persistent requests together. */
#include <string.h>

#include "testutil.h"

#define TAG 15
#define SPARTS 8
#define RPARTS 4
#define PART_BYTES 512
#define PBYTES (SPARTS * PART_BYTES)
#define IBYTES 1000
#define QBYTES (64 * 1024)

/* Slots of the request array; the first STARTED ones are started together by MPI_Startall. */
enum { PSEND, PRECV, QSEND, QRECV, ISEND, IRECV, NULLREQ, INACTIVE, NREQ };
#define STARTED 4

enum { WAIT, WAITALL, WAITANY, WAITSOME, TEST, TESTALL, TESTANY, TESTSOME, NUM_VARIANTS };
static const char* const variant_name[] = {"MPI_Wait",     "MPI_Waitall", "MPI_Waitany",
                                           "MPI_Waitsome", "MPI_Test",    "MPI_Testall",
                                           "MPI_Testany",  "MPI_Testsome"};

static int peer;
static unsigned char psbuf[PBYTES], prbuf[PBYTES], isbuf[IBYTES], irbuf[IBYTES];
static unsigned char qsbuf[QBYTES], qrbuf[QBYTES], unused[PBYTES];

static int is_receive(int slot) { return slot == PRECV || slot == QRECV || slot == IRECV; }

static int is_array_call(int v)
{
    return v == WAITALL || v == TESTALL || v == WAITSOME || v == TESTSOME;
}

/* One call of variant @p v; marks what completed in done[] and stores its status. */
static void complete_some(int v, MPI_Request req[], int done[], MPI_Status st[])
{
    MPI_Status tmp[NREQ];
    int idx[NREQ];
    int flag = 0, index = MPI_UNDEFINED, outcount = 0;
    for (int i = 0; i < NREQ; ++i) {
        tmp[i].MPI_ERROR = 4711;
    }
    switch (v) {
        case WAIT:
        case TEST:
            for (int i = 0; i < NREQ; ++i) {
                if (done[i]) {
                    continue;
                }
                flag = 1;
                if (v == WAIT) {
                    TU_MPI(MPI_Wait(&req[i], &st[i]));
                } else {
                    TU_MPI(MPI_Test(&req[i], &flag, &st[i]));
                }
                done[i] = flag;
            }
            return;
        case WAITALL:
        case TESTALL:
            flag = 1;
            if (v == WAITALL) {
                TU_MPI(MPI_Waitall(NREQ, req, tmp));
            } else {
                TU_MPI(MPI_Testall(NREQ, req, &flag, tmp));
            }
            for (int i = 0; i < NREQ && flag; ++i) {
                done[i] = 1;
                st[i] = tmp[i];
            }
            return;
        case WAITANY:
        case TESTANY:
            if (v == WAITANY) {
                TU_MPI(MPI_Waitany(NREQ, req, &index, &tmp[0]));
                flag = 1;
            } else {
                TU_MPI(MPI_Testany(NREQ, req, &index, &flag, &tmp[0]));
            }
            if (flag && index == MPI_UNDEFINED) { /* nothing active is left */
                for (int i = 0; i < NREQ; ++i) {
                    done[i] = 1;
                }
            } else if (flag && TU_CHECK(index >= 0 && index < NREQ && !done[index])) {
                done[index] = 1;
                st[index] = tmp[0];
            }
            return;
        default:
            if (v == WAITSOME) {
                TU_MPI(MPI_Waitsome(NREQ, req, &outcount, idx, tmp));
            } else {
                TU_MPI(MPI_Testsome(NREQ, req, &outcount, idx, tmp));
            }
            if (outcount == MPI_UNDEFINED) {
                for (int i = 0; i < NREQ; ++i) {
                    done[i] = 1;
                }
                return;
            }
            for (int k = 0; k < outcount; ++k) {
                if (TU_CHECK(idx[k] >= 0 && idx[k] < NREQ && !done[idx[k]])) {
                    done[idx[k]] = 1;
                    st[idx[k]] = tmp[k];
                }
            }
            return;
    }
}

static int all_done(const int done[])
{
    for (int i = 0; i < NREQ; ++i) {
        if (!done[i]) {
            return 0;
        }
    }
    return 1;
}

static void run_variant(int v, MPI_Request req[])
{
    int round = v;
    memset(prbuf, 0, sizeof prbuf);
    memset(irbuf, 0, sizeof irbuf);
    memset(qrbuf, 0, sizeof qrbuf);
    tu_fill(psbuf, PBYTES, 0, 10 * tu_rank + 0, round);
    tu_fill(isbuf, IBYTES, 0, 10 * tu_rank + 1, round);
    tu_fill(qsbuf, QBYTES, 0, 10 * tu_rank + 2, round);
    /* Same tag everywhere: ordinary messages match in posting order, partitioned ones apart. */
    TU_MPI(MPI_Irecv(irbuf, IBYTES, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[IRECV]));
    TU_MPI(MPI_Isend(isbuf, IBYTES, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[ISEND]));
    TU_MPI(MPI_Startall(STARTED, req));
    int blocking = v <= WAITSOME;
    TU_MPI(MPI_Pready_range(0, SPARTS / 2 - 1, req[PSEND]));
    int done[NREQ] = {0};
    MPI_Status st[NREQ];
    if (blocking) {
        TU_MPI(MPI_Pready_range(SPARTS / 2, SPARTS - 1, req[PSEND]));
    } else {
        complete_some(v, req, done, st);
        TU_CHECK_MSG(!done[PSEND], "%s: send completed with half of its partitions ready",
                     variant_name[v]);
        TU_MPI(MPI_Pready_range(SPARTS / 2, SPARTS - 1, req[PSEND]));
    }
    double deadline = tu_deadline();
    while (!all_done(done)) {
        complete_some(v, req, done, st);
        tu_check_deadline(deadline, variant_name[v]);
    }
    TU_CHECK_MSG(req[ISEND] == MPI_REQUEST_NULL && req[IRECV] == MPI_REQUEST_NULL,
                 "%s: completed nonblocking requests were not set to MPI_REQUEST_NULL",
                 variant_name[v]);
    TU_CHECK_MSG(req[PSEND] != MPI_REQUEST_NULL && req[PRECV] != MPI_REQUEST_NULL &&
                     req[QSEND] != MPI_REQUEST_NULL && req[QRECV] != MPI_REQUEST_NULL &&
                     req[INACTIVE] != MPI_REQUEST_NULL,
                 "%s: a persistent request handle was freed", variant_name[v]);
    static const int sizes[NREQ] = {[PRECV] = PBYTES, [QRECV] = QBYTES, [IRECV] = IBYTES};
    for (int i = 0; i < NREQ; ++i) {
        if (is_receive(i)) {
            int count = -1;
            MPI_Get_count(&st[i], MPI_BYTE, &count);
            TU_CHECK_MSG(st[i].MPI_SOURCE == peer && st[i].MPI_TAG == TAG && count == sizes[i],
                         "%s: slot %d status source %d tag %d count %d", variant_name[v], i,
                         st[i].MPI_SOURCE, st[i].MPI_TAG, count);
        }
        if (is_array_call(v) && (i == PSEND || i == PRECV)) {
            TU_CHECK_MSG(st[i].MPI_ERROR == MPI_SUCCESS, "%s: slot %d MPI_ERROR = %d",
                         variant_name[v], i, st[i].MPI_ERROR);
        }
    }
    tu_verify(prbuf, PBYTES, 0, 10 * peer + 0, round, "partitioned receive");
    tu_verify(irbuf, IBYTES, 0, 10 * peer + 1, round, "nonblocking receive");
    tu_verify(qrbuf, QBYTES, 0, 10 * peer + 2, round, "persistent receive");
}

/* With only null and inactive requests, every call returns at once with nothing to report. */
static void nothing_active(MPI_Request req[])
{
    MPI_Request r[3] = {MPI_REQUEST_NULL, req[PRECV], req[INACTIVE]};
    int index = 0, flag = 0, outcount = 0, idx[3];
    MPI_Status st[3];
    TU_MPI(MPI_Waitany(3, r, &index, MPI_STATUS_IGNORE));
    TU_CHECK_MSG(index == MPI_UNDEFINED, "MPI_Waitany index %d, expected MPI_UNDEFINED", index);
    TU_MPI(MPI_Testany(3, r, &index, &flag, MPI_STATUS_IGNORE));
    TU_CHECK_MSG(flag && index == MPI_UNDEFINED, "MPI_Testany flag %d index %d", flag, index);
    TU_MPI(MPI_Waitsome(3, r, &outcount, idx, st));
    TU_CHECK_MSG(outcount == MPI_UNDEFINED, "MPI_Waitsome outcount %d", outcount);
    TU_MPI(MPI_Testsome(3, r, &outcount, idx, st));
    TU_CHECK_MSG(outcount == MPI_UNDEFINED, "MPI_Testsome outcount %d", outcount);
    flag = 0;
    TU_MPI(MPI_Testall(3, r, &flag, st));
    TU_CHECK_MSG(flag, "MPI_Testall flag false on inactive requests");
    TU_MPI(MPI_Waitall(3, r, st));
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    peer = 1 - tu_rank;
    MPI_Request req[NREQ];
    TU_MPI(MPI_Psend_init(psbuf, SPARTS, PART_BYTES, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req[PSEND]));
    TU_MPI(MPI_Precv_init(prbuf, RPARTS, PBYTES / RPARTS, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req[PRECV]));
    TU_MPI(MPI_Send_init(qsbuf, QBYTES, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[QSEND]));
    TU_MPI(MPI_Recv_init(qrbuf, QBYTES, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[QRECV]));
    req[NULLREQ] = MPI_REQUEST_NULL;
    /* Never started; a different tag so that it could not match even if it were. */
    TU_MPI(MPI_Precv_init(unused, 2, PBYTES / 2, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req[INACTIVE]));
    nothing_active(req);
    for (int v = 0; v < NUM_VARIANTS; ++v) {
        run_variant(v, req);
    }
    nothing_active(req);
    for (int i = 0; i < NREQ; ++i) {
        if (req[i] != MPI_REQUEST_NULL) {
            TU_MPI(MPI_Request_free(&req[i]));
        }
    }
    return tu_finish();
}
