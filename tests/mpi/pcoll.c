/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitioned collectives: one launch runs a list of cases, so the many sizes, rank counts
 * and modes cost a few MPI launches. Arguments: cases separated by "+", each one of
 *   bcast <partitions> <ints per partition> <threads>          (pcoll_bcast.c)
 *   reduce|allreduce <partitions> <elements> <threads>          (pcoll_reduce.c)
 *   early bcast|reduce|allreduce <partitions> <ints>            (pcoll_early.c)
 *   mismatch                                                     (pcoll_mismatch.c)
 * Every case checks what its file says; the watchdog is re-armed before each one. */
#include "pcoll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_ARGS 8

void pcoll_poll_arrivals(MPI_Request req, int parts, void (*check)(int p, void* ctx), void* ctx,
                         const char* what)
{
    char* seen = calloc((size_t)parts, 1);
    int left = parts;
    const double deadline = tu_deadline();
    while (left > 0) {
        for (int p = 0; p < parts; ++p) {
            int flag = 0;
            if (seen[p] || TU_MPI(MPI_Parrived(req, p, &flag)) != MPI_SUCCESS || !flag) {
                continue;
            }
            seen[p] = 1;
            --left;
            check(p, ctx);
        }
        tu_check_deadline(deadline, what);
    }
    free(seen);
}

static void run_case(char** args, int n, char* prog, int level)
{
    char* sub[MAX_ARGS + 1];
    const char* mode = args[0];
    /* bcast and early take what follows their name; reduce|allreduce keep the mode. */
    const int skip =
        strcmp(mode, "bcast") == 0 || strcmp(mode, "early") == 0 || strcmp(mode, "mismatch") == 0;
    int m = 0;
    sub[m++] = prog;
    for (int i = skip; i < n && m < MAX_ARGS; ++i) {
        sub[m++] = args[i];
    }
    sub[m] = NULL;
    tu_watchdog_rearm(TU_WATCHDOG_S);
    if (tu_rank == 0) {
        printf("case:");
        for (int i = 0; i < n; ++i) {
            printf(" %s", args[i]);
        }
        printf("\n");
        fflush(stdout);
    }
    if (strcmp(mode, "bcast") == 0) {
        pcoll_bcast_case(m, sub, level);
    } else if (strcmp(mode, "reduce") == 0 || strcmp(mode, "allreduce") == 0) {
        pcoll_reduce_case(m, sub, level);
    } else if (strcmp(mode, "early") == 0) {
        pcoll_early_case(m, sub, level);
    } else if (strcmp(mode, "mismatch") == 0) {
        pcoll_mismatch_case(m, sub, level);
    } else {
        TU_ABORT("unknown case");
    }
}

int main(int argc, char** argv)
{
    const int level = tu_init(&argc, &argv, MPI_THREAD_SINGLE, 0);
    int first = 1;
    for (int i = 1; i <= argc; ++i) {
        if (i == argc || strcmp(argv[i], "+") == 0) {
            if (i > first) {
                run_case(&argv[first], i - first, argv[0], level);
            }
            first = i + 1;
        }
    }
    return tu_finish();
}
