/* SPDX-License-Identifier: BSD-3-Clause */
/* The cases of the partitioned-collectives test program (pcoll.c). Each takes the arguments
 * of its file's header comment (argv[0] is the program) and the thread level MPI gave. */
#ifndef MPIPCL_TESTS_PCOLL_H
#define MPIPCL_TESTS_PCOLL_H

void pcoll_bcast_case(int argc, char** argv, int level);
void pcoll_reduce_case(int argc, char** argv, int level);
void pcoll_early_case(int argc, char** argv, int level);
void pcoll_mismatch_case(int argc, char** argv, int level);

#endif
