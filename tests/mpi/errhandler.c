/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors of partitioned calls invoke the error handler of the request's communicator (a custom
 * handler on a duplicate communicator counts calls), not the handler of MPI_COMM_WORLD/SELF. */
#include <string.h>

#include "testutil.h"

#define TAG 19
#define PARTS 4
#define TOTAL 1024

static MPI_Comm hc;
static unsigned char buf[TOTAL];
static int hc_calls, hc_wrong_comm, other_calls, last_class;

static void on_hc(MPI_Comm* comm, int* code, ...)
{
    ++hc_calls;
    if (*comm != hc) {
        ++hc_wrong_comm;
    }
    MPI_Error_class(*code, &last_class);
}

static void on_other(MPI_Comm* comm, int* code, ...)
{
    (void)comm;
    (void)code;
    ++other_calls;
}

/* The call returned an error of class @p cls and invoked hc's handler exactly once. */
#define EXPECT_HANDLED(call, cls)                                                                  \
    do {                                                                                           \
        int before_ = hc_calls;                                                                    \
        TU_EXPECT_ERR((call), (cls));                                                              \
        TU_CHECK_MSG(hc_calls == before_ + 1, "%s: handler called %d times, expected once", #call, \
                     hc_calls - before_);                                                          \
        TU_CHECK_MSG(last_class == (cls), "%s: handler saw class %d, expected %d", #call,          \
                     last_class, (cls));                                                           \
    } while (0)

/* A request array mixing a partitioned round with an ordinary receive that fails (truncated,
 * on hc): MPI_Waitall returns MPI_ERR_IN_STATUS with the failure in the ordinary request's
 * status, the partitioned round completes with its data, and one error handler runs once —
 * the MPI's own call already ran it, mpipcl must not run one again. (Which handler differs:
 * Open MPI takes the request's communicator, MPICH MPI_COMM_WORLD/SELF.) */
static void check_mixed_array_error(MPI_Request* req)
{
    unsigned char small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    MPI_Request pair[2];
    MPI_Status st[2];
    const int handled = hc_calls + other_calls;
    if (tu_rank == 0) {
        tu_fill(buf, TOTAL, 0, 0, 1);
        TU_MPI(MPI_Start(req));
        TU_MPI(MPI_Pready_range(0, PARTS - 1, *req));
        TU_MPI(MPI_Isend(small, 8, MPI_BYTE, 1, TAG + 1, hc, &pair[1]));
    } else {
        memset(buf, 0, TOTAL);
        TU_MPI(MPI_Start(req));
        TU_MPI(MPI_Irecv(small, 4, MPI_BYTE, 0, TAG + 1, hc, &pair[1]));
    }
    pair[0] = *req;
    const int rc = MPI_Waitall(2, pair, st);
    if (tu_rank == 0) {
        TU_CHECK_MSG(rc == MPI_SUCCESS, "sender's mixed MPI_Waitall failed (%d)", rc);
    } else {
        int cls = MPI_SUCCESS;
        int st_cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        MPI_Error_class(st[1].MPI_ERROR, &st_cls);
        TU_CHECK_MSG(cls == MPI_ERR_IN_STATUS, "mixed MPI_Waitall: class %d, expected %d", cls,
                     MPI_ERR_IN_STATUS);
        TU_CHECK_MSG(st_cls == MPI_ERR_TRUNCATE, "truncated receive's status: class %d", st_cls);
        TU_CHECK_MSG(st[0].MPI_ERROR == MPI_SUCCESS, "partitioned request's status: error %d",
                     st[0].MPI_ERROR);
        tu_verify(buf, TOTAL, 0, 0, 1, "received data beside a failed request");
    }
    const int runs = hc_calls + other_calls - handled;
    TU_CHECK_MSG(runs == (tu_rank == 1 ? 1 : 0), "error handlers ran %d times, expected %d", runs,
                 tu_rank == 1 ? 1 : 0);
    other_calls = 0;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Errhandler counting, other;
    MPI_Comm_create_errhandler(on_hc, &counting);
    MPI_Comm_create_errhandler(on_other, &other);
    MPI_Comm_dup(MPI_COMM_WORLD, &hc);
    MPI_Comm_set_errhandler(hc, counting);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, other);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, other);
    /* Errors tied to no object go to MPI_COMM_SELF (MPI_COMM_WORLD before MPI-4), once each. */
    TU_EXPECT_ERR(MPIX_Pcl_interposed(NULL), MPI_ERR_ARG);
    TU_EXPECT_ERR(MPI_Parrived(MPI_REQUEST_NULL, 0, NULL), MPI_ERR_ARG);
    TU_CHECK_MSG(other_calls == 2, "MPI_COMM_WORLD/SELF handler called %d times, expected 2",
                 other_calls);
    other_calls = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    int flag = 0;
    EXPECT_HANDLED(MPI_Psend_init(buf, 0, 1, MPI_BYTE, 1 - tu_rank, TAG, hc, MPI_INFO_NULL, &req),
                   MPI_ERR_ARG);
    EXPECT_HANDLED(MPI_Precv_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, MPI_ANY_SOURCE, TAG, hc,
                                  MPI_INFO_NULL, &req),
                   MPI_ERR_RANK);
    if (tu_rank == 0) {
        TU_MPI(
            MPI_Psend_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 1, TAG, hc, MPI_INFO_NULL, &req));
        EXPECT_HANDLED(MPI_Pready(0, req), MPI_ERR_REQUEST); /* before Start */
        TU_MPI(MPI_Start(&req));
        tu_fill(buf, TOTAL, 0, 0, 0);
        EXPECT_HANDLED(MPI_Pready(PARTS, req), MPI_ERR_ARG);
        EXPECT_HANDLED(MPI_Pready_range(1, 0, req), MPI_ERR_ARG);
        EXPECT_HANDLED(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST);
        TU_MPI(MPI_Pready_range(0, PARTS - 1, req));
    } else {
        memset(buf, 0, TOTAL);
        TU_MPI(
            MPI_Precv_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 0, TAG, hc, MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        EXPECT_HANDLED(MPI_Parrived(req, -1, &flag), MPI_ERR_ARG);
        EXPECT_HANDLED(MPI_Pready(0, req), MPI_ERR_REQUEST);
    }
    /* The completion-family calls on the active request, each through the request's own
     * communicator: restart, the same request twice in one Startall, cancel, free, a NULL flag. */
    EXPECT_HANDLED(MPI_Start(&req), MPI_ERR_REQUEST);
    MPI_Request twice[2] = {req, req};
    EXPECT_HANDLED(MPI_Startall(2, twice), MPI_ERR_REQUEST);
    EXPECT_HANDLED(MPI_Cancel(&req), MPI_ERR_REQUEST);
    EXPECT_HANDLED(MPI_Request_free(&req), MPI_ERR_REQUEST);
    TU_CHECK_MSG(req != MPI_REQUEST_NULL, "a failed MPI_Request_free released the handle");
    EXPECT_HANDLED(MPI_Test(&req, NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG);
    EXPECT_HANDLED(MPI_Request_get_status(req, NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG);
    int calls = hc_calls;
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "transfer"));
    if (tu_rank == 1) {
        tu_verify(buf, TOTAL, 0, 0, 0, "received data");
    }
    TU_CHECK_MSG(hc_calls == calls, "handler called by a successful transfer");
    check_mixed_array_error(&req);
    TU_MPI(MPI_Request_free(&req));
    TU_CHECK_MSG(hc_wrong_comm == 0, "handler called with another communicator %d times",
                 hc_wrong_comm);
    TU_CHECK_MSG(other_calls == 0, "MPI_COMM_WORLD/SELF handler called %d times", other_calls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&counting);
    MPI_Errhandler_free(&other);
    MPI_Comm_free(&hc);
    return tu_finish();
}
