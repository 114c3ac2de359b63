/* SPDX-License-Identifier: BSD-3-Clause */
/* What the case-list programs of the partitioned collectives (pcoll.c, pcoll_block.c) share:
 * the "+"-separated case list of the command line, and polling MPI_Parrived. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "testutil.h"

void pcoll_poll_arrivals(MPI_Request req, int parts, void (*check)(int p, void* ctx), void* ctx,
                         const char* what)
{
    char* seen = calloc((size_t)parts + 1, 1);
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

/* MPI_Parrived on partitions 0 .. npoll-1 of failing round @p req in turn until a call
 * returns an error; checks that no call after it reports a partition. */
static void poll_until_error(MPI_Request req, int npoll, const char* what)
{
    const double deadline = tu_deadline();
    int errored = 0;
    int passes = 0; /* whole passes after the first error */
    while (passes < 2) {
        const int whole = errored;
        for (int p = 0; p < npoll; ++p) {
            int flag = 0;
            if (MPI_Parrived(req, p, &flag) != MPI_SUCCESS) {
                errored = 1;
            } else if (errored && !TU_CHECK_MSG(flag == 0,
                                                "%s: MPI_Parrived reported partition %d after "
                                                "it returned an error",
                                                what, p)) {
                return;
            }
        }
        passes += whole;
        if (!errored) {
            tu_check_deadline(deadline, what);
        }
    }
}

int pcoll_failed_round(MPI_Request* req, int nmark, int npoll, const char* what)
{
    TU_MPI(MPI_Start(req));
    if (nmark > 0) {
        /* The round may have failed already: marking is allowed all the same. */
        MPI_Pready_range(0, nmark - 1, *req);
    }
    if (npoll > 0) {
        poll_until_error(*req, npoll, what);
    }
    const int rc = tu_wait(req, MPI_STATUS_IGNORE, what);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    TU_CHECK_MSG(rc != MPI_SUCCESS, "%s: the wait returned MPI_SUCCESS", what);
    TU_MPI(MPI_Request_free(req));
    TU_CHECK(*req == MPI_REQUEST_NULL);
    return cls;
}

/* Announces the case on rank 0 and re-arms the watchdog, then runs it. */
static void announce_and_run(char** args, int n, char* prog, int level, pcoll_case_runner run)
{
    tu_watchdog_rearm(TU_WATCHDOG_S);
    if (tu_rank == 0) {
        printf("case:");
        for (int i = 0; i < n; ++i) {
            printf(" %s", args[i]);
        }
        printf("\n");
        fflush(stdout);
    }
    const double t0 = MPI_Wtime();
    run(args, n, prog, level);
    if (tu_rank == 0) {
        printf("  %.3f s\n", MPI_Wtime() - t0);
        fflush(stdout);
    }
}

int pcoll_run_cases(int argc, char** argv, pcoll_case_runner run)
{
    const int level = tu_init(&argc, &argv, MPI_THREAD_SINGLE, 0);
    int first = 1;
    for (int i = 1; i <= argc; ++i) {
        if (i == argc || strcmp(argv[i], "+") == 0) {
            if (i > first) {
                announce_and_run(&argv[first], i - first, argv[0], level, run);
            }
            first = i + 1;
        }
    }
    return tu_finish();
}
