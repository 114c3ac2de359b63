/* SPDX-License-Identifier: BSD-3-Clause */
/* MPIX_Pgather_init (one request per root, all started together), MPIX_Pallgather_init and
 * MPIX_Palltoall_init: every block checked against the pattern of its sender when
 * MPI_Parrived first reports each of its partitions and after the wait, several rounds
 * (restarts) marked by threads; a gather's non-roots' receive buffers stay untouched. With
 * flag i, MPI_IN_PLACE at a gather's root and at every rank of an allgather: the rank's block
 * is written into its receive block before the round and marked as receive partitions.
 * A case of pcoll_block.c, arguments: gather|allgather|alltoall <send partitions>
 * <ints per send partition> <receive partitions> <elements per receive partition> <threads>
 * [flags: v i r, see pcoll_block.h]. */
#include <stdlib.h>
#include <string.h>

#include "pcoll_block.h"
#include "testutil.h"

enum Kind { GATHER, ALLGATHER, ALLTOALL };

typedef struct {
    enum Kind kind;
    const PcbShape* s;
    int* send; /* alltoall: size blocks; else one */
} Dense;

/* Request @p root (gather) or the only one: its init and what this rank marks and polls. */
static void dense_init(const Dense* d, int root, PcbReq* r)
{
    const PcbShape* s = d->s;
    const int n = tu_size;
    const int ip = s->in_place && (d->kind == ALLGATHER || (d->kind == GATHER && tu_rank == root));
    const void* sb = ip ? MPI_IN_PLACE : d->send;
    const int sp = pcb_send_parts(s, tu_rank);
    const int sc = pcb_send_count(s, tu_rank);
    r->recv = pcb_alloc_recv(s, n, &r->bytes);
    r->exp = pcb_alloc_recv(s, n, &r->bytes);
    r->rp = s->rp;
    r->rpart = s->rpart;
    r->nmark = ip ? s->rp : d->kind == ALLTOALL ? n * sp : sp;
    r->npoll = d->kind != GATHER || tu_rank == root ? n * s->rp : 0;
    static const char* const names[] = {"gather", "allgather", "alltoall"};
    r->name = names[d->kind];
    if (d->kind == GATHER) {
        TU_MPI(MPIX_Pgather_init(sb, sp, sc, MPI_INT, r->recv, s->rp, s->rc, s->rtype, root,
                                 MPI_COMM_WORLD, MPI_INFO_NULL, &r->req));
    } else if (d->kind == ALLGATHER) {
        TU_MPI(MPIX_Pallgather_init(sb, sp, sc, MPI_INT, r->recv, s->rp, s->rc, s->rtype,
                                    MPI_COMM_WORLD, MPI_INFO_NULL, &r->req));
    } else {
        TU_MPI(MPIX_Palltoall_init(sb, sp, sc, MPI_INT, r->recv, s->rp, s->rc, s->rtype,
                                   MPI_COMM_WORLD, MPI_INFO_NULL, &r->req));
    }
}

/* Before round @p round of request @p root: the receive buffer reset (an in-place rank's
 * own block written), and what it must hold after. */
static void dense_prepare(const Dense* d, int root, PcbReq* r, int round)
{
    const PcbShape* s = d->s;
    memset(r->recv, PCB_FILL, r->bytes);
    memset(r->exp, PCB_FILL, r->bytes);
    const int receives = d->kind != GATHER || tu_rank == root;
    for (int b = 0; receives && b < tu_size; ++b) {
        pcb_put_block(r->exp + (size_t)b * s->rblock, s, b, d->kind == ALLTOALL ? tu_rank : 0,
                      round);
    }
    if (receives && s->in_place && d->kind != ALLTOALL) {
        pcb_put_block(r->recv + (size_t)tu_rank * s->rblock, s, tu_rank, 0, round);
    }
}

void pcb_dense_case(char** args, int n, int level)
{
    PcbShape s;
    pcb_shape_parse(args, n, 1, level, &s);
    Dense d = {GATHER, &s, NULL};
    if (strcmp(args[0], "allgather") == 0) {
        d.kind = ALLGATHER;
    } else if (strcmp(args[0], "alltoall") == 0) {
        d.kind = ALLTOALL;
    }
    const int nreq = d.kind == GATHER ? tu_size : 1;
    const int nblocks = d.kind == ALLTOALL ? tu_size : 1;
    d.send = malloc(sizeof(int) * ((size_t)s.block_ints * (size_t)nblocks + 1));
    PcbReq* r = calloc((size_t)nreq, sizeof *r);
    for (int i = 0; i < nreq; ++i) {
        dense_init(&d, i, &r[i]);
    }
    for (int round = 0; round < PCB_ROUNDS; ++round) {
        pcb_fill_send(d.send, nblocks, &s, tu_rank, round);
        for (int i = 0; i < nreq; ++i) {
            dense_prepare(&d, i, &r[i], round);
        }
        pcb_round(r, nreq, s.nthreads, round);
    }
    pcb_free(r, nreq);
    free(r);
    free(d.send);
    pcb_shape_free(&s);
}
