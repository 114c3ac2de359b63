/* SPDX-License-Identifier: BSD-3-Clause */
/* A process whose rounds fail at once runs ahead of its peers and finalizes while their rounds
 * still wait for its answers. Each round is a partitioned allgather whose last rank's receive
 * blocks are larger: that rank's own block fails it locally, its wait returns at once, while
 * the other ranks' rounds learn of the failure only from its answers to their Setups. Nothing
 * keeps the ranks in step, and no collective comes before MPI_Finalize: MPI_Finalize answers
 * control messages until every process is in it, so every round on every rank ends with an
 * error class (MPI_ERR_TRUNCATE, MPI_ERR_COUNT or MPI_ERR_ARG) and every rank finalizes. A
 * hang ends by SIGALRM after 60 s. Arguments: [rounds] (300). 2 ranks or more. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpipcl.h"

enum { P = 2, C = 4 };

int main(int argc, char** argv)
{
    int level = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    alarm(60);
    const int rounds = argc > 1 ? atoi(argv[1]) : 300;
    int rank = 0;
    int size = 0;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int send[P * C] = {0};
    int* recv = calloc((size_t)size * P * (C + 1), sizeof(int));
    const int rc = rank == size - 1 ? C + 1 : C;
    int bad = 0;
    for (int r = 0; r < rounds && bad == 0; ++r) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (MPIX_Pallgather_init(send, P, C, MPI_INT, recv, P, rc, MPI_INT, comm, MPI_INFO_NULL,
                                 &req) != MPI_SUCCESS ||
            MPI_Start(&req) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d round %d: init or start failed\n", rank, r);
            bad = 1;
            break;
        }
        MPI_Pready_range(0, P - 1, req); /* the round may have failed already */
        const int err = MPI_Wait(&req, MPI_STATUS_IGNORE);
        int cls = MPI_SUCCESS;
        MPI_Error_class(err, &cls);
        if (cls != MPI_ERR_TRUNCATE && cls != MPI_ERR_COUNT && cls != MPI_ERR_ARG) {
            fprintf(stderr, "rank %d round %d: the wait returned class %d\n", rank, r, cls);
            bad = 1;
        }
        if (MPI_Request_free(&req) != MPI_SUCCESS || req != MPI_REQUEST_NULL) {
            fprintf(stderr, "rank %d round %d: MPI_Request_free failed\n", rank, r);
            bad = 1;
        }
    }
    free(recv);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    printf("rank %d: %s\n", rank, bad ? "FAIL" : "PASS");
    return bad;
}
