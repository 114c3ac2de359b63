/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain MPI (no mpipcl): an MPI_Put to a dynamic window with a derived target datatype whose
 * first touched byte lies above its lower bound (true_lb > lb, here a 2-d subarray box that
 * starts at (2,2)), when only the touched bytes [addr+true_lb, addr+true_lb+true_extent) are
 * attached. Every byte the Put writes is attached memory, so MPI-4 (12.2.4) allows it.
 *   A: target_disp = addr (the type's own origin), target type = the subarray;
 *   B: target_disp = addr + true_lb, the same type map shifted down by true_lb (lb kept, so the
 *      shifted type has lb = -true_lb);
 *   C: as B, the shifted type resized to lb 0 (lb == true_lb == 0): what mpipcl's rma backend
 *      sends (it addresses the target from its first touched byte, not its lb).
 * Each Put writes COUNT elements (COUNT boxes, one per 8x8 array).
 * Each case's return code and the received data are checked; exit 0 when all three work.
 *   mpicc -O2 osc_true_lb_range.c -o osc_true_lb_range && mpiexec -n 2 ./osc_true_lb_range
 * Result (2 processes on one 2-core VM, shared memory, COUNT 3): A, B and C pass on
 * Open MPI 5.0.7 (osc rdma; Debian 13), Open MPI 4.1.4 (Debian 12), MPICH 4.2.1 (Debian 13)
 * and MPICH 4.0.2 (Debian 12): no MPI here refuses case A. mpipcl addresses the receiver as in
 * C all the same (see src/rma/backend.cpp, init_receiver). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 8
#define SUB 4
#define START 2
#define COUNT 3 /* elements per Put */

static const char* err_name(int rc)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    int cls = 0;
    if (rc == MPI_SUCCESS) {
        return "MPI_SUCCESS";
    }
    MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_RMA_RANGE) {
        return "MPI_ERR_RMA_RANGE";
    }
    MPI_Error_string(rc, text, &len);
    return text;
}

/* The subarray's type map shifted down by true_lb (an hindexed MPI_INT type), resized to
 * (new_lb, extent). */
static MPI_Datatype shifted(MPI_Aint true_lb, MPI_Aint new_lb, MPI_Aint extent)
{
    int lens[SUB];
    MPI_Aint disps[SUB];
    for (int i = 0; i < SUB; ++i) {
        lens[i] = SUB;
        disps[i] = (MPI_Aint)((START + i) * DIM + START) * (MPI_Aint)sizeof(int) - true_lb;
    }
    MPI_Datatype raw;
    MPI_Datatype t;
    MPI_Type_create_hindexed(SUB, lens, disps, MPI_INT, &raw);
    MPI_Type_create_resized(raw, new_lb, extent, &t);
    MPI_Type_free(&raw);
    MPI_Type_commit(&t);
    return t;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            fprintf(stderr, "run with 2 processes\n");
        }
        MPI_Finalize();
        return 2;
    }
    int sizes[2] = {DIM, DIM};
    int subs[2] = {SUB, SUB};
    int starts[2] = {START, START};
    MPI_Datatype box;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &box);
    MPI_Type_commit(&box);
    MPI_Aint lb = 0;
    MPI_Aint extent = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_extent = 0;
    MPI_Type_get_extent(box, &lb, &extent);
    MPI_Type_get_true_extent(box, &true_lb, &true_extent);

    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);

    const char* names[3] = {"A (disp=addr, subarray)", "B (disp=addr+true_lb, lb kept)",
                            "C (disp=addr+true_lb, lb 0)"};
    int failed = 0;
    for (int c = 0; c < 3; ++c) {
        int rc = MPI_SUCCESS;
        if (rank == 1) {
            int* buf = calloc(COUNT * DIM * DIM, sizeof(int));
            char* first = (char*)buf + true_lb;
            MPI_Win_attach(win, first, (MPI_Aint)((COUNT - 1) * extent + true_extent));
            MPI_Aint addr = 0;
            MPI_Get_address(buf, &addr);
            MPI_Send(&addr, 1, MPI_AINT, 0, c, MPI_COMM_WORLD);
            MPI_Recv(&rc, 1, MPI_INT, 0, c, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int e = 0; e < COUNT && rc == MPI_SUCCESS; ++e) {
                for (int i = 0; i < DIM; ++i) {
                    for (int j = 0; j < DIM; ++j) {
                        const int in =
                            i >= START && i < START + SUB && j >= START && j < START + SUB;
                        const int v = e * SUB * SUB + (i - START) * SUB + (j - START);
                        bad += buf[(e * DIM + i) * DIM + j] != (in ? 1000 * c + v + 1 : 0);
                    }
                }
            }
            MPI_Send(&bad, 1, MPI_INT, 0, c, MPI_COMM_WORLD);
            MPI_Win_detach(win, first);
            free(buf);
        } else {
            MPI_Aint addr = 0;
            MPI_Recv(&addr, 1, MPI_AINT, 1, c, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int src[COUNT * SUB * SUB];
            for (int i = 0; i < COUNT * SUB * SUB; ++i) {
                src[i] = 1000 * c + i + 1;
            }
            MPI_Datatype t = box;
            MPI_Aint disp = addr;
            if (c > 0) {
                t = shifted(true_lb, c == 1 ? lb - true_lb : 0, extent);
                disp = MPI_Aint_add(addr, true_lb);
            }
            rc = MPI_Put(src, COUNT * SUB * SUB, MPI_INT, 1, disp, COUNT, t, win);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Win_flush(1, win);
            }
            if (t != box) {
                MPI_Type_free(&t);
            }
            MPI_Send(&rc, 1, MPI_INT, 1, c, MPI_COMM_WORLD);
            int bad = 0;
            MPI_Recv(&bad, 1, MPI_INT, 1, c, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("%s: %s%s\n", names[c], err_name(rc),
                   rc == MPI_SUCCESS ? (bad ? ", WRONG DATA" : ", data ok") : "");
            failed += rc != MPI_SUCCESS || bad != 0;
        }
    }
    if (rank == 0) {
        printf("lb %ld extent %ld true_lb %ld true_extent %ld: %s\n", (long)lb, (long)extent,
               (long)true_lb, (long)true_extent, failed ? "FAILED" : "all passed");
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Type_free(&box);
    MPI_Finalize();
    return failed ? 1 : 0;
}
