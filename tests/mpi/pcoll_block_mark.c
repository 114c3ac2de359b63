/* SPDX-License-Identifier: BSD-3-Clause */
/* Marking the partitions of block-wise collectives from several threads in a scrambled order
 * (pcoll_block.h). Round 0, 3, ...: MPI_Pready one by one, each thread a scattered share of a
 * shuffled order; round 1, 4, ...: MPI_Pready_range over pieces of up to 3 partitions of the
 * thread's contiguous share, from its top down; round 2, 5, ...: MPI_Pready_list of the
 * thread's shuffled share. */
#include <pthread.h>
#include <stdlib.h>

#include "pcoll_block.h"
#include "testutil.h"

#define MAX_THREADS 16

typedef struct {
    const PcbReq* r;
    int n;
    int id, nthreads;
    int round;
} Marker;

struct PcbMarking {
    pthread_t th[MAX_THREADS];
    Marker m[MAX_THREADS];
    int nthreads;
};

static void mark_ranges(MPI_Request req, int lo, int hi)
{
    for (int top = hi - 1; top >= lo; top -= 3) {
        const int bottom = top - 2 > lo ? top - 2 : lo;
        TU_MPI(MPI_Pready_range(bottom, top, req));
    }
}

/* This thread's share of request @p i's partitions. */
static void mark_one(const Marker* m, int i)
{
    const int total = m->r[i].nmark;
    const MPI_Request req = m->r[i].req;
    if (m->round % 3 == 1) {
        mark_ranges(req, (int)((long)total * m->id / m->nthreads),
                    (int)((long)total * (m->id + 1) / m->nthreads));
        return;
    }
    int* order = malloc(sizeof(int) * ((size_t)total + 1));
    tu_shuffled_indices(order, total, (unsigned)(m->round * 131 + i * 7 + 1));
    int mine = 0;
    for (int j = m->id; j < total; j += m->nthreads) {
        order[mine++] = order[j];
    }
    if (m->round % 3 == 2) {
        TU_MPI(MPI_Pready_list(mine, order, req));
    } else {
        for (int j = 0; j < mine; ++j) {
            TU_MPI(MPI_Pready(order[j], req));
        }
    }
    free(order);
}

static void* mark(void* arg)
{
    const Marker* m = arg;
    for (int i = 0; i < m->n; ++i) {
        if (m->r[i].nmark > 0) {
            mark_one(m, i);
        }
    }
    return NULL;
}

PcbMarking* pcb_mark_begin(const PcbReq* r, int n, int nthreads, int round)
{
    PcbMarking* mk = calloc(1, sizeof *mk);
    mk->nthreads = nthreads < MAX_THREADS ? nthreads : MAX_THREADS;
    if (mk->nthreads == 0) {
        Marker self = {r, n, 0, 1, round};
        mark(&self);
        return mk;
    }
    for (int t = 0; t < mk->nthreads; ++t) {
        mk->m[t] = (Marker){r, n, t, mk->nthreads, round};
        if (pthread_create(&mk->th[t], NULL, mark, &mk->m[t]) != 0) {
            TU_ABORT("pthread_create failed");
        }
    }
    return mk;
}

void pcb_mark_join(PcbMarking* mk)
{
    for (int t = 0; t < mk->nthreads; ++t) {
        pthread_join(mk->th[t], NULL);
    }
    free(mk);
}
