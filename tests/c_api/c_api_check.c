/* SPDX-License-Identifier: BSD-3-Clause */
/* Strict C11 check of the public header: prototypes, version macros, a one-rank self transfer. */
#include <mpipcl.h>

#ifndef MPIPCL_VERSION
#error "mpipcl.h does not define MPIPCL_VERSION"
#endif
#if !defined(MPIPCL_NUMVERSION) || MPIPCL_NUMVERSION < 1
#error "mpipcl.h does not define a positive MPIPCL_NUMVERSION"
#endif
_Static_assert(sizeof(MPIPCL_VERSION) > 1, "MPIPCL_VERSION is an empty string");

#define PARTS 4
#define COUNT 16
#define TAG 1

typedef int (*psend_init_fn)(const void*, int, MPI_Count, MPI_Datatype, int, int, MPI_Comm,
                             MPI_Info, MPI_Request*);
typedef int (*precv_init_fn)(void*, int, MPI_Count, MPI_Datatype, int, int, MPI_Comm, MPI_Info,
                             MPI_Request*);
typedef int (*pready_fn)(int, MPI_Request);
typedef int (*pready_range_fn)(int, int, MPI_Request);
typedef int (*parrived_fn)(MPI_Request, int, int*);
typedef int (*interposed_fn)(int*);
/* mpipcl's own declaration is exactly MPI-4.0's; where the MPI declares the calls, its own
 * prototype is in force (MPICH 4.0.2 and Open MPI 5.0 omit the const): mpipcl_config.h says. */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#if !MPIPCL_MPI_HAS_PARTITIONED
_Static_assert(sizeof(STRINGIFY(MPIPCL_PREADY_LIST_CONST)) == sizeof("const"),
               "mpipcl declares MPI_Pready_list with a const array");
#endif
typedef int (*pready_list_fn)(int, MPIPCL_PREADY_LIST_CONST int[], MPI_Request);

static int self_transfer(void)
{
    int sbuf[PARTS * COUNT], rbuf[PARTS * COUNT];
    int errors = 0;
    for (int i = 0; i < PARTS * COUNT; ++i) {
        sbuf[i] = 1000 + i;
        rbuf[i] = -1;
    }
    MPI_Request req[2];
    MPI_Psend_init(sbuf, PARTS, COUNT, MPI_INT, 0, TAG, MPI_COMM_SELF, MPI_INFO_NULL, &req[0]);
    MPI_Precv_init(rbuf, PARTS / 2, 2 * COUNT, MPI_INT, 0, TAG, MPI_COMM_SELF, MPI_INFO_NULL,
                   &req[1]);
    MPI_Startall(2, req);
    int list[2] = {3, 1};
    MPI_Pready(0, req[0]);
    MPI_Pready_range(2, 2, req[0]);
    MPI_Pready_list(1, list, req[0]);
    MPI_Pready_list(1, list + 1, req[0]);
    MPI_Status st[2];
    if (MPI_Waitall(2, req, st) != MPI_SUCCESS) {
        ++errors;
    }
    for (int p = 0; p < PARTS / 2; ++p) {
        int flag = 0;
        MPI_Parrived(req[1], p, &flag); /* inactive now: flag = true */
        errors += !flag;
    }
    for (int i = 0; i < PARTS * COUNT; ++i) {
        errors += rbuf[i] != 1000 + i;
    }
    errors += st[1].MPI_SOURCE != 0 || st[1].MPI_TAG != TAG;
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    return errors;
}

int main(int argc, char** argv)
{
    psend_init_fn psend_init = MPI_Psend_init;
    precv_init_fn precv_init = MPI_Precv_init;
    pready_fn pready = MPI_Pready;
    pready_range_fn pready_range = MPI_Pready_range;
    pready_list_fn pready_list = MPI_Pready_list;
    parrived_fn parrived = MPI_Parrived;
    interposed_fn interposed = MPIX_Pcl_interposed;
    int errors = !psend_init || !precv_init || !pready || !pready_range || !pready_list ||
                 !parrived || !interposed;

    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int flag = 0;
    errors += interposed(&flag) != MPI_SUCCESS || flag != 1;
    errors += self_transfer();
    MPI_Finalize();
    return errors ? 1 : 0;
}
