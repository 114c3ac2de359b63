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

/* One case of a case-list program: @p args are its words (args[0] its name), @p prog the
 * program's name, @p level the thread level MPI gave. */
typedef void (*pcoll_case_runner)(char** args, int n, char* prog, int level);

/* The main of a case-list program: tu_init, then each case of argv ("+" between them) through
 * @p run, announced on rank 0 with its time, the watchdog re-armed before it; tu_finish. */
int pcoll_run_cases(int argc, char** argv, pcoll_case_runner run);

/* Polls MPI_Parrived on every partition of @p req until all arrived (the watchdog's deadline
 * bounds it; @p what names the wait in its failure); calls @p check(p, ctx) once per partition,
 * when it is first seen. */
void pcoll_poll_arrivals(MPI_Request req, int parts, void (*check)(int p, void* ctx), void* ctx,
                         const char* what);

/* One round of a collective that must fail: MPI_Start, partitions 0 .. nmark-1 marked (their
 * errors ignored), then, with @p npoll > 0, MPI_Parrived on partitions 0 .. npoll-1 in turn
 * until one returns an error (within the deadline): after the first error no call may report
 * a partition (a failed round winding down reports none). Then a bounded wait that must return
 * an error (@p what names it), and MPI_Request_free. Returns the wait's error class. */
int pcoll_failed_round(MPI_Request* req, int nmark, int npoll, const char* what);

#endif
