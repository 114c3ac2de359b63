/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI-4.0 Example 4.3: receive-side partitioning twice as fine, threads poll MPI_Parrived. */
#include "testutil.h"

/* The standard uses more threads; 8 keep two oversubscribed ranks on 2 cores fast. */
#define NUM_THREADS 8
#define PARTITIONS NUM_THREADS
#define PARTLENGTH 16
#define MESSAGE_LENGTH (PARTITIONS * PARTLENGTH)

int main(int argc, char* argv[]) /* send-side partitioning */
{
    double message[MESSAGE_LENGTH];
    int send_partitions = PARTITIONS, send_partlength = PARTLENGTH,
        recv_partitions = PARTITIONS * 2, recv_partlength = PARTLENGTH / 2;
    int count = 1, source = 0, dest = 1, tag = 1, flag = 0;
    MPI_Request request;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Datatype send_type;
    MPI_Datatype recv_type;
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    double deadline = tu_deadline();
    if (tu_rank == 0) {
        MPI_Type_contiguous(send_partlength, MPI_DOUBLE, &send_type);
        MPI_Type_commit(&send_type);
        TU_MPI(MPI_Psend_init(message, send_partitions, count, send_type, dest, tag, MPI_COMM_WORLD,
                              info, &request));
        TU_MPI(MPI_Start(&request));
#pragma omp parallel for shared(request) num_threads(NUM_THREADS)
        for (int i = 0; i < send_partitions; ++i) {
            /* compute and fill partition #i, then mark ready: */
            size_t bytes = sizeof(double) * PARTLENGTH;
            tu_fill((char*)message + i * bytes, bytes, i * bytes, 0, 0);
            TU_MPI(MPI_Pready(i, request));
        }
        while (!flag) {
            /* do useful work #1 */
            TU_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
            /* do useful work #2 */
            tu_check_deadline(deadline, "send");
        }
        TU_MPI(MPI_Request_free(&request));
        MPI_Type_free(&send_type);
    } else if (tu_rank == 1) {
        MPI_Type_contiguous(recv_partlength, MPI_DOUBLE, &recv_type);
        MPI_Type_commit(&recv_type);
        TU_MPI(MPI_Precv_init(message, recv_partitions, count, recv_type, source, tag,
                              MPI_COMM_WORLD, info, &request));
        TU_MPI(MPI_Start(&request));
#pragma omp parallel for shared(request) num_threads(NUM_THREADS)
        for (int j = 0; j < recv_partitions; ++j) {
            int part_flag = 0;
            while (part_flag == 0) {
                TU_MPI(MPI_Parrived(request, j, &part_flag));
                /* do useful work */
                tu_check_deadline(deadline, "MPI_Parrived");
            }
            /* compute on partition #j */
            size_t bytes = sizeof(double) * PARTLENGTH / 2;
            tu_verify((char*)message + j * bytes, bytes, j * bytes, 0, 0, "partition");
        }
        while (!flag) {
            /* do useful work #1 */
            TU_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
            /* do useful work #2 */
            tu_check_deadline(deadline, "receive");
        }
        TU_MPI(MPI_Request_free(&request));
        MPI_Type_free(&recv_type);
    }
    return tu_finish();
}
