/* SPDX-License-Identifier: BSD-3-Clause */
/* The cases of the partitioned-collectives test program (pcoll.c). Each takes the arguments
 * of its file's header comment (argv[0] is the program) and the thread level MPI gave. */
#ifndef MPIPCL_TESTS_PCOLL_H
#define MPIPCL_TESTS_PCOLL_H

#include <mpi.h>

void pcoll_bcast_case(int argc, char** argv, int level);
void pcoll_reduce_case(int argc, char** argv, int level);
void pcoll_early_case(int argc, char** argv, int level);
void pcoll_mismatch_case(int argc, char** argv, int level);

/* Polls MPI_Parrived on every partition of @p req until all arrived (the watchdog's deadline
 * bounds it; @p what names the wait in its failure); calls @p check(p, ctx) once per partition,
 * when it is first seen. */
void pcoll_poll_arrivals(MPI_Request req, int parts, void (*check)(int p, void* ctx), void* ctx,
                         const char* what);

#endif
