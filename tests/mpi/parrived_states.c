/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Parrived reports flag = true on MPI_REQUEST_NULL and on never-started or completed requests.
 */
#include <string.h>

#include "testutil.h"

#define PARTS 4
#define PART_BYTES 256
#define TAG 9

static void expect_arrived(MPI_Request req, const char* what)
{
    for (int p = 0; p < PARTS; ++p) {
        int flag = 0;
        TU_MPI(MPI_Parrived(req, p, &flag));
        TU_CHECK_MSG(flag, "%s: MPI_Parrived(partition %d) = false, expected true", what, p);
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    unsigned char buf[PARTS * PART_BYTES];
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, PARTS, PART_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        tu_fill(buf, sizeof buf, 0, 0, 0);
        TU_MPI(MPI_Pready_range(0, PARTS - 1, req));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
    } else {
        memset(buf, 0, sizeof buf);
        TU_MPI(MPI_Precv_init(buf, PARTS, PART_BYTES, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
        expect_arrived(req, "never-started request");
        TU_MPI(MPI_Start(&req));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
        tu_verify(buf, sizeof buf, 0, 0, 0, "received data");
        expect_arrived(req, "completed (inactive) request");
    }
    TU_MPI(MPI_Request_free(&req));
    int flag = 0;
    TU_MPI(MPI_Parrived(MPI_REQUEST_NULL, 0, &flag));
    TU_CHECK_MSG(flag, "MPI_Parrived(MPI_REQUEST_NULL) = false, expected true");
    return tu_finish();
}
