/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitions of one request reach a receiver that is busy (asleep, no MPI call) while the
 * sender marks them ready: 16 partitions of 64 KiB, far above every eager limit.
 *
 * The receiver starts its request, tells the sender (a plain message on another
 * communicator), then sleeps SLEEP_MS without any MPI call while the sender calls
 * MPIX_Pbuf_prepare and marks the partitions ready one by one. Right after waking, before any
 * MPI call, the receiver reads its buffer. Where data can move during the sleep, all 16
 * partitions must already hold the round's bytes:
 * - a library progress thread runs in the receiver (MPI_THREAD_MULTIPLE and
 *   MPIPCL_PROGRESS other than caller): both backends, both MPIs;
 * - Open MPI 4 when the pair really uses the rma backend (MPIX_Pcl_backend, asked on the
 *   receiver after the first round, which pairs it; MPIPCL_BACKEND=rma falls back to
 *   persistent without a window, e.g. over TCP): the Puts complete at a passive target
 *   (osc rdma), so even without a progress thread (MPIPCL_PROGRESS=caller or a lower thread
 *   level). Rounds before that check assert nothing about the sleep.
 * Otherwise (persistent without a progress thread; MPICH's RMA without one, which needs the
 * target inside MPI; Open MPI 5, whose osc does not complete Puts at a target outside MPI
 * either: the version is read from MPI_Get_library_version at run time) nothing is asserted
 * about the sleep; the count is printed. In every configuration the transfer must then
 * complete with the right bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 11
#define PARTS 16
#define PART_BYTES (64 * 1024)
#define ROUNDS 3
#define SLEEP_MS 800

/* Partitions whose bytes already equal the round's pattern (reads memory only, no MPI). */
static int landed(const unsigned char* buf, int round)
{
    int n = 0;
    for (int p = 0; p < PARTS; ++p) {
        size_t i = 0;
        for (; i < PART_BYTES; ++i) {
            size_t at = (size_t)p * PART_BYTES + i;
            if (buf[at] != tu_pattern(0, round, at)) {
                break;
            }
        }
        n += i == PART_BYTES;
    }
    return n;
}

/* The major version of the Open MPI we run on, 0 for another MPI. */
static int open_mpi_major(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    int major = 0;
    MPI_Get_library_version(version, &len);
    const char* at = strstr(version, "Open MPI v");
    if (at == NULL || sscanf(at, "Open MPI v%d", &major) != 1) {
        return 0;
    }
    return major;
}

/* Whether data must move while the receiver sleeps (see the file comment); @p backend is
 * what MPIX_Pcl_backend names for the receive, NULL before it is paired. */
static int must_land_while_asleep(int provided, const char* backend)
{
    int progress_thread = provided == MPI_THREAD_MULTIPLE && !tu_progress_thread_off();
    const int major = open_mpi_major();
    int passive_target = major > 0 && major < 5 && backend != NULL && strcmp(backend, "rma") == 0;
    fprintf(stderr,
            "backend %s, progress thread %d, %s, rma passive-target progress expected: %d\n",
            backend ? backend : "(not paired yet)", progress_thread,
            major ? "Open MPI" : "not Open MPI", passive_target);
    return progress_thread || passive_target;
}

int main(int argc, char** argv)
{
    int provided = tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    const size_t total = (size_t)PARTS * PART_BYTES;
    MPI_Comm ctl;
    MPI_Request req;
    unsigned char* buf = tu_pair_setup(PARTS, PART_BYTES, TAG, &ctl, &req);
    const char* backend = NULL; /* the receive's backend once paired (after round 0) */
    for (int round = 0; round < ROUNDS; ++round) {
        int token = 0;
        if (tu_rank == 0) {
            tu_fill(buf, total, 0, 0, round);
            TU_MPI(MPI_Start(&req));
            MPI_Recv(&token, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
            /* The receiver started before it sent the token: this returns once its notice is
             * in, after which the data path does not wait for the receiver any more. */
            TU_MPI(MPIX_Pbuf_prepare(req));
            for (int p = 0; p < PARTS; ++p) {
                TU_MPI(MPI_Pready(p, req));
                tu_sleep_us(1000);
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
            continue;
        }
        memset(buf, 0, total);
        TU_MPI(MPI_Start(&req));
        TU_MPI(MPIX_Pbuf_prepare(req)); /* receiver side: returns at once */
        MPI_Send(&token, 1, MPI_INT, 0, 0, ctl);
        tu_sleep_us(SLEEP_MS * 1000L); /* busy: no MPI call */
        const int n = landed(buf, round);
        if (must_land_while_asleep(provided, backend)) {
            TU_CHECK_MSG(n == PARTS,
                         "round %d: only %d of %d partitions landed while the receiver slept",
                         round, n, PARTS);
        } else {
            fprintf(stderr,
                    "round %d: %d of %d partitions landed while the receiver slept "
                    "(not asserted in this configuration)\n",
                    round, n, PARTS);
        }
        for (int p = 0; p < PARTS; ++p) {
            tu_wait_arrived(req, p, "partition");
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
        tu_verify(buf, total, 0, 0, round, "received data");
        TU_MPI(MPIX_Pcl_backend(req, &backend));
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
