/* SPDX-License-Identifier: BSD-3-Clause */
/* Init, Start and Pready are local: the sender finishes them and then blocks in MPI_Send to the
 * receiver, which creates its partitioned receive only after that message arrived. */
#include <string.h>

#include "testutil.h"

#define TAG 17
#define SPARTS 8
#define RPARTS 2
#define TOTAL (256 * 1024)

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    static unsigned char buf[TOTAL];
    int token = 42;
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, SPARTS, TOTAL / SPARTS, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        tu_fill(buf, TOTAL, 0, 0, 0);
        tu_pready_all(SPARTS, req);
        /* Synchronous mode: returns only once the receiver has matched it. */
        TU_MPI(MPI_Ssend(&token, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
    } else {
        int got = 0;
        TU_MPI(MPI_Recv(&got, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        TU_CHECK(got == token);
        memset(buf, 0, TOTAL);
        TU_MPI(MPI_Precv_init(buf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
        tu_verify(buf, TOTAL, 0, 0, 0, "received data");
    }
    TU_MPI(MPI_Request_free(&req));
    return tu_finish();
}
