/* SPDX-License-Identifier: BSD-3-Clause */
/* A sender whose backend cannot be created after pairing: both MPI_Waits return, with an error,
 * within seconds; the receiver must not hang.
 *
 * Rank 0 sends 1 partition of 2^31 MPI_BYTE (count is MPI_Count) with mpipcl_messages=1; rank 1
 * receives 1 partition of 2^29 MPI_INT. The totals are equal, so pairing succeeds, but the
 * persistent backend's one internal message on the sender would have 2^31 > INT_MAX elements
 * and is rejected (MPI_ERR_COUNT) while the receiver's 2^29 elements are fine. The buffers are
 * mmap'ed and never touched (virtual memory only).
 * Asserted (MPI_ERRORS_RETURN on MPI_COMM_WORLD), a watchdog of WAIT_S (rma WAIT_S_RMA) per Wait:
 * - persistent: the sender's MPI_Wait returns an error of class MPI_ERR_COUNT, the receiver's
 *   MPI_Wait returns an error (any class), and no page of the receive buffer was written
 *   (mincore: still not resident).
 * - rma (either side's MPIX_Pcl_backend names rma before pairing; MPIPCL_BACKEND=rma without
 *   a window falls back to persistent, and the persistent assertions apply): the backend may
 *   take another path (one MPI_Put per flattened block, a fall-back to the persistent
 *   backend ...). Asserted: neither Wait hangs and both sides agree — both fail (the sender
 *   with MPI_ERR_COUNT or any other class), or both succeed
 *   and the receiver holds the sender's bytes (zeros: the send buffer is untouched anonymous
 *   memory), checked without writing (only then does the receive buffer become resident).
 * Then, whatever happened, a fresh small request pair on another tag must work normally.
 * Skipped where 2 x 2 GiB of address space cannot be reserved.
 */
#define _GNU_SOURCE /* MAP_NORESERVE, mincore */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"

#define TAG 71
#define TAG_AFTER 72
#define WAIT_S 15
/* rma may move the 2 GiB for real (10-11 s on an idle 2-core VM, over 15 s under load): its
 * watchdog guards against a hang only. */
#define WAIT_S_RMA 90
#define SEND_COUNT ((MPI_Count)1 << 31) /* MPI_BYTE */
#define RECV_COUNT ((MPI_Count)1 << 29) /* MPI_INT */
#define BYTES ((size_t)1 << 31)

/* Resident pages of [buf, buf + n) (mincore), so "no byte was written" can be checked without
 * reading the buffer. */
static size_t resident_pages(void* buf, size_t n)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (n + page - 1) / page;
    unsigned char* vec = malloc(pages);
    size_t resident = 0;
    if (vec != NULL && mincore(buf, n, vec) == 0) {
        for (size_t i = 0; i < pages; ++i) {
            resident += vec[i] & 1;
        }
    }
    free(vec);
    return resident;
}

/* All BYTES bytes zero? Reads a word at a time. */
static int all_zero(const void* buf)
{
    const uint64_t* p = buf;
    for (size_t i = 0; i < BYTES / sizeof *p; ++i) {
        if (p[i] != 0) {
            return tu_check(0, __FILE__, __LINE__, "received byte %zu..%zu is not 0", i * sizeof *p,
                            i * sizeof *p + 7);
        }
    }
    return 1;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    void* buf = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int skip = buf == MAP_FAILED;
    int any_skip = 0;
    MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skip) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: cannot reserve 2 GiB of address space\n");
        }
        MPI_Finalize();
        return TU_SKIP_CODE;
    }

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_messages", "1");
    MPI_Request req = MPI_REQUEST_NULL;
    const int send = tu_rank == 0;
    if (send) {
        TU_MPI(MPI_Psend_init(buf, 1, SEND_COUNT, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, 1, RECV_COUNT, MPI_INT, 0, TAG, MPI_COMM_WORLD, info, &req));
    }
    MPI_Info_free(&info);
    /* Either side on rma (MPIX_Pcl_backend before pairing; MPIPCL_BACKEND=rma falls back to
     * persistent without a window): the rma assertions. */
    const char* backend = NULL;
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPIX_Pcl_backend(req, &backend));
    }
    const int mine_rma = backend != NULL && strcmp(backend, "rma") == 0;
    int rma = 0;
    MPI_Allreduce(&mine_rma, &rma, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (send) {
        fprintf(stderr, "sender asked for %s; %s assertions\n", backend ? backend : "(none)",
                rma ? "rma" : "persistent");
    }
    int rc = MPI_ERR_OTHER;
    if (req != MPI_REQUEST_NULL && TU_MPI(MPI_Start(&req)) == MPI_SUCCESS) {
        if (send) {
            TU_MPI(MPI_Pready(0, req));
        }
        tu_watchdog_arm(rma ? WAIT_S_RMA : WAIT_S,
                        "%s's MPI_Wait (the sender's backend cannot be created)",
                        send ? "the sender" : "the receiver");
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        tu_watchdog_arm(TU_WATCHDOG_S, "the rest of the test");
    }
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    }
    /* Both sides' outcomes, to check that they agree. */
    int mine[2] = {rc != MPI_SUCCESS, cls};
    int both[4];
    MPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, MPI_COMM_WORLD);
    const int send_failed = both[0], send_class = both[1], recv_failed = both[2];
    if (!rma) {
        if (send) {
            TU_EXPECT_ERR(rc, MPI_ERR_COUNT);
        } else {
            TU_EXPECT_ANY_ERR(rc);
        }
    } else {
        TU_CHECK_MSG(
            send_failed == recv_failed, "the two sides disagree: sender %s (class %d), receiver %s",
            send_failed ? "failed" : "succeeded", send_class, recv_failed ? "failed" : "succeeded");
    }
    if (!send) {
        if (recv_failed) {
            TU_CHECK_MSG(resident_pages(buf, BYTES) == 0,
                         "the receive failed, but %zu pages of its buffer were written",
                         resident_pages(buf, BYTES));
        } else if (rma && !send_failed) {
            all_zero(buf);
        }
    }
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req));
    }
    munmap(buf, BYTES);
    /* The library is not wedged: a new pair works normally. */
    tu_transfer_check(MPI_COMM_WORLD, 0, 1, TAG_AFTER, 4, 2, 4096, 1);
    return tu_finish();
}
