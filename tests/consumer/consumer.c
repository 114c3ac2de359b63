/* SPDX-License-Identifier: BSD-3-Clause */
/* Downstream program: a self transfer through the installed library and headers. */
#include <mpipcl.h>
#include <stdio.h>

int main(int argc, char** argv)
{
    int provided = 0;
    int data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int got[8] = {0};
    int interposed = 0;
    int errs = 0;
    MPI_Request reqs[2];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPIX_Pcl_interposed(&interposed);
    MPI_Psend_init(data, 4, 2, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_INFO_NULL, &reqs[0]);
    MPI_Precv_init(got, 2, 4, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_INFO_NULL, &reqs[1]);
    MPI_Startall(2, reqs);
    MPI_Pready_range(0, 3, reqs[0]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 8; ++i) {
        errs += got[i] != data[i];
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Finalize();
    printf("consumer: interposed=%d errors=%d (mpipcl %s)\n", interposed, errs, MPIPCL_VERSION);
    return errs != 0 || !interposed;
}
