/* SPDX-License-Identifier: BSD-3-Clause */
/* Start and end of the consumer programs (plain MPI, nothing of mpipcl): 2 ranks or abort. */
#ifndef MPIPCL_CONSUMER_TWO_RANKS_H_INCLUDED
#define MPIPCL_CONSUMER_TWO_RANKS_H_INCLUDED

#include <mpi.h>
#include <stdio.h>

/** MPI_Init_thread(MULTIPLE); aborts unless there are exactly 2 ranks. Returns the rank. */
static int two_ranks_init(int* argc, char*** argv, const char* prog)
{
    int provided = 0;
    int rank = 0;
    int size = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "%s: needs 2 ranks, got %d\n", prog, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return rank;
}

/** Sums @p errors over both ranks, finalizes, reports on rank 0; the exit code (0 = ok). */
static int two_ranks_finish(int rank, int errors, const char* prog)
{
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) {
        printf("%s: %d wrong elements\n", prog, all);
    }
    return all != 0;
}

#endif /* MPIPCL_CONSUMER_TWO_RANKS_H_INCLUDED */
