/* SPDX-License-Identifier: BSD-3-Clause */
/* Across nodes, with no progress thread driving the sender (MPIPCL_PROGRESS=caller; the thread
 * mode's thread behaves so on a crowded node), a send to another node moves only while the
 * sender is inside MPI: each MPI_Pready that starts a message also pushes the ones started
 * before it (docs/design.md, "Progress modes").
 * The sender marks 8 partitions of 1 MiB, above every eager limit, and naps 40 ms between two
 * Preadys, making no MPI call (its "compute"). The receiver polls MPI_Parrived(0) and must see
 * partition 0 before the sender's last MPI_Pready, while the sender still computes; without
 * the push it lands only once the sender waits. The sender sends the time of its last Pready
 * after its MPI_Wait; both read CLOCK_MONOTONIC of one machine, which the emulated hosts
 * (tests/multihost) share. 3 rounds, bytes verified. Where the two ranks share a node the
 * receiver moves the data itself: skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define TAG 13
#define PARTS 8
#define PART_BYTES (1024 * 1024)
#define ROUNDS 3
#define NAP_US 40000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Skips on every rank when the two ranks share a node. */
static void skip_on_one_node(void)
{
    MPI_Comm node;
    int size = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &size);
    MPI_Comm_free(&node);
    if (size > 1) {
        if (tu_rank == 0) {
            printf("SKIP: both ranks run on one node\n");
        }
        MPI_Finalize();
        exit(TU_SKIP_CODE);
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    skip_on_one_node();
    const size_t total = (size_t)PARTS * PART_BYTES;
    MPI_Comm ctl;
    MPI_Request req;
    unsigned char* buf = tu_pair_setup(PARTS, PART_BYTES, TAG, &ctl, &req);
    for (int round = 0; round < ROUNDS; ++round) {
        double last_pready = 0.0;
        if (tu_rank == 0) {
            tu_fill(buf, total, 0, 0, round);
            TU_MPI(MPI_Start(&req));
            TU_MPI(MPIX_Pbuf_prepare(req));
            for (int p = 0; p < PARTS; ++p) {
                if (p > 0) {
                    tu_sleep_us(NAP_US);
                }
                last_pready = now_s();
                TU_MPI(MPI_Pready(p, req));
            }
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
            TU_MPI(MPI_Send(&last_pready, 1, MPI_DOUBLE, 1, round, ctl));
            continue;
        }
        memset(buf, 0, total);
        TU_MPI(MPI_Start(&req));
        TU_MPI(MPIX_Pbuf_prepare(req));
        tu_wait_arrived(req, 0, "partition 0");
        const double arrived = now_s();
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
        tu_verify(buf, total, 0, 0, round, "received data");
        TU_MPI(MPI_Recv(&last_pready, 1, MPI_DOUBLE, 0, round, ctl, MPI_STATUS_IGNORE));
        TU_CHECK_MSG(arrived < last_pready,
                     "round %d: partition 0 arrived %.1f ms after the sender's last MPI_Pready: "
                     "it did not move while the sender computed",
                     round, 1e3 * (arrived - last_pready));
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Comm_free(&ctl);
    free(buf);
    return tu_finish();
}
