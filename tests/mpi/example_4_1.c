/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI-4.0 Example 4.1: send-side partitioning (8 send partitions, 1 receive partition), MPI_Test.
 */
#include "testutil.h"

#define NUM_THREADS 8
#define PARTITIONS NUM_THREADS
#define PARTLENGTH 16
#define MESSAGE_LENGTH (PARTITIONS * PARTLENGTH)

int main(int argc, char* argv[]) /* send-side partitioning */
{
    double message[MESSAGE_LENGTH];
    int send_partitions = PARTITIONS, send_partlength = PARTLENGTH, recv_partitions = 1,
        recv_partlength = PARTITIONS * PARTLENGTH;
    int count = 1, source = 0, dest = 1, tag = 1, flag = 0;
    MPI_Request request;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Datatype xfer_type;
    tu_init_level(&argc, &argv, MPI_THREAD_SERIALIZED, MPI_THREAD_SERIALIZED, 2);
    double deadline = tu_deadline();
    if (tu_rank == 0) {
        MPI_Type_contiguous(send_partlength, MPI_DOUBLE, &xfer_type);
        MPI_Type_commit(&xfer_type);
        TU_MPI(MPI_Psend_init(message, send_partitions, count, xfer_type, dest, tag, MPI_COMM_WORLD,
                              info, &request));
        TU_MPI(MPI_Start(&request));
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
        MPI_Type_free(&xfer_type);
    } else if (tu_rank == 1) {
        MPI_Type_contiguous(recv_partlength, MPI_DOUBLE, &xfer_type);
        MPI_Type_commit(&xfer_type);
        TU_MPI(MPI_Precv_init(message, recv_partitions, count, xfer_type, source, tag,
                              MPI_COMM_WORLD, info, &request));
        TU_MPI(MPI_Start(&request));
        while (!flag) {
            /* do useful work #1 */
            TU_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
            /* do useful work #2 */
            tu_check_deadline(deadline, "receive");
        }
        TU_MPI(MPI_Request_free(&request));
        MPI_Type_free(&xfer_type);
        tu_verify(message, sizeof message, 0, 0, 0, "message");
    }
    return tu_finish();
}
