/* SPDX-License-Identifier: BSD-3-Clause */
/* The block-wise collectives' tests: shapes, data patterns, receive buffers and one checked
 * round (pcoll_block.h). */
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "pcoll_block.h"
#include "testutil.h"

void pcb_shape_parse(char** args, int n, int first, int level, PcbShape* s)
{
    memset(s, 0, sizeof *s);
    s->sp = tu_arg_int(n, args, first, 4);
    s->sc = tu_arg_int(n, args, first + 1, 3);
    s->rp = tu_arg_int(n, args, first + 2, 2);
    s->rc = tu_arg_int(n, args, first + 3, 6);
    s->nthreads = tu_arg_int(n, args, first + 4, 2);
    const char* flags = first + 5 < n ? args[first + 5] : "";
    s->vec = strchr(flags, 'v') != NULL;
    s->in_place = strchr(flags, 'i') != NULL;
    s->vary = strchr(flags, 'r') != NULL;
    if (level < MPI_THREAD_MULTIPLE) {
        s->nthreads = 0;
    }
    if (s->nthreads > 16) {
        s->nthreads = 16;
    }
    s->block_ints = s->sp * s->sc;
    s->rtype = MPI_INT;
    if (s->vec) {
        /* Ints 0 and 2 of every four: two holes inside each element, one at its end. */
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, 4 * (MPI_Aint)sizeof(int), &s->rtype);
        MPI_Type_free(&v);
        MPI_Type_commit(&s->rtype);
    }
    MPI_Aint lb, extent;
    MPI_Type_get_extent(s->rtype, &lb, &extent);
    s->rpart = (size_t)s->rc * (size_t)extent;
    s->rblock = s->rpart * (size_t)s->rp;
    if (s->rp * s->rc * (s->vec ? 2 : 1) != s->block_ints) {
        TU_ABORT("a shape whose send and receive blocks differ in bytes");
    }
}

void pcb_shape_free(PcbShape* s)
{
    if (s->vec) {
        MPI_Type_free(&s->rtype);
    }
}

int pcb_send_parts(const PcbShape* s, int rank)
{
    if (!s->vary || s->block_ints == 0) {
        return s->sp;
    }
    /* The divisors of the block, one per rank in turn. */
    int div[64];
    int nd = 0;
    for (int d = 1; d <= s->block_ints && nd < 64; ++d) {
        if (s->block_ints % d == 0) {
            div[nd++] = d;
        }
    }
    return div[(rank + 1) % nd];
}

int pcb_send_count(const PcbShape* s, int rank)
{
    const int parts = pcb_send_parts(s, rank);
    return s->block_ints == 0 ? s->sc : s->block_ints / parts;
}

int pcb_value(int src, int sblk, int k, int round)
{
    /* Readable in a message: SSSBB R KKKKK (sender, its block, round, index). */
    return ((src + 1) * 100 + sblk) * 1000000 + round * 100000 + k;
}

void pcb_fill_send(int* buf, int nblocks, const PcbShape* s, int rank, int round)
{
    for (int b = 0; b < nblocks; ++b) {
        for (int k = 0; k < s->block_ints; ++k) {
            buf[(size_t)b * (size_t)s->block_ints + (size_t)k] = pcb_value(rank, b, k, round);
        }
    }
}

void pcb_put_block(char* rblk, const PcbShape* s, int src, int sblk, int round)
{
    for (int k = 0; k < s->block_ints; ++k) {
        const size_t at = s->vec ? (size_t)(k / 2) * 4 + (size_t)(k % 2) * 2 : (size_t)k;
        const int v = pcb_value(src, sblk, k, round);
        memcpy(rblk + at * sizeof(int), &v, sizeof v);
    }
}

char* pcb_alloc_recv(const PcbShape* s, int nblocks, size_t* bytes)
{
    *bytes = s->rblock * (size_t)nblocks + PCB_GUARD;
    char* buf = malloc(*bytes);
    memset(buf, PCB_FILL, *bytes);
    return buf;
}

void pcb_error_comms(MPI_Comm* comm, MPI_Comm* ring)
{
    TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, comm));
    TU_MPI(MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN));
    const int periods[1] = {1};
    TU_MPI(MPI_Cart_create(*comm, 1, &tu_size, periods, 0, ring));
    TU_MPI(MPI_Comm_set_errhandler(*ring, MPI_ERRORS_RETURN));
}

void pcb_error_comms_free(MPI_Comm* comm, MPI_Comm* ring)
{
    TU_MPI(MPI_Comm_free(ring));
    TU_MPI(MPI_Comm_free(comm));
}
