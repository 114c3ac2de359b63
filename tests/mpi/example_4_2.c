/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI-4.0 Example 4.2: same partitioning on both sides, partitions marked by OpenMP threads. */
#include "testutil.h"

/* The standard uses more threads; 8 keep two oversubscribed ranks on 2 cores fast. */
#define NUM_THREADS 8
#define PARTITIONS NUM_THREADS
#define PARTLENGTH 16

int main(int argc, char* argv[]) /* same send/recv partitioning */
{
    double message[PARTITIONS * PARTLENGTH];
    int partitions = PARTITIONS;
    int partlength = PARTLENGTH;
    int count = 1, source = 0, dest = 1, tag = 1, flag = 0;
    MPI_Request request;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Datatype xfer_type;
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    double deadline = tu_deadline();
    MPI_Type_contiguous(partlength, MPI_DOUBLE, &xfer_type);
    MPI_Type_commit(&xfer_type);
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(message, partitions, count, xfer_type, dest, tag, MPI_COMM_WORLD,
                              info, &request));
        TU_MPI(MPI_Start(&request));
#pragma omp parallel for shared(request) num_threads(NUM_THREADS)
        for (int i = 0; i < partitions; ++i) {
            /* compute and fill partition #i, then mark ready: */
            size_t bytes = sizeof(double) * PARTLENGTH;
            tu_fill((char*)message + i * bytes, bytes, i * bytes, 0, 0);
            TU_MPI(MPI_Pready(i, request));
        }
        while (!flag) {
            /* Do useful work */
            TU_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
            /* Do useful work */
            tu_check_deadline(deadline, "send");
        }
        TU_MPI(MPI_Request_free(&request));
    } else if (tu_rank == 1) {
        TU_MPI(MPI_Precv_init(message, partitions, count, xfer_type, source, tag, MPI_COMM_WORLD,
                              info, &request));
        TU_MPI(MPI_Start(&request));
        while (!flag) {
            /* Do useful work */
            TU_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
            /* Do useful work */
            tu_check_deadline(deadline, "receive");
        }
        TU_MPI(MPI_Request_free(&request));
        tu_verify(message, sizeof message, 0, 0, 0, "message");
    }
    MPI_Type_free(&xfer_type);
    return tu_finish();
}
