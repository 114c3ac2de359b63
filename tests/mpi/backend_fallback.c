/* SPDX-License-Identifier: BSD-3-Clause */
/* A backend hint this process cannot honour never fails an init (docs/config.md, "Info keys"):
 * run with MPIPCL_RMA=0 (no RMA window), the info key mpipcl_backend=rma on either or both
 * sides initialises, falls back to persistent (MPIX_Pcl_backend says so on both sides, before
 * and after pairing), and moves the data byte for byte. On an MPI without partitioned calls
 * of its own (MPIPCL_MPI_HAS_PARTITIONED 0) the same holds for mpipcl_backend=native. The
 * CTest entry of each backend also sets MPIPCL_BACKEND (the default of requests without the
 * key), which must fall back the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PARTS 8
#define PART_BYTES 8192
#define TOTAL (PARTS * PART_BYTES)
#define ROUNDS 3

/* MPIX_Pcl_backend of @p req, checked to be "persistent" (@p when names the moment). */
static void expect_persistent(MPI_Request req, const char* what, const char* when)
{
    const char* name = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &name));
    TU_CHECK_MSG(name != NULL && strcmp(name, "persistent") == 0,
                 "%s: rank %d uses '%s' %s, expected the persistent fallback", what, tu_rank,
                 name ? name : "(null)", when);
}

/* Rank 0 sends, rank 1 receives; each side's info key mpipcl_backend is @p send_key /
 * @p recv_key (NULL: no key, MPIPCL_BACKEND decides). */
static void fallback_case(const char* what, const char* send_key, const char* recv_key, int tag)
{
    static unsigned char buf[TOTAL];
    const char* key = tu_rank == 0 ? send_key : recv_key;
    MPI_Info info = MPI_INFO_NULL;
    if (key != NULL) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpipcl_backend", key);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc =
        tu_rank == 0
            ? MPI_Psend_init(buf, PARTS, PART_BYTES, MPI_BYTE, 1, tag, MPI_COMM_WORLD, info, &req)
            : MPI_Precv_init(buf, PARTS, PART_BYTES, MPI_BYTE, 0, tag, MPI_COMM_WORLD, info, &req);
    if (info != MPI_INFO_NULL) {
        MPI_Info_free(&info);
    }
    TU_CHECK_MSG(rc == MPI_SUCCESS, "%s: init failed on rank %d (mpipcl_backend=%s)", what, tu_rank,
                 key ? key : "(none)");
    if (rc != MPI_SUCCESS) {
        return;
    }
    expect_persistent(req, what, "before pairing");
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            tu_fill(buf, TOTAL, 0, 0, round + tag);
        } else {
            memset(buf, 0, TOTAL);
        }
        TU_MPI(MPI_Start(&req));
        if (tu_rank == 0) {
            tu_pready_all(PARTS, req);
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, what));
        if (tu_rank == 1) {
            tu_verify(buf, TOTAL, 0, 0, round + tag, what);
        }
    }
    expect_persistent(req, what, "after pairing");
    TU_MPI(MPI_Request_free(&req));
    if (tu_rank == 0) {
        fprintf(stderr, "%s: persistent on both sides, %d rounds verified\n", what, ROUNDS);
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    const char* rma_env = getenv("MPIPCL_RMA");
    if (rma_env == NULL || strcmp(rma_env, "0") != 0) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: needs MPIPCL_RMA=0 (no window)\n");
        }
        MPI_Finalize();
        return TU_SKIP_CODE;
    }
    fallback_case("rma on both sides", "rma", "rma", 10);
    fallback_case("rma sender, no key on the receiver", "rma", NULL, 11);
    fallback_case("no key on the sender, rma receiver", NULL, "rma", 12);
    fallback_case("rma sender, auto receiver", "rma", "auto", 13);
    fallback_case("no key on either side", NULL, NULL, 14);
#if !MPIPCL_MPI_HAS_PARTITIONED
    fallback_case("native on both sides (no native calls)", "native", "native", 20);
    fallback_case("native sender, rma receiver", "native", "rma", 21);
#endif
    return tu_finish();
}
