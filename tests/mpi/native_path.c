/* SPDX-License-Identifier: BSD-3-Clause */
/* mpipcl_backend=native is the MPI's own partitioned path where the MPI has one; where it has
 * none the hint falls back to mpipcl's persistent backend (MPIX_Pcl_backend says so) and the
 * data moves; persistent requests are the control. */
#include <string.h>

#include "testutil.h"

#define TAG 21
#define PARTS 4
#define TOTAL (PARTS * 4096)
#define ROUNDS 3

/* Creates this rank's side (rank 0 sends, rank 1 receives) with mpipcl_backend=backend. */
static int init_side(const char* backend, unsigned char* buf, MPI_Request* req)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_backend", backend);
    const int rc = tu_rank == 0 ? MPI_Psend_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 1, TAG,
                                                 MPI_COMM_WORLD, info, req)
                                : MPI_Precv_init(buf, PARTS, TOTAL / PARTS, MPI_BYTE, 0, TAG,
                                                 MPI_COMM_WORLD, info, req);
    MPI_Info_free(&info);
    return rc;
}

/*
 * Whether mpipcl owns the active request @p req: MPIX_Pbuf_prepare knows only requests in
 * mpipcl's handle registry (on a started receive it returns at once; on a started send, once
 * the receiver has started) and reports MPI_ERR_REQUEST for any other handle.
 */
static int owned_by_mpipcl(MPI_Request req)
{
    const int rc = MPIX_Pbuf_prepare(req);
    if (rc == MPI_SUCCESS) {
        return 1;
    }
    TU_EXPECT_ERR(rc, MPI_ERR_REQUEST);
    return 0;
}

/* ROUNDS byte-verified transfers; returns through TU_CHECKs. */
static void transfer(const char* backend, unsigned char* buf, MPI_Request* req, int expect_owned)
{
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            tu_fill(buf, TOTAL, 0, 0, round);
        } else {
            memset(buf, 0, TOTAL);
        }
        TU_MPI(MPI_Start(req));
        if (round == 0) {
            /* The receiver starts first, so the sender's check does not wait forever. */
            MPI_Barrier(MPI_COMM_WORLD);
            TU_CHECK_MSG(owned_by_mpipcl(*req) == expect_owned,
                         "backend %s: request %s mpipcl's registry", backend,
                         expect_owned ? "missing from" : "found in");
        }
        if (tu_rank == 0) {
            tu_pready_all(PARTS, *req);
        }
        TU_MPI(tu_wait(req, MPI_STATUS_IGNORE, backend));
        if (tu_rank == 1) {
            tu_verify(buf, TOTAL, 0, 0, round, backend);
        }
    }
    TU_MPI(MPI_Request_free(req));
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int interposed = 0;
    MPIX_Pcl_interposed(&interposed);
    TU_CHECK_MSG(interposed, "libmpipcl is not interposed: the control below would be void");
    static unsigned char buf[TOTAL];
    MPI_Request req = MPI_REQUEST_NULL;

    /* Control: the check can tell mpipcl's requests apart. */
    if (TU_MPI(init_side("persistent", buf, &req)) == MPI_SUCCESS) {
        transfer("persistent", buf, &req, 1);
    }

    const int rc = init_side("native", buf, &req);
#if MPIPCL_MPI_HAS_PARTITIONED
    TU_CHECK_MSG(rc == MPI_SUCCESS, "native init failed although the MPI has the calls");
    if (rc == MPI_SUCCESS) {
        transfer("native", buf, &req, 0);
    }
#else
    TU_CHECK_MSG(rc == MPI_SUCCESS, "native init failed instead of falling back");
    if (rc == MPI_SUCCESS) {
        const char* name = NULL;
        TU_MPI(MPIX_Pcl_backend(req, &name));
        TU_CHECK_MSG(name != NULL && strcmp(name, "persistent") == 0,
                     "native on an MPI without partitioned calls uses '%s', not persistent",
                     name ? name : "(null)");
        transfer("native (fallen back to persistent)", buf, &req, 1);
    }
#endif
    return tu_finish();
}
