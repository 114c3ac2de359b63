/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input to the block-wise partitioned collectives gets the documented error class, on a
 * duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN (every rank makes the same bad call, so
 * the collectives stay paired): at init, partitions <= 0 (MPI_ERR_ARG), a root out of range
 * (MPI_ERR_ROOT), MPI_IN_PLACE for alltoall, neighbour alltoall and a gather's non-root
 * (MPI_ERR_BUFFER), a communicator without topology (MPI_ERR_TOPOLOGY), a NULL request
 * (MPI_ERR_ARG); in a round, MPI_Parrived on a gather's non-root and MPI_Pready* / MPI_Parrived
 * on a neighbour rank without out- / in-neighbours (MPI_ERR_REQUEST), partitions out of range
 * and a partition marked twice (MPI_ERR_ARG, also in an in-place allgather's numbering). The
 * rounds then complete and their data is checked. A failed init leaves the handle alone.
 * A case of pcoll_block.c, no arguments. */
#include <stdlib.h>
#include <string.h>

#include "pcoll_block.h"
#include "testutil.h"

#define P 2 /* partitions of every block */
#define C 3 /* ints per partition */

static int g_send[64 * P * C];
static int g_recv[64 * P * C];

/* An init that must fail with @p cls without writing the request handle. */
static void expect_init(int rc, MPI_Request r, int cls, const char* what)
{
    int got = MPI_SUCCESS;
    MPI_Error_class(rc, &got);
    TU_CHECK_MSG(rc != MPI_SUCCESS && got == cls, "%s: class %d (code %d), expected %d", what, got,
                 rc, cls);
    TU_CHECK_MSG(r == MPI_REQUEST_NULL, "%s: a failed init wrote the request handle", what);
}

static void init_errors(MPI_Comm ec, MPI_Comm cart)
{
    const int n = tu_size, next = (tu_rank + 1) % tu_size;
    MPI_Request r = MPI_REQUEST_NULL;
    int* s = g_send;
    int* v = g_recv;
    expect_init(MPIX_Pgather_init(s, 0, C, MPI_INT, v, P, C, MPI_INT, 0, ec, MPI_INFO_NULL, &r), r,
                MPI_ERR_ARG, "gather send_partitions 0");
    expect_init(MPIX_Pallgather_init(s, P, C, MPI_INT, v, 0, C, MPI_INT, ec, MPI_INFO_NULL, &r), r,
                MPI_ERR_ARG, "allgather recv_partitions 0");
    expect_init(MPIX_Palltoall_init(s, -1, C, MPI_INT, v, P, C, MPI_INT, ec, MPI_INFO_NULL, &r), r,
                MPI_ERR_ARG, "alltoall send_partitions -1");
    expect_init(
        MPIX_Pneighbor_alltoall_init(s, P, C, MPI_INT, v, -2, C, MPI_INT, cart, MPI_INFO_NULL, &r),
        r, MPI_ERR_ARG, "neighbor recv_partitions -2");
    expect_init(MPIX_Pgather_init(s, P, C, MPI_INT, v, P, C, MPI_INT, n, ec, MPI_INFO_NULL, &r), r,
                MPI_ERR_ROOT, "gather root = size");
    expect_init(MPIX_Pgather_init(s, P, C, MPI_INT, v, P, C, MPI_INT, -1, ec, MPI_INFO_NULL, &r), r,
                MPI_ERR_ROOT, "gather root -1");
    expect_init(
        MPIX_Palltoall_init(MPI_IN_PLACE, P, C, MPI_INT, v, P, C, MPI_INT, ec, MPI_INFO_NULL, &r),
        r, MPI_ERR_BUFFER, "alltoall MPI_IN_PLACE");
    expect_init(MPIX_Pneighbor_alltoall_init(MPI_IN_PLACE, P, C, MPI_INT, v, P, C, MPI_INT, cart,
                                             MPI_INFO_NULL, &r),
                r, MPI_ERR_BUFFER, "neighbor MPI_IN_PLACE");
    /* Every rank names the next one as root: each is a non-root passing MPI_IN_PLACE. */
    expect_init(MPIX_Pgather_init(MPI_IN_PLACE, P, C, MPI_INT, v, P, C, MPI_INT, next, ec,
                                  MPI_INFO_NULL, &r),
                r, MPI_ERR_BUFFER, "gather MPI_IN_PLACE at a non-root");
    expect_init(
        MPIX_Pneighbor_alltoall_init(s, P, C, MPI_INT, v, P, C, MPI_INT, ec, MPI_INFO_NULL, &r), r,
        MPI_ERR_TOPOLOGY, "neighbor without topology");
    const int rc =
        MPIX_Pallgather_init(s, P, C, MPI_INT, v, P, C, MPI_INT, ec, MPI_INFO_NULL, NULL);
    expect_init(rc, MPI_REQUEST_NULL, MPI_ERR_ARG, "allgather NULL request");
}

/* @p rc must be an error of class @p cls; a failed MPI_Parrived leaves *flag alone. */
static void expect_call(int rc, int cls, const char* what)
{
    int got = MPI_SUCCESS;
    MPI_Error_class(rc, &got);
    TU_CHECK_MSG(rc != MPI_SUCCESS && got == cls, "%s: class %d (code %d), expected %d", what, got,
                 rc, cls);
}

static void expect_parrived(MPI_Request req, int q, int cls, const char* what)
{
    int flag = 7;
    expect_call(MPI_Parrived(req, q, &flag), cls, what);
    TU_CHECK_MSG(flag == 7, "%s: a failed MPI_Parrived wrote flag = %d", what, flag);
}

/* Block i of g_recv holds what rank first + i sends: (first + i) * 1000 + index. */
static void verify_blocks(const char* what, int first, int nblocks)
{
    for (int i = 0; i < nblocks * P * C; ++i) {
        const int want = (first + i / (P * C)) * 1000 + i % (P * C);
        if (!TU_CHECK_MSG(g_recv[i] == want, "%s: element %d is %d, not %d", what, i, g_recv[i],
                          want)) {
            break;
        }
    }
}

static void fill_send(void)
{
    for (int i = 0; i < P * C; ++i) {
        g_send[i] = tu_rank * 1000 + i;
    }
}

/* Gather to the last rank: MPI_Parrived at a non-root, partitions out of range, a partition
 * marked twice; then the round completes with the right data at the root. */
static void gather_round_errors(MPI_Comm ec)
{
    const int root = tu_size - 1;
    MPI_Request r = MPI_REQUEST_NULL;
    fill_send();
    memset(g_recv, 0, sizeof g_recv);
    TU_MPI(MPIX_Pgather_init(g_send, P, C, MPI_INT, g_recv, P, C, MPI_INT, root, ec, MPI_INFO_NULL,
                             &r));
    TU_MPI(MPI_Start(&r));
    if (tu_rank != root) {
        expect_parrived(r, 0, MPI_ERR_REQUEST, "gather: MPI_Parrived at a non-root");
    } else {
        expect_parrived(r, tu_size * P, MPI_ERR_ARG, "gather: MPI_Parrived(size x partitions)");
        expect_parrived(r, -1, MPI_ERR_ARG, "gather: MPI_Parrived(-1)");
    }
    expect_call(MPI_Pready(P, r), MPI_ERR_ARG, "gather: MPI_Pready(send_partitions)");
    expect_call(MPI_Pready(-1, r), MPI_ERR_ARG, "gather: MPI_Pready(-1)");
    TU_MPI(MPI_Pready(0, r));
    expect_call(MPI_Pready(0, r), MPI_ERR_ARG, "gather: partition 0 marked twice");
    TU_MPI(MPI_Pready_range(1, P - 1, r));
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "the gather after the erroneous calls"));
    if (tu_rank == root) {
        verify_blocks("gather", 0, tu_size);
    }
    TU_MPI(MPI_Request_free(&r));
}

/* In-place allgather (its send arguments ignored): it marks its block as receive partitions
 * 0 .. P-1, so MPI_Pready(P) is out of range. */
static void allgather_in_place_errors(MPI_Comm ec)
{
    MPI_Request r = MPI_REQUEST_NULL;
    for (int i = 0; i < tu_size * P * C; ++i) {
        g_recv[i] = i / (P * C) == tu_rank ? tu_rank * 1000 + i % (P * C) : -1;
    }
    TU_MPI(MPIX_Pallgather_init(MPI_IN_PLACE, 7, 5, MPI_INT, g_recv, P, C, MPI_INT, ec,
                                MPI_INFO_NULL, &r));
    TU_MPI(MPI_Start(&r));
    expect_call(MPI_Pready(P, r), MPI_ERR_ARG, "in-place allgather: MPI_Pready(recv_partitions)");
    TU_MPI(MPI_Pready_range(0, P - 1, r));
    expect_parrived(r, tu_size * P, MPI_ERR_ARG, "allgather: MPI_Parrived(size x partitions)");
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "the in-place allgather"));
    verify_blocks("in-place allgather", 0, tu_size);
    TU_MPI(MPI_Request_free(&r));
}

/* A star: every rank but 0 sends one block to rank 0, which sends nothing. Rank 0's
 * MPI_Pready* and the others' MPI_Parrived are MPI_ERR_REQUEST; rank 0 gets every block. */
static void star_errors(MPI_Comm ec)
{
    const int hub = tu_rank == 0;
    int* peers = malloc(sizeof(int) * (size_t)tu_size);
    for (int i = 0; i + 1 < tu_size; ++i) {
        peers[i] = i + 1;
    }
    const int zero[1] = {0};                       /* the one destination of every other rank */
    int* w = calloc((size_t)tu_size, sizeof(int)); /* MPI_UNWEIGHTED: see topo_graph */
    MPI_Comm star;
    TU_MPI(MPI_Dist_graph_create_adjacent(ec, hub ? tu_size - 1 : 0, peers, w, hub ? 0 : 1, zero, w,
                                          MPI_INFO_NULL, 0, &star));
    free(w);
    TU_MPI(MPI_Comm_set_errhandler(star, MPI_ERRORS_RETURN));
    fill_send();
    memset(g_recv, 0, sizeof g_recv);
    MPI_Request r = MPI_REQUEST_NULL;
    TU_MPI(MPIX_Pneighbor_alltoall_init(g_send, P, C, MPI_INT, g_recv, P, C, MPI_INT, star,
                                        MPI_INFO_NULL, &r));
    TU_MPI(MPI_Start(&r));
    if (hub) {
        expect_call(MPI_Pready(0, r), MPI_ERR_REQUEST, "star: MPI_Pready without out-neighbours");
    } else {
        expect_parrived(r, 0, MPI_ERR_REQUEST, "star: MPI_Parrived without in-neighbours");
        TU_MPI(MPI_Pready_range(0, P - 1, r));
    }
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "the star's neighbour alltoall"));
    if (hub) {
        verify_blocks("star", 1, tu_size - 1);
    }
    TU_MPI(MPI_Request_free(&r));
    TU_MPI(MPI_Comm_free(&star));
    free(peers);
}

void pcb_errors_case(char** args, int n, int level)
{
    (void)args;
    (void)n;
    (void)level;
    if (tu_size > 64) {
        return;
    }
    MPI_Comm ec, cart;
    pcb_error_comms(&ec, &cart);
    init_errors(ec, cart);
    gather_round_errors(ec);
    allgather_in_place_errors(ec);
    star_errors(ec);
    pcb_error_comms_free(&ec, &cart);
}
