/* SPDX-License-Identifier: BSD-3-Clause */
/* mpipcl_backend=auto (the default): each request resolves at init to persistent or rma by
 * its total size against MPIPCL_AUTO_RMA_BYTES, both sides alike; MPIX_Pcl_backend names the
 * choice before and after pairing; data arrives byte for byte; MPIX_Pcl_backend's errors.
 * Run with MPIPCL_BACKEND=auto; with MPIPCL_AUTO_RMA_BYTES (or MPIPCL_TEST_AUTO_RMA_BYTES, the
 * crossover of the tuning file in MPIPCL_TUNING_FILE; 0 for a file auto must ignore) set the
 * expected choice is checked exactly, without it only that both sides agree. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define ROUNDS 3

/* Whether this process has an RMA window: an explicit rma request gets the rma backend
 * (without a window the hint falls back to persistent at init). */
static int rma_available(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_backend", "rma");
    char byte = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    TU_MPI(MPI_Psend_init(&byte, 1, 1, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, info, &req));
    MPI_Info_free(&info);
    const char* name = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &name));
    const int rma = name != NULL && strcmp(name, "rma") == 0;
    TU_MPI(MPI_Request_free(&req));
    return rma;
}

/* One request of @p bytes (8 partitions) from rank 0 to rank 1 with @p info; checks the
 * backend named before the first round and after the last against @p expect (NULL: only that
 * both ranks name the same) and the data of every round. */
static void check_size(long bytes, MPI_Info info, const char* expect, int tag)
{
    unsigned char* buf = malloc((size_t)bytes);
    TU_CHECK(buf != NULL);
    MPI_Request req;
    const int parts = 8;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, parts, bytes / parts, MPI_BYTE, 1, tag, MPI_COMM_WORLD, info,
                              &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, parts, bytes / parts, MPI_BYTE, 0, tag, MPI_COMM_WORLD, info,
                              &req));
    }
    const char* before = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &before));
    TU_CHECK_MSG(
        before != NULL && (strcmp(before, "persistent") == 0 || strcmp(before, "rma") == 0),
        "%ld bytes: backend before pairing is '%s'", bytes, before ? before : "(null)");
    if (expect != NULL) {
        TU_CHECK_MSG(strcmp(before, expect) == 0, "%ld bytes: auto chose %s, expected %s", bytes,
                     before, expect);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            tu_fill(buf, (size_t)bytes, 0, 0, round + tag);
            TU_MPI(MPI_Start(&req));
            for (int p = parts - 1; p >= 0; --p) {
                TU_MPI(MPI_Pready(p, req));
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "auto send"));
        } else {
            memset(buf, 0, (size_t)bytes);
            TU_MPI(MPI_Start(&req));
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "auto recv"));
            tu_verify(buf, (size_t)bytes, 0, 0, round + tag, "auto recv");
        }
    }
    const char* after = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &after));
    TU_CHECK_MSG(after != NULL && strcmp(after, before) == 0,
                 "%ld bytes: backend %s before pairing, %s after", bytes, before,
                 after ? after : "(null)");
    /* Both sides of the pair name the same backend. */
    char mine[16] = {0};
    char theirs[16] = {0};
    strncpy(mine, after ? after : "", sizeof mine - 1);
    MPI_Sendrecv(mine, sizeof mine, MPI_CHAR, 1 - tu_rank, 99, theirs, sizeof theirs, MPI_CHAR,
                 1 - tu_rank, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    TU_CHECK_MSG(strcmp(mine, theirs) == 0, "%ld bytes: this side uses %s, the peer %s", bytes,
                 mine, theirs);
    TU_MPI(MPI_Request_free(&req));
    free(buf);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* MPIX_Pcl_backend's errors */
    /* The expected crossover: MPIPCL_TEST_AUTO_RMA_BYTES (the rule of a tuning file the
     * test entry names), else MPIPCL_AUTO_RMA_BYTES. */
    const char* env = getenv("MPIPCL_TEST_AUTO_RMA_BYTES");
    if (env == NULL) {
        env = getenv("MPIPCL_AUTO_RMA_BYTES");
    }
    const long threshold = env != NULL ? atol(env) : -1;
    const int rma = rma_available();
    const long sizes[] = {4096, 64 * 1024, 1024 * 1024};
    MPI_Info auto_info;
    MPI_Info_create(&auto_info);
    MPI_Info_set(auto_info, "mpipcl_backend", "auto");
    for (int i = 0; i < 3; ++i) {
        const char* expect = NULL;
        if (threshold >= 0) {
            expect = rma && threshold > 0 && sizes[i] >= threshold ? "rma" : "persistent";
        }
        check_size(sizes[i], MPI_INFO_NULL, expect, 10 + i); /* the default (MPIPCL_BACKEND) */
        check_size(sizes[i], auto_info, expect, 20 + i);     /* asked for by info */
    }
    MPI_Info_free(&auto_info);

    /* MPIX_Pcl_backend's errors. */
    const char* name = NULL;
    TU_EXPECT_ERR(MPIX_Pcl_backend(MPI_REQUEST_NULL, &name), MPI_ERR_REQUEST);
    int dummy = 0;
    MPI_Request plain;
    TU_MPI(MPI_Irecv(&dummy, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &plain));
    TU_EXPECT_ERR(MPIX_Pcl_backend(plain, &name), MPI_ERR_REQUEST);
    TU_MPI(MPI_Wait(&plain, MPI_STATUS_IGNORE));
    MPI_Request req;
    TU_MPI(MPI_Psend_init(&dummy, 1, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req));
    TU_EXPECT_ERR(MPIX_Pcl_backend(req, NULL), MPI_ERR_ARG);
    TU_MPI(MPI_Request_free(&req));
    return tu_finish();
}
