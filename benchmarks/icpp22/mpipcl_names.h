/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Force-included (-include) when the ICPP'22 micro-benchmarks (branch mpi-native) are compiled
 * against MPIPCL (mpi-advance/MPIPCL), for run.sh's MPIPCL target only. Those programs call
 * the standard MPI-4 names on MPI_Request; MPIPCL offers the calls as MPIP_* on its own
 * MPIP_Request struct, with Pready and Parrived taking the request by address. The macros below
 * rename the calls and the request type, and take the address where MPIPCL wants one.
 *
 * Valid only for programs in which every MPI_Request is a partitioned request, as in overhead.c,
 * early_bird.c and perceived_bandwidth.c (their other communication is blocking MPI_Send,
 * MPI_Recv and MPI_Barrier). mpi.h and MPIPCL's mpipcl.h are included first, so that their own
 * declarations are not renamed.
 *
 * One call is more than a rename. MPIPCL's MPIP_Test sets *flag = 0 before anything else and
 * returns at once for an inactive request, so a request that has completed (MPIP_Test made it
 * inactive) tests as not complete on the next call; MPI says an inactive persistent request
 * tests complete (flag = true, empty status). The programs' completion loops test their two
 * requests each pass until both flags are set in the same pass, and with MPIP_Test as it is
 * they spin for ever once the two complete in different passes (overhead and early_bird, on
 * the receiving rank). mpipcl_icpp22_test returns flag = true for an inactive request and is
 * MPIP_Test otherwise.
 */
#ifndef MPIPCL_ICPP22_NAMES_H
#define MPIPCL_ICPP22_NAMES_H

#include <mpi.h>
#include <mpipcl.h>

/* MPIP_Test, except that an inactive request tests complete (its status is left alone: the
   programs pass MPI_STATUS_IGNORE). */
static inline int mpipcl_icpp22_test(MPIP_Request* request, int* flag, MPI_Status* status)
{
    if (request->state == INACTIVE) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    return MPIP_Test(request, flag, status);
}

#define MPI_Request MPIP_Request

#define MPI_Psend_init MPIP_Psend_init
#define MPI_Precv_init MPIP_Precv_init
#define MPI_Pready(partition, request) MPIP_Pready((partition), &(request))
#define MPI_Pready_range(low, high, request) MPIP_Pready_range((low), (high), &(request))
#define MPI_Pready_list(length, partitions, request) \
    MPIP_Pready_list((length), (partitions), &(request))
#define MPI_Parrived(request, partition, flag) MPIP_Parrived(&(request), (partition), (flag))

#define MPI_Start MPIP_Start
#define MPI_Startall MPIP_Startall
#define MPI_Wait MPIP_Wait
#define MPI_Waitall MPIP_Waitall
#define MPI_Waitany MPIP_Waitany
#define MPI_Waitsome MPIP_Waitsome
#define MPI_Test mpipcl_icpp22_test
#define MPI_Testall MPIP_Testall
#define MPI_Testany MPIP_Testany
#define MPI_Testsome MPIP_Testsome
#define MPI_Request_free MPIP_Request_free

#endif
