/* SPDX-License-Identifier: BSD-3-Clause */
/* Erroneous calls return the right error class under MPI_ERRORS_RETURN, never crash or hang,
 * and leave the library usable: a correct transfer works afterwards. */
#include <string.h>

#include "testutil.h"

#define TAG 18
#define SPARTS 8
#define RPARTS 4
#define TOTAL 4096
#define GUARD 256
#define GUARD_BYTE 0x3C

enum { SENDER = 0, RECEIVER = 1 };

static MPI_Comm ec; /* MPI_ERRORS_RETURN */
static unsigned char sbuf[2 * TOTAL], rbuf[TOTAL + GUARD];

/* Argument errors of the init calls (purely local). */
static void init_errors(void)
{
    MPI_Request req = MPI_REQUEST_NULL;
    TU_EXPECT_ERR(MPI_Psend_init(sbuf, 0, 1, MPI_BYTE, 1 - tu_rank, TAG, ec, MPI_INFO_NULL, &req),
                  MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Psend_init(sbuf, -1, 1, MPI_BYTE, 1 - tu_rank, TAG, ec, MPI_INFO_NULL, &req),
                  MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Precv_init(rbuf, 0, 1, MPI_BYTE, 1 - tu_rank, TAG, ec, MPI_INFO_NULL, &req),
                  MPI_ERR_ARG);
    TU_EXPECT_ERR(
        MPI_Precv_init(rbuf, 4, 1, MPI_BYTE, MPI_ANY_SOURCE, TAG, ec, MPI_INFO_NULL, &req),
        MPI_ERR_RANK);
    TU_EXPECT_ERR(
        MPI_Precv_init(rbuf, 4, 1, MPI_BYTE, 1 - tu_rank, MPI_ANY_TAG, ec, MPI_INFO_NULL, &req),
        MPI_ERR_TAG);
    /* mpipcl's own key with a malformed value is a hint it cannot read: ignored with a warning
     * (docs/config.md); the request is made and, never started, freed. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_messages", "many");
    TU_MPI(MPI_Psend_init(sbuf, 4, 1, MPI_BYTE, 1 - tu_rank, TAG, ec, info, &req));
    MPI_Info_free(&info);
    TU_MPI(MPI_Request_free(&req));
    TU_CHECK_MSG(req == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
}

/* Parrived on requests that are not partitioned receives: an inactive persistent receive and
 * an active nonblocking receive (completed afterwards). */
static void parrived_on_ordinary_requests(void)
{
    int in = 0, out = 7, flag = 0;
    MPI_Request persistent, active;
    TU_MPI(MPI_Recv_init(&in, 1, MPI_INT, 0, TAG, MPI_COMM_SELF, &persistent));
    TU_EXPECT_ERR(MPI_Parrived(persistent, 0, &flag), MPI_ERR_REQUEST);
    TU_MPI(MPI_Request_free(&persistent));
    TU_MPI(MPI_Irecv(&in, 1, MPI_INT, 0, TAG, MPI_COMM_SELF, &active));
    TU_EXPECT_ERR(MPI_Parrived(active, 0, &flag), MPI_ERR_REQUEST);
    TU_MPI(MPI_Send(&out, 1, MPI_INT, 0, TAG, MPI_COMM_SELF));
    TU_MPI(tu_wait(&active, MPI_STATUS_IGNORE, "ordinary receive"));
    TU_CHECK(in == out);
}

/* Free, cancel and restart of an active request are errors; the request stays usable. Returns
 * 0 when MPI_Request_free wrongly succeeded (the handle is gone; the test cannot go on). */
static int active_request_errors(MPI_Request* req)
{
    MPI_Request copy = *req;
    if (!TU_EXPECT_ANY_ERR(MPI_Request_free(&copy))) {
        return 0;
    }
    TU_CHECK_MSG(copy == *req, "failed MPI_Request_free changed the handle");
    TU_EXPECT_ANY_ERR(MPI_Cancel(req));
    TU_EXPECT_ERR(MPI_Start(req), MPI_ERR_REQUEST);
    return 1;
}

static void sender_errors(void)
{
    MPI_Request req;
    TU_MPI(MPI_Psend_init(sbuf, SPARTS, TOTAL / SPARTS, MPI_BYTE, RECEIVER, TAG, ec, MPI_INFO_NULL,
                          &req));
    int list[3] = {1, 2, 1};
    TU_EXPECT_ERR(MPI_Pready(0, req), MPI_ERR_REQUEST); /* before Start */
    TU_EXPECT_ERR(MPI_Pready_range(0, 1, req), MPI_ERR_REQUEST);
    TU_EXPECT_ERR(MPI_Pready_list(2, list, req), MPI_ERR_REQUEST);
    int flag = 0;
    TU_EXPECT_ERR(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST); /* a send request */
    TU_MPI(MPI_Start(&req));
    tu_fill(sbuf, TOTAL, 0, SENDER, 1);
    TU_EXPECT_ERR(MPI_Pready(-1, req), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Pready(SPARTS, req), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Pready_range(2, 1, req), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Pready_range(0, SPARTS, req), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Pready_range(-1, 0, req), MPI_ERR_ARG);
    int out_of_range[2] = {3, SPARTS};
    TU_EXPECT_ERR(MPI_Pready_list(2, out_of_range, req), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST);
    TU_MPI(MPI_Pready(0, req));
    TU_EXPECT_ERR2(MPI_Pready(0, req), MPI_ERR_ARG, MPI_ERR_REQUEST); /* twice in a round */
    TU_EXPECT_ERR(MPI_Pready_list(3, list, req), MPI_ERR_ARG);        /* duplicate entry */
    if (!active_request_errors(&req)) {
        TU_ABORT("MPI_Request_free released an active send request");
    }
    /* Whether the rejected list marked anything is unspecified: mark what is still open. */
    for (int i = 1; i < SPARTS; ++i) {
        int rc = MPI_Pready(i, req);
        if (rc != MPI_SUCCESS) {
            TU_EXPECT_ERR2(rc, MPI_ERR_ARG, MPI_ERR_REQUEST);
            TU_CHECK_MSG(i == 1 || i == 2, "Pready(%d) failed though never marked", i);
        }
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send after errors"));
    TU_MPI(MPI_Request_free(&req));
}

static void receiver_errors(void)
{
    MPI_Request req;
    TU_MPI(MPI_Precv_init(rbuf, RPARTS, TOTAL / RPARTS, MPI_BYTE, SENDER, TAG, ec, MPI_INFO_NULL,
                          &req));
    memset(rbuf, 0, TOTAL);
    TU_MPI(MPI_Start(&req));
    int flag = 0;
    TU_EXPECT_ERR(MPI_Parrived(req, -1, &flag), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Parrived(req, RPARTS, &flag), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Pready(0, req), MPI_ERR_REQUEST); /* a receive request */
    if (!active_request_errors(&req)) {
        TU_ABORT("MPI_Request_free released an active receive request");
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive after errors"));
    tu_verify(rbuf, TOTAL, 0, SENDER, 1, "data received after errors");
    TU_MPI(MPI_Request_free(&req));
}

/* The sender's total differs from the receiver's by @p extra bytes. Both sides must finish in
 * bounded time; the receiver never writes past its buffer. Returns this side's error code. */
static int mismatch(int extra)
{
    MPI_Request req;
    int rc;
    if (tu_rank == SENDER) {
        tu_fill(sbuf, (size_t)(TOTAL + extra), 0, SENDER, 2);
        TU_MPI(MPI_Psend_init(sbuf, 2, (TOTAL + extra) / 2, MPI_BYTE, RECEIVER, TAG, ec,
                              MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        TU_MPI(MPI_Pready_range(0, 1, req));
        rc = tu_wait(&req, MPI_STATUS_IGNORE, "mismatched send");
    } else {
        memset(rbuf, 0, TOTAL);
        memset(rbuf + TOTAL, GUARD_BYTE, GUARD);
        TU_MPI(MPI_Precv_init(rbuf, 4, TOTAL / 4, MPI_BYTE, SENDER, TAG, ec, MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        rc = tu_wait(&req, MPI_STATUS_IGNORE, "mismatched receive");
        tu_verify_value(rbuf + TOTAL, GUARD, GUARD_BYTE, "guard after the receive buffer");
    }
    TU_MPI(MPI_Request_free(&req));
    return rc;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &ec);
    init_errors();
    parrived_on_ordinary_requests();
    if (tu_rank == SENDER) {
        sender_errors();
    } else {
        receiver_errors();
    }
    /* More data than the receive buffer holds: MPI_ERR_TRUNCATE at the receiver. */
    int rc = mismatch(TOTAL / 2);
    if (tu_rank == RECEIVER) {
        TU_EXPECT_ERR(rc, MPI_ERR_TRUNCATE);
    }
    /* Less data than the receive buffer expects: at least one side reports it. */
    rc = mismatch(-TOTAL / 2);
    int peer_rc = MPI_SUCCESS;
    MPI_Sendrecv(&rc, 1, MPI_INT, 1 - tu_rank, 0, &peer_rc, 1, MPI_INT, 1 - tu_rank, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    TU_CHECK_MSG(rc != MPI_SUCCESS || peer_rc != MPI_SUCCESS,
                 "sender total < receiver total went unreported on both sides");
    /* The library still works, on the same communicator and tag. */
    tu_transfer_check(ec, SENDER, RECEIVER, TAG, 4, 8, TOTAL, 3);
    tu_transfer_check(MPI_COMM_WORLD, RECEIVER, SENDER, TAG, 3, 1, 3 * 1024, 4);
    MPI_Comm_free(&ec);
    return tu_finish();
}
