/* SPDX-License-Identifier: BSD-3-Clause */
/* A member that starts its collective after the others have failed and freed theirs still
 * gets an error, while the others sit in a plain blocking MPI call.
 * Three ranks, a bcast from rank 0. Rank 1 passes another number of partitions, so rank 0's
 * and rank 1's rounds fail; rank 0's transfers with rank 2 fail before they paired (rank 2
 * has not started). Rank 0 and rank 1 free their requests and enter a plain MPI_Barrier (no
 * library code runs in there); rank 0 first tells rank 2 to begin. Rank 2 then initializes
 * and starts a matching bcast: its transfers pair only with rank 0's failed ones, which
 * answer through rank 0's progress thread. Rank 2's wait must return the others' error,
 * MPI_ERR_ARG (and the barrier then completes), rather than hang until the watchdog. Two
 * matching bcasts on all three ranks work afterwards, data checked. Needs the progress thread
 * (skips below MPI_THREAD_MULTIPLE or with MPIPCL_PROGRESS=caller: without it the late member
 * waits until rank 0 calls the library again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PARTS 4
#define COUNT 256
#define GO_TAG 5

static int failed_wait(MPI_Request* req, const char* what)
{
    const int rc = tu_wait(req, MPI_STATUS_IGNORE, what);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    TU_CHECK_MSG(rc != MPI_SUCCESS, "%s: the wait returned success", what);
    TU_CHECK_MSG(cls == MPI_ERR_ARG, "%s: class %d (code %d)", what, cls, rc);
    return rc;
}

static void bcast_round(MPI_Comm comm, int* buf, int parts, int count, int round)
{
    MPI_Request req;
    TU_MPI(MPIX_Pbcast_init(buf, parts, count, MPI_INT, 0, comm, MPI_INFO_NULL, &req));
    TU_MPI(MPI_Start(&req));
    if (tu_rank == 0) {
        TU_MPI(MPI_Pready_range(0, parts - 1, req));
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "the matching bcast"));
    TU_MPI(MPI_Request_free(&req));
    for (int i = 0; i < parts * count; ++i) {
        if (!TU_CHECK_MSG(buf[i] == round * 1000 + i, "element %d: %d", i, buf[i])) {
            break;
        }
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 3);
    if (tu_progress_thread_off()) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: needs the progress thread\n");
        }
        MPI_Finalize();
        return TU_SKIP_CODE;
    }
    MPI_Comm comm;
    MPI_Comm ctl;
    TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    TU_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    int* buf = calloc(PARTS * COUNT, sizeof(int));
    TU_CHECK(buf != NULL);
    MPI_Request req;
    int go = 1;
    if (tu_rank == 2) {
        TU_MPI(MPI_Recv(&go, 1, MPI_INT, 0, GO_TAG, ctl, MPI_STATUS_IGNORE));
    }
    const int parts = tu_rank == 1 ? 2 * PARTS : PARTS;
    const int count = tu_rank == 1 ? COUNT / 2 : COUNT;
    TU_MPI(MPIX_Pbcast_init(buf, parts, count, MPI_INT, 0, comm, MPI_INFO_NULL, &req));
    TU_MPI(MPI_Start(&req));
    if (tu_rank == 0) {
        TU_MPI(MPI_Pready_range(0, PARTS - 1, req));
    }
    failed_wait(&req, tu_rank == 2 ? "the late member" : "the disagreeing bcast");
    TU_MPI(MPI_Request_free(&req));
    if (tu_rank == 0) {
        TU_MPI(MPI_Send(&go, 1, MPI_INT, 2, GO_TAG, ctl));
    }
    TU_MPI(MPI_Barrier(ctl));
    for (int round = 1; round <= 2; ++round) {
        for (int i = 0; i < PARTS * COUNT; ++i) {
            buf[i] = tu_rank == 0 ? round * 1000 + i : -1;
        }
        bcast_round(comm, buf, PARTS, COUNT, round);
    }
    free(buf);
    TU_MPI(MPI_Comm_free(&ctl));
    TU_MPI(MPI_Comm_free(&comm));
    return tu_finish();
}
