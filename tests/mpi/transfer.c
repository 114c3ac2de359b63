/* SPDX-License-Identifier: BSD-3-Clause */
/* Basic partitioned transfer rank 0 -> 1: args <send parts> <recv parts> <total ints> [rounds]. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define TAG 11

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    int sparts = tu_arg_int(argc, argv, 1, 16);
    int rparts = tu_arg_int(argc, argv, 2, 32);
    int total = tu_arg_int(argc, argv, 3, 4096);
    int rounds = tu_arg_int(argc, argv, 4, 3);
    if (!TU_CHECK_MSG(sparts > 0 && rparts > 0 && total % sparts == 0 && total % rparts == 0,
                      "bad arguments %d %d %d", sparts, rparts, total)) {
        return tu_finish();
    }
    size_t bytes = (size_t)total * sizeof(int);
    unsigned char* buf = malloc(bytes + GUARD);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, sparts, total / sparts, MPI_INT, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, rparts, total / rparts, MPI_INT, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < rounds; ++round) {
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req));
            /* Fill after Start: the buffer belongs to the application until Pready. */
            tu_fill(buf, bytes, 0, 0, round);
            tu_pready_all(sparts, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
        } else {
            memset(buf, 0, bytes);
            memset(buf + bytes, GUARD_BYTE, GUARD);
            TU_MPI(MPI_Start(&req));
            MPI_Status st;
            TU_MPI(tu_wait(&req, &st, "receive"));
            tu_verify(buf, bytes, 0, 0, round, "received data");
            tu_verify_value(buf + bytes, GUARD, GUARD_BYTE, "guard after receive buffer");
            int count = -1;
            MPI_Get_count(&st, MPI_INT, &count);
            TU_CHECK_MSG(count == total, "MPI_Get_count = %d, expected %d", count, total);
            TU_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == TAG);
        }
    }
    TU_MPI(MPI_Request_free(&req));
    free(buf);
    return tu_finish();
}
