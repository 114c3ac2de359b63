/* SPDX-License-Identifier: BSD-3-Clause */
/* One checked round of block-wise partitioned collectives (pcoll_block.h): start, mark with
 * threads, poll MPI_Parrived and check each partition when first reported, wait, compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "pcoll_block.h"
#include "testutil.h"

int pcb_same(const char* got, const char* exp, size_t n, size_t base, const char* what, int round)
{
    size_t i = 0;
    while (i < n && got[i] == exp[i]) {
        ++i;
    }
    if (i == n) {
        return 1;
    }
    /* The int of the block layout that holds the first wrong byte. */
    const size_t at = (i / sizeof(int)) * sizeof(int);
    int g = 0, e = 0;
    memcpy(&g, got + at, at + sizeof(int) <= n ? sizeof(int) : n - at);
    memcpy(&e, exp + at, at + sizeof(int) <= n ? sizeof(int) : n - at);
    return TU_CHECK_MSG(0, "%s, round %d: byte %zu of the receive buffer differs: int %d, not %d%s",
                        what, round, base + i, g, e,
                        (unsigned char)exp[i] == PCB_FILL ? " (must stay untouched)" : "");
}

/* What partition q of a receive buffer must hold once MPI_Parrived reports it. */
struct part_check {
    const PcbReq* r;
    int round;
};

static void check_partition(int q, void* ctx)
{
    const struct part_check* c = ctx;
    const PcbReq* r = c->r;
    const size_t at = (size_t)q * r->rpart;
    char what[160];
    snprintf(what, sizeof what, "%s: receive partition %d (block %d) at MPI_Parrived", r->name, q,
             q / r->rp);
    pcb_same(r->recv + at, r->exp + at, r->rpart, at, what, c->round);
}

void pcb_round(PcbReq* r, int n, int nthreads, int round)
{
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    for (int i = 0; i < n; ++i) {
        reqs[i] = r[i].req;
    }
    TU_MPI(MPI_Startall(n, reqs));
    PcbMarking* m = pcb_mark_begin(r, n, nthreads, round);
    for (int i = 0; i < n; ++i) {
        if (r[i].npoll > 0) {
            struct part_check c = {&r[i], round};
            pcoll_poll_arrivals(reqs[i], r[i].npoll, check_partition, &c,
                                "MPI_Parrived of every receive partition");
        }
    }
    pcb_mark_join(m);
    TU_MPI(tu_waitall(n, reqs, MPI_STATUSES_IGNORE, "a round of block collectives"));
    for (int i = 0; i < n; ++i) {
        r[i].req = reqs[i];
        if (r[i].recv != NULL) {
            char what[160];
            snprintf(what, sizeof what, "%s: after the wait", r[i].name);
            pcb_same(r[i].recv, r[i].exp, r[i].bytes, 0, what, round);
        }
    }
    free(reqs);
}

void pcb_free(PcbReq* r, int n)
{
    for (int i = 0; i < n; ++i) {
        TU_MPI(MPI_Request_free(&r[i].req));
        TU_CHECK(r[i].req == MPI_REQUEST_NULL);
        free(r[i].recv);
        free(r[i].exp);
        r[i].recv = r[i].exp = NULL;
    }
}
