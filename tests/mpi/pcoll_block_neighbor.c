/* SPDX-License-Identifier: BSD-3-Clause */
/* MPIX_Pneighbor_alltoall_init on a topology:
 *   ring   a periodic 1-D cartesian ring of every rank (on 2 ranks both neighbours of a rank
 *          are the same rank: block 0 must get its block 1, block 1 its block 0);
 *   line   the same, not periodic: the ends' blocks from MPI_PROC_NULL stay untouched and
 *          MPI_Parrived reports them arrived;
 *   grid   a periodic 2 x size/2 grid (size x 1 for an odd size): dimensions of size 1 or 2
 *          have the same rank as both neighbours;
 *   graph  MPI_Dist_graph_create_adjacent: rank r sends to r+1, r+2, r+1 (a repeated edge)
 *          and receives from r-2, r-1, r-1 (mod size), so the blocks pair in edge order.
 * Every receive block is checked against the pattern of the block its neighbour sends it,
 * when MPI_Parrived first reports each partition and after the wait, and the result is
 * compared with MPI_Neighbor_alltoall of the same send buffer. Several rounds, threads.
 * A case of pcoll_block.c, arguments: neighbor ring|line|grid|graph <send partitions>
 * <ints per send partition> <receive partitions> <elements per receive partition> <threads>
 * [flags: v r, see pcoll_block.h]. */
#include <stdlib.h>
#include <string.h>

#include "pcoll_block.h"
#include "testutil.h"

#define MAX_DEG 8

typedef struct {
    MPI_Comm comm;
    int indeg, outdeg;
    int src[MAX_DEG];     /* receive block i comes from src[i] (or MPI_PROC_NULL) */
    int src_blk[MAX_DEG]; /* ... as that rank's send block src_blk[i] */
    int graph;            /* a distributed graph (else cartesian) */
} Topo;

/* Cartesian: per dimension the lower, then the upper neighbour; what comes from the lower
 * one is its block towards its upper neighbour, 2d+1, and the other way round. */
static void topo_cart(Topo* t, int ndims, const int* dims, const int* periods)
{
    TU_MPI(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm));
    t->indeg = t->outdeg = 2 * ndims;
    for (int d = 0; d < ndims; ++d) {
        TU_MPI(MPI_Cart_shift(t->comm, d, 1, &t->src[2 * d], &t->src[2 * d + 1]));
        t->src_blk[2 * d] = 2 * d + 1;
        t->src_blk[2 * d + 1] = 2 * d;
    }
}

static void graph_dests(int r, int n, int* dst)
{
    dst[0] = (r + 1) % n;
    dst[1] = (r + 2) % n;
    dst[2] = (r + 1) % n;
}

/* The j-th edge from s to this rank pairs with the j-th of s's edges to this rank. */
static void topo_graph(Topo* t)
{
    const int n = tu_size, r = tu_rank;
    int dst[3];
    graph_dests(r, n, dst);
    int src[3] = {(r + n - 2) % n, (r + n - 1) % n, (r + n - 1) % n};
    /* Weights given (Open MPI's MPI_UNWEIGHTED, a fake pointer, trips -Wstringop-overread). */
    const int w[3] = {1, 1, 1};
    TU_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, src, w, 3, dst, w, MPI_INFO_NULL, 0,
                                          &t->comm));
    t->indeg = t->outdeg = 3;
    t->graph = 1;
    int in = 0, out = 0, weighted = 0;
    TU_MPI(MPI_Dist_graph_neighbors_count(t->comm, &in, &out, &weighted));
    TU_CHECK(in == 3 && out == 3);
    for (int i = 0; i < 3; ++i) {
        t->src[i] = src[i];
        int before = 0;
        for (int j = 0; j < i; ++j) {
            before += src[j] == src[i];
        }
        int sdst[3];
        graph_dests(src[i], n, sdst);
        for (int j = 0; j < 3; ++j) {
            if (sdst[j] == r && before-- == 0) {
                t->src_blk[i] = j;
            }
        }
    }
}

static void topo_make(Topo* t, const char* name)
{
    memset(t, 0, sizeof *t);
    const int n = tu_size;
    if (strcmp(name, "graph") == 0) {
        topo_graph(t);
    } else if (strcmp(name, "grid") == 0) {
        const int dims[2] = {n % 2 == 0 ? 2 : n, n % 2 == 0 ? n / 2 : 1};
        const int periods[2] = {1, 1};
        topo_cart(t, 2, dims, periods);
    } else {
        const int periods[1] = {strcmp(name, "ring") == 0};
        topo_cart(t, 1, &n, periods);
    }
}

/* Before a round: the send blocks, the receive buffer reset, what it must hold after. */
static void prepare(const Topo* t, const PcbShape* s, int* send, PcbReq* r, int round)
{
    pcb_fill_send(send, t->outdeg, s, tu_rank, round);
    memset(r->recv, PCB_FILL, r->bytes);
    memset(r->exp, PCB_FILL, r->bytes);
    for (int i = 0; i < t->indeg; ++i) {
        if (t->src[i] != MPI_PROC_NULL) {
            pcb_put_block(r->exp + (size_t)i * s->rblock, s, t->src[i], t->src_blk[i], round);
        }
    }
}

/* Receive block @p i comes over a repeated edge of a graph (its source sends here twice). */
static int repeated(const Topo* t, int i)
{
    int times = 0;
    for (int j = 0; j < t->indeg; ++j) {
        times += t->src[j] == t->src[i];
    }
    return t->graph && times > 1;
}

/* MPI_Neighbor_alltoall of the same send buffer gives what the partitioned one gave, block by
 * block, except over repeated graph edges: how those pair is the MPI's choice (MPICH 4.0 pairs
 * them the other way round), and the pattern checks mpipcl's order there. */
static void compare_with_mpi(const Topo* t, const PcbShape* s, const int* send, const PcbReq* r,
                             int round)
{
    size_t bytes = 0;
    char* ref = pcb_alloc_recv(s, t->indeg, &bytes);
    TU_MPI(
        MPI_Neighbor_alltoall(send, s->block_ints, MPI_INT, ref, s->rp * s->rc, s->rtype, t->comm));
    for (int i = 0; i < t->indeg; ++i) {
        const size_t at = (size_t)i * s->rblock;
        if (!repeated(t, i)) {
            pcb_same(r->recv + at, ref + at, s->rblock, at,
                     "neighbor: against MPI_Neighbor_alltoall", round);
        }
    }
    free(ref);
}

void pcb_neighbor_case(char** args, int n, int level)
{
    PcbShape s;
    pcb_shape_parse(args, n, 2, level, &s);
    Topo t;
    topo_make(&t, n > 1 ? args[1] : "ring");
    int* send = malloc(sizeof(int) * ((size_t)s.block_ints * (size_t)t.outdeg + 1));
    PcbReq r = {.rp = s.rp, .rpart = s.rpart, .name = "neighbor"};
    r.recv = pcb_alloc_recv(&s, t.indeg, &r.bytes);
    r.exp = pcb_alloc_recv(&s, t.indeg, &r.bytes);
    r.nmark = t.outdeg * pcb_send_parts(&s, tu_rank);
    r.npoll = t.indeg * s.rp;
    TU_MPI(MPIX_Pneighbor_alltoall_init(send, pcb_send_parts(&s, tu_rank),
                                        pcb_send_count(&s, tu_rank), MPI_INT, r.recv, s.rp, s.rc,
                                        s.rtype, t.comm, MPI_INFO_NULL, &r.req));
    for (int round = 0; round < PCB_ROUNDS; ++round) {
        prepare(&t, &s, send, &r, round);
        pcb_round(&r, 1, s.nthreads, round);
        compare_with_mpi(&t, &s, send, &r, round);
    }
    pcb_free(&r, 1);
    free(send);
    TU_MPI(MPI_Comm_free(&t.comm));
    pcb_shape_free(&s);
}
