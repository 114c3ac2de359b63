/* SPDX-License-Identifier: BSD-3-Clause */
/* Matching: same (comm, peer, tag) pairs match in init order, not Start order; library traffic
 * never matches application messages, not even wildcard receives on the same communicator. */
#include <string.h>

#include "testutil.h"

#define TAG 4
#define TOTAL 4096
#define APP_INTS 16

/* Two sends with identical envelopes, started in reverse order, land in the receives in the
 * order of the init calls; the match persists over rounds. */
static void init_order(void)
{
    static unsigned char a[TOTAL], b[TOTAL];
    MPI_Request req[2];
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(a, 4, TOTAL / 4, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req[0]));
        TU_MPI(MPI_Psend_init(b, 2, TOTAL / 2, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req[1]));
    } else {
        TU_MPI(MPI_Precv_init(a, 2, TOTAL / 2, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req[0]));
        TU_MPI(MPI_Precv_init(b, 8, TOTAL / 8, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req[1]));
    }
    for (int round = 0; round < 3; ++round) {
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req[1]));
            TU_MPI(MPI_Start(&req[0]));
            tu_fill(a, TOTAL, 0, 100, round);
            tu_fill(b, TOTAL, 0, 200, round);
            TU_MPI(MPI_Pready_range(0, 1, req[1]));
            TU_MPI(MPI_Pready_range(0, 3, req[0]));
        } else {
            memset(a, 0, TOTAL);
            memset(b, 0, TOTAL);
            /* The receiver's Start order changes per round too. */
            TU_MPI(MPI_Start(&req[round % 2]));
            TU_MPI(MPI_Start(&req[1 - round % 2]));
        }
        TU_MPI(tu_waitall(2, req, MPI_STATUSES_IGNORE, "init-order pair"));
        if (tu_rank == 1) {
            tu_verify(a, TOTAL, 0, 100, round, "first-initialized receive");
            tu_verify(b, TOTAL, 0, 200, round, "second-initialized receive");
        }
    }
    TU_MPI(MPI_Request_free(&req[0]));
    TU_MPI(MPI_Request_free(&req[1]));
}

/* A partitioned exchange in both directions on MPI_COMM_WORLD with tag TAG, fresh requests. */
static void exchange(int round)
{
    int peer = 1 - tu_rank;
    static unsigned char sbuf[TOTAL], rbuf[TOTAL];
    MPI_Request part[2];
    tu_fill(sbuf, TOTAL, 0, tu_rank, round);
    memset(rbuf, 0, TOTAL);
    TU_MPI(MPI_Psend_init(sbuf, 8, TOTAL / 8, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &part[0]));
    TU_MPI(MPI_Precv_init(rbuf, 4, TOTAL / 4, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &part[1]));
    TU_MPI(MPI_Startall(2, part));
    tu_pready_all(8, part[0]);
    TU_MPI(tu_waitall(2, part, MPI_STATUSES_IGNORE, "partitioned exchange"));
    tu_verify(rbuf, TOTAL, 0, peer, round, "partitioned data");
    TU_MPI(MPI_Request_free(&part[0]));
    TU_MPI(MPI_Request_free(&part[1]));
}

/* An application message with the partitioned tag, in flight before the partitioned requests
 * exist, is received afterwards by the application, not consumed by the library. */
static void unexpected_app_message(void)
{
    int peer = 1 - tu_rank;
    int out[APP_INTS], in[APP_INTS];
    tu_fill(out, sizeof out, 0, tu_rank, 300);
    MPI_Request early;
    TU_MPI(MPI_Isend(out, APP_INTS, MPI_INT, peer, TAG, MPI_COMM_WORLD, &early));
    exchange(301);
    MPI_Status st;
    TU_MPI(MPI_Recv(in, APP_INTS, MPI_INT, peer, TAG, MPI_COMM_WORLD, &st));
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    TU_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == TAG && count == APP_INTS);
    tu_verify(in, sizeof in, 0, peer, 300, "early application message");
    TU_MPI(tu_wait(&early, MPI_STATUS_IGNORE, "early send"));
}

/* A posted MPI_ANY_SOURCE/MPI_ANY_TAG receive on the same communicator sees no library traffic
 * while a partitioned exchange runs, and then gets exactly the application's message. */
static void wildcard_receive(MPI_Comm ctl)
{
    int peer = 1 - tu_rank;
    int out[APP_INTS], in[APP_INTS];
    tu_fill(out, sizeof out, 0, tu_rank, 400);
    memset(in, 0, sizeof in);
    MPI_Request wild;
    TU_MPI(MPI_Irecv(in, APP_INTS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &wild));
    exchange(401);
    int flag = 1;
    MPI_Status st;
    TU_MPI(MPI_Test(&wild, &flag, &st));
    TU_CHECK_MSG(!flag, "wildcard receive matched library traffic (source %d, tag %d)",
                 st.MPI_SOURCE, st.MPI_TAG);
    MPI_Barrier(ctl); /* both ranks checked before any application message is sent */
    TU_MPI(MPI_Send(out, APP_INTS, MPI_INT, peer, TAG + 1, MPI_COMM_WORLD));
    if (!flag) {
        TU_MPI(tu_wait(&wild, &st, "wildcard receive"));
        int count = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        TU_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == TAG + 1 && count == APP_INTS);
        tu_verify(in, sizeof in, 0, peer, 400, "application message in the wildcard receive");
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    init_order();
    unexpected_app_message();
    wildcard_receive(ctl);
    MPI_Comm_free(&ctl);
    return tu_finish();
}
