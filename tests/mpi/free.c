/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Request_free of never-started and of completed partitioned requests leaves nothing behind
 * that could steal a later transfer's messages on the same communicator and tag. */
#include "testutil.h"

#define TAG 16
#define TOTAL 8192
#define MANY 50
#define REPEATS 20

enum { SENDER = 0, RECEIVER = 1 };

/* Init and free a partitioned request on the given side(s) without ever starting it. */
static void init_and_free(int sender_side, int receiver_side, int times)
{
    static unsigned char buf[TOTAL];
    for (int i = 0; i < times; ++i) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (tu_rank == SENDER && sender_side) {
            TU_MPI(MPI_Psend_init(buf, 4, TOTAL / 4, MPI_BYTE, RECEIVER, TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req));
        } else if (tu_rank == RECEIVER && receiver_side) {
            TU_MPI(MPI_Precv_init(buf, 8, TOTAL / 8, MPI_BYTE, SENDER, TAG, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req));
        }
        if (req != MPI_REQUEST_NULL) {
            TU_MPI(MPI_Request_free(&req));
            TU_CHECK(req == MPI_REQUEST_NULL);
        }
    }
}

/* Free after completed rounds; the handle becomes MPI_REQUEST_NULL. */
static void free_after_completion(void)
{
    static unsigned char buf[TOTAL];
    MPI_Request req;
    if (tu_rank == SENDER) {
        TU_MPI(MPI_Psend_init(buf, 2, TOTAL / 2, MPI_BYTE, RECEIVER, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, 16, TOTAL / 16, MPI_BYTE, SENDER, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < 2; ++round) {
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            tu_fill(buf, TOTAL, 0, SENDER, 50 + round);
            tu_pready_all(2, req);
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "round before free"));
        if (tu_rank == RECEIVER) {
            tu_verify(buf, TOTAL, 0, SENDER, 50 + round, "round before free");
        }
    }
    TU_MPI(MPI_Request_free(&req));
    TU_CHECK(req == MPI_REQUEST_NULL);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    /* Repeated, because a leftover of a freed request may race with the next handshake. */
    for (int rep = 0; rep < REPEATS; ++rep) {
        int round = 10 * rep;
        init_and_free(1, 1, 1);
        tu_transfer_check(MPI_COMM_WORLD, SENDER, RECEIVER, TAG, 4, 8, TOTAL, round + 1);
        init_and_free(0, 1, 1);
        tu_transfer_check(MPI_COMM_WORLD, SENDER, RECEIVER, TAG, 8, 4, TOTAL, round + 2);
        init_and_free(1, 0, 1);
        tu_transfer_check(MPI_COMM_WORLD, SENDER, RECEIVER, TAG, 1, 16, TOTAL, round + 3);
    }
    init_and_free(1, 1, MANY);
    tu_transfer_check(MPI_COMM_WORLD, SENDER, RECEIVER, TAG, 16, 1, TOTAL, 4);
    free_after_completion();
    tu_transfer_check(MPI_COMM_WORLD, SENDER, RECEIVER, TAG, 4, 4, TOTAL, 5);
    return tu_finish();
}
