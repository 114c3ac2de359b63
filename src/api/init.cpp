// SPDX-License-Identifier: BSD-3-Clause
// Wrapped initialization, finalization, communicator constructors (each gives its
// communicator an identity: progress/comm_info.hpp) and destructors, plus the check that our
// symbols really interpose the MPI library's.
#include <dlfcn.h>
#include <mpi.h>

#include "common/error.hpp"
#include "common/log.hpp"
#include "mpipcl.h"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

using mpipcl::progress::Engine;
using mpipcl::progress::forget_comm;
using mpipcl::progress::note_child_comm;
using mpipcl::progress::note_group_child_comm;
using mpipcl::progress::note_intercomm;
using mpipcl::progress::note_pending_child_comm;
using mpipcl::progress::note_tagged_comm;

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

/// Returns the PMPI result @p rc unchanged; when it is MPI_SUCCESS (and the library is up),
/// first runs @p note, which records a communicator's identity (progress/comm_info.hpp).
/// Nothing it throws leaves: a new communicator then gets the group hash at its first use.
template <class Note>
int noted(int rc, Note&& note) noexcept
{
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    try {
        if (Engine::instance().initialized()) {
            note();
        }
    } catch (const std::exception& e) {
        MPIPCL_LOG(Warn, "communicator identity not recorded: %s", e.what());
    } catch (...) {
        MPIPCL_LOG(Warn, "communicator identity not recorded");
    }
    return rc;
}

/// The constructors collective over all of @p parent.
int note_child(int rc, MPI_Comm parent, const MPI_Comm* newcomm) noexcept
{
    return noted(rc, [&] { note_child_comm(parent, *newcomm); });
}

/// @p comm, after the library forgot its handle (MPI reuses the value once it is freed).
MPI_Comm* forgotten(MPI_Comm* comm) noexcept
{
    if (comm != nullptr) {
        noted(MPI_SUCCESS, [&] { forget_comm(*comm); });
    }
    return comm;
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
    MPIPCL_LOG(Info, "library shut down; entering the MPI's MPI_Finalize");
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

MPIPCL_API int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request)
{
    return noted(PMPI_Comm_idup(comm, newcomm, request),
                 [&] { note_pending_child_comm(comm, *newcomm); });
}

#if MPIPCL_MPI_HAS_COMM_IDUP_WITH_INFO
MPIPCL_API int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm,
                                       MPI_Request* request)
{
    return noted(PMPI_Comm_idup_with_info(comm, info, newcomm, request),
                 [&] { note_pending_child_comm(comm, *newcomm); });
}
#endif

MPIPCL_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm)
{
    return noted(PMPI_Comm_create_group(comm, group, tag, newcomm),
                 [&] { note_group_child_comm(comm, tag, *newcomm); });
}

#if MPIPCL_MPI_HAS_COMM_CREATE_FROM_GROUP
MPIPCL_API int MPI_Comm_create_from_group(MPI_Group group, const char* stringtag, MPI_Info info,
                                          MPI_Errhandler errhandler, MPI_Comm* newcomm)
{
    return noted(PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm),
                 [&] { note_tagged_comm(stringtag, *newcomm); });
}
#endif

MPIPCL_API int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                    int remote_leader, int tag, MPI_Comm* newintercomm)
{
    return noted(PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag,
                                       newintercomm),
                 [&] { note_intercomm(*newintercomm); });
}

#if MPIPCL_MPI_HAS_INTERCOMM_CREATE_FROM_GROUPS
MPIPCL_API int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                                MPI_Group remote_group, int remote_leader,
                                                const char* stringtag, MPI_Info info,
                                                MPI_Errhandler errhandler, MPI_Comm* newintercomm)
{
    return noted(
        PMPI_Intercomm_create_from_groups(local_group, local_leader, remote_group, remote_leader,
                                          stringtag, info, errhandler, newintercomm),
        [&] { note_tagged_comm(stringtag, *newintercomm); });
}
#endif

MPIPCL_API int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm)
{
    return note_child(PMPI_Intercomm_merge(intercomm, high, newintracomm), intercomm, newintracomm);
}

MPIPCL_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm)
{
    return note_child(PMPI_Cart_sub(comm, remain_dims, newcomm), comm, newcomm);
}

MPIPCL_API int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm* comm_graph)
{
    return note_child(PMPI_Graph_create(comm_old, nnodes, index, edges, reorder, comm_graph),
                      comm_old, comm_graph);
}

MPIPCL_API int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                                     const int degrees[], const int destinations[],
                                     const int weights[], MPI_Info info, int reorder,
                                     MPI_Comm* comm_dist_graph)
{
    return note_child(PMPI_Dist_graph_create(comm_old, n, sources, degrees, destinations, weights,
                                             info, reorder, comm_dist_graph),
                      comm_old, comm_dist_graph);
}

MPIPCL_API int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder, MPI_Comm* comm_dist_graph)
{
    return note_child(
        PMPI_Dist_graph_create_adjacent(comm_old, indegree, sources, sourceweights, outdegree,
                                        destinations, destweights, info, reorder, comm_dist_graph),
        comm_old, comm_dist_graph);
}

MPIPCL_API int MPI_Comm_free(MPI_Comm* comm) { return PMPI_Comm_free(forgotten(comm)); }

MPIPCL_API int MPI_Comm_disconnect(MPI_Comm* comm) { return PMPI_Comm_disconnect(forgotten(comm)); }

MPIPCL_API int MPIX_Pcl_interposed(int* flag)
{
    if (flag == nullptr) {
        return MPI_ERR_ARG;
    }
    *flag = interposed() ? 1 : 0;
    return MPI_SUCCESS;
}

}  // extern "C"
