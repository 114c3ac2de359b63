/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitioned collectives: one launch runs a list of cases, so the many sizes, rank counts
 * and modes cost a few MPI launches. Arguments: cases separated by "+", each one of
 *   bcast <partitions> <ints per partition> <threads>          (pcoll_bcast.c)
 *   reduce|allreduce <partitions> <elements> <threads>          (pcoll_reduce.c)
 *   early bcast|reduce|allreduce <partitions> <ints>            (pcoll_early.c)
 *   mismatch                                                     (pcoll_mismatch.c)
 * Every case checks what its file says; the watchdog is re-armed before each one
 * (pcoll_common.c). */
#include "pcoll.h"

#include <string.h>

#include "testutil.h"

#define MAX_ARGS 8

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

int main(int argc, char** argv) { return pcoll_run_cases(argc, argv, run_case); }
