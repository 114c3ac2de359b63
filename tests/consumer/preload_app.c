/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI-4.0 program that knows nothing of mpipcl: compiled and linked with the MPI's compiler
 * wrapper only, then run with LD_PRELOAD=libmpipcl.so. 2 ranks, 3 rounds, every byte checked;
 * it looks mpipcl up at run time to prove the preload took effect. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

#include "two_ranks.h"

#if PRELOAD_DECLARE_PARTITIONED
/* This MPI (Open MPI 4.1) neither declares nor defines the MPI-4.0 partitioned calls. Declared
 * weak, the program links against libmpi alone; the preloaded libmpipcl defines them. */
#pragma weak MPI_Psend_init
#pragma weak MPI_Precv_init
#pragma weak MPI_Pready
#pragma weak MPI_Parrived
int MPI_Psend_init(const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                   int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request);
int MPI_Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request);
int MPI_Pready(int partition, MPI_Request request);
int MPI_Parrived(MPI_Request request, int partition, int* flag);
#endif

enum { PARTS = 8, COUNT = 512, ROUNDS = 3 };

int main(int argc, char** argv)
{
    static double buf[PARTS * COUNT];
    int errs = 0;
    MPI_Request req;
    const int rank = two_ranks_init(&argc, &argv, "preload_app");
    /* mpipcl is not linked in: find it, and ask whether MPI_Start/MPI_Wait reach it. */
    int (*interposed_fn)(int*) = (int (*)(int*))dlsym(RTLD_DEFAULT, "MPIX_Pcl_interposed");
    int interposed = 0;
    if (interposed_fn != NULL) {
        interposed_fn(&interposed);
    }
    if (!interposed) {
        fprintf(stderr, "preload_app: rank %d: mpipcl %s\n", rank,
                interposed_fn == NULL ? "not loaded (no LD_PRELOAD?)" : "loaded, not interposed");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        MPI_Psend_init(buf, PARTS, COUNT, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    } else {
        MPI_Precv_init(buf, PARTS, COUNT, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 0; i < PARTS * COUNT; ++i) {
            buf[i] = rank == 0 ? round * 1e6 + i : -1.0;
        }
        MPI_Start(&req);
        for (int p = PARTS - 1; rank == 0 && p >= 0; --p) {
            MPI_Pready(p, req);
        }
        for (int p = 0; rank == 1 && p < PARTS; ++p) {
            int flag = 0;
            while (!flag) {
                MPI_Parrived(req, p, &flag);
            }
            for (int i = p * COUNT; i < (p + 1) * COUNT; ++i) {
                errs += buf[i] != round * 1e6 + i;
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&req);
    return two_ranks_finish(rank, errs, "preload_app");
}
