/* SPDX-License-Identifier: BSD-3-Clause */
/* Edge cases: count 0 with a NULL buffer, MPI_PROC_NULL as peer (completes, no data), and
 * unknown info keys (ignored). */
#include <string.h>

#include "testutil.h"

#define TAG 12
#define ROUNDS 2
#define SENTINEL 0x5C

static void count_zero(void)
{
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(NULL, 4, 0, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(NULL, 3, 0, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        TU_MPI(MPI_Start(&req));
        if (tu_rank == 0) {
            TU_MPI(MPI_Pready_range(0, 3, req));
        }
        MPI_Status st;
        TU_MPI(tu_wait(&req, &st, "count 0 transfer"));
        if (tu_rank == 1) {
            int count = -1;
            MPI_Get_count(&st, MPI_INT, &count);
            TU_CHECK_MSG(st.MPI_SOURCE == 0 && st.MPI_TAG == TAG && count == 0,
                         "count 0 status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
                         count);
        }
    }
    TU_MPI(MPI_Request_free(&req));
}

static void proc_null(void)
{
    int sbuf[40], rbuf[40];
    memset(sbuf, 1, sizeof sbuf);
    memset(rbuf, SENTINEL, sizeof rbuf);
    MPI_Request req[2];
    TU_MPI(MPI_Psend_init(sbuf, 4, 10, MPI_INT, MPI_PROC_NULL, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[0]));
    TU_MPI(MPI_Precv_init(rbuf, 2, 20, MPI_INT, MPI_PROC_NULL, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[1]));
    for (int round = 0; round < ROUNDS; ++round) {
        TU_MPI(MPI_Startall(2, req));
        TU_MPI(MPI_Pready_range(0, 3, req[0]));
        MPI_Status st;
        TU_MPI(tu_wait(&req[0], MPI_STATUS_IGNORE, "send to MPI_PROC_NULL"));
        TU_MPI(tu_wait(&req[1], &st, "receive from MPI_PROC_NULL"));
        int count = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        TU_CHECK_MSG(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
                     "MPI_PROC_NULL status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
                     count);
        tu_verify_value(rbuf, sizeof rbuf, SENTINEL, "buffer of a receive from MPI_PROC_NULL");
    }
    TU_MPI(MPI_Request_free(&req[0]));
    TU_MPI(MPI_Request_free(&req[1]));
}

static void unknown_info_keys(void)
{
    static unsigned char buf[4096];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_such_key", "1");
    MPI_Info_set(info, "mpipcl_no_such_key", "yes");
    MPI_Request req;
    if (tu_rank == 0) {
        tu_fill(buf, sizeof buf, 0, 0, 0);
        TU_MPI(
            MPI_Psend_init(buf, 4, sizeof buf / 4, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(
            MPI_Precv_init(buf, 2, sizeof buf / 2, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, info, &req));
    }
    MPI_Info_free(&info); /* the requests must not depend on the info object */
    TU_MPI(MPI_Start(&req));
    if (tu_rank == 0) {
        tu_pready_all(4, req);
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "transfer with unknown info keys"));
    if (tu_rank == 1) {
        tu_verify(buf, sizeof buf, 0, 0, 0, "data of a transfer with unknown info keys");
    }
    TU_MPI(MPI_Request_free(&req));
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    count_zero();
    unknown_info_keys();
    proc_null();
    return tu_finish();
}
