// SPDX-License-Identifier: BSD-3-Clause
// Wrapped initialization, finalization and communicator constructors, plus the check that
// our symbols really interpose the MPI library's.
#include <dlfcn.h>
#include <mpi.h>

#include "common/error.hpp"
#include "common/log.hpp"
#include "mpipcl.h"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

using mpipcl::progress::Engine;

namespace {

/// True when the process-wide definition of @p symbol lives in this library.
bool resolves_here(const char* symbol)
{
    static int anchor = 0;
    Dl_info self{};
    Dl_info found{};
    void* addr = dlsym(RTLD_DEFAULT, symbol);
    if (addr == nullptr || dladdr(&anchor, &self) == 0 || dladdr(addr, &found) == 0) {
        return true;  // statically linked or unknown: nothing to compare
    }
    return self.dli_fbase == found.dli_fbase;
}

bool interposed()
{
    return resolves_here("MPI_Wait") && resolves_here("MPI_Start") && resolves_here("MPI_Pready") &&
           resolves_here("MPI_Init_thread");
}

void init_library()
{
    try {
        Engine::instance().init();
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "initialization failed: %s", e.what());
        return;
    }
    if (!interposed()) {
        MPIPCL_LOG(Error,
                   "MPI calls do not resolve to libmpipcl: put -lmpipcl before the MPI "
                   "library on the link line or use LD_PRELOAD=libmpipcl.so");
    }
}

/// Runs when the library is loaded: warns early when the MPI library's symbols win.
__attribute__((constructor)) void check_link_order()
{
    if (!resolves_here("MPI_Init") || !resolves_here("MPI_Wait")) {
        MPIPCL_LOG(Warn,
                   "libmpipcl is loaded but the MPI library's own MPI_Init/MPI_Wait win: "
                   "link -lmpipcl before the MPI library or use LD_PRELOAD");
    }
}

int note_child(int rc, MPI_Comm parent, const MPI_Comm* newcomm)
{
    if (rc == MPI_SUCCESS && Engine::instance().initialized()) {
        mpipcl::progress::note_child_comm(parent, *newcomm);
    }
    return rc;
}

}  // namespace

extern "C" {

MPIPCL_API int MPI_Init(int* argc, char*** argv)
{
    const int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        init_library();
    }
    return rc;
}

MPIPCL_API int MPI_Init_thread(int* argc, char*** argv, int required, int* provided)
{
    const int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        init_library();
    }
    return rc;
}

MPIPCL_API int MPI_Finalize(void)
{
    try {
        Engine::instance().finalize();
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "finalization failed: %s", e.what());
    }
    return PMPI_Finalize();
}

MPIPCL_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm)
{
    return note_child(PMPI_Comm_dup(comm, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm)
{
    return note_child(PMPI_Comm_dup_with_info(comm, info, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm)
{
    return note_child(PMPI_Comm_split(comm, color, key, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm* newcomm)
{
    return note_child(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm)
{
    return note_child(PMPI_Comm_create(comm, group, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm* comm_cart)
{
    return note_child(PMPI_Cart_create(comm_old, ndims, dims, periods, reorder, comm_cart),
                      comm_old, comm_cart);
}

MPIPCL_API int MPIX_Pcl_interposed(int* flag)
{
    if (flag == nullptr) {
        return MPI_ERR_ARG;
    }
    *flag = interposed() ? 1 : 0;
    return MPI_SUCCESS;
}

}  // extern "C"
