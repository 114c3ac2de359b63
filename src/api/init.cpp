// SPDX-License-Identifier: BSD-3-Clause
// Wrapped initialization, finalization, communicator constructors (each gives its
// communicator an identity: progress/comm_info.hpp) and destructors, plus the check that our
// symbols really interpose the MPI library's.
#include <dlfcn.h>
#include <mpi.h>

#include <string_view>

#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "mpipcl.h"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

static_assert(std::string_view(MPIPCL_PROGRESS_THREAD_NAME) ==
                  std::string_view(mpipcl::kProgressThreadName),
              "mpipcl.h names the progress thread as the library does");

using mpipcl::api_guard;
using mpipcl::ApiCall;
using mpipcl::ErrId;
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

/// After the MPI's own init succeeded: brings the library up. Throws what Engine::init
/// throws (the library then stays down and MPI_Init* fails with the error).
void init_library()
{
    Engine::instance().init();
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

/// A wrapped communicator constructor: runs @p create (the PMPI call) and, when it succeeds
/// and the library is up, @p note, which records the new communicator's identity
/// (progress/comm_info.hpp). A note that throws fails the call with its error, raised on
/// @p parent (the communicator exists; without its identity partitioned operations on it
/// could pair with those of another communicator of the same group).
template <class Create, class Note>
int new_comm(const char* fn, MPI_Comm parent, Create&& create, Note&& note) noexcept
{
    return api_guard(fn, [&](ApiCall& call) -> int {
        call.on(parent);
        const int rc = create();
        if (rc == MPI_SUCCESS && Engine::instance().initialized()) {
            note();
        }
        return rc;
    });
}

/// The constructors collective over all of @p parent.
template <class Create>
int child_comm(const char* fn, MPI_Comm parent, const MPI_Comm* newcomm, Create&& create) noexcept
{
    return new_comm(fn, parent, create, [&] { note_child_comm(parent, *newcomm); });
}

/// MPI_Comm_free, MPI_Comm_disconnect: the library forgets @p comm's handle (MPI reuses the
/// value once it is freed), then @p destroy (the PMPI call) runs.
template <class Destroy>
int end_comm(const char* fn, MPI_Comm* comm, Destroy&& destroy) noexcept
{
    return api_guard(fn, [&](ApiCall&) -> int {
        if (comm != nullptr) {
            forget_comm(*comm);
        }
        return destroy();
    });
}

}  // namespace

extern "C" {

MPIPCL_API int MPI_Init(int* argc, char*** argv)
{
    return api_guard("MPI_Init", [&](ApiCall&) -> int {
        const int rc = PMPI_Init(argc, argv);
        if (rc == MPI_SUCCESS) {
            init_library();
        }
        return rc;
    });
}

MPIPCL_API int MPI_Init_thread(int* argc, char*** argv, int required, int* provided)
{
    return api_guard("MPI_Init_thread", [&](ApiCall&) -> int {
        const int rc = PMPI_Init_thread(argc, argv, required, provided);
        if (rc == MPI_SUCCESS) {
            init_library();
        }
        return rc;
    });
}

MPIPCL_API int MPI_Finalize(void)
{
    // The MPI is finalized even when the library's shutdown failed (that error is returned).
    const int rc = api_guard("MPI_Finalize", [](ApiCall&) -> int {
        Engine::instance().finalize();
        return MPI_SUCCESS;
    });
    MPIPCL_LOG(Info, "library shut down; entering the MPI's MPI_Finalize");
    const int mpi_rc = PMPI_Finalize();
    return rc != MPI_SUCCESS ? rc : mpi_rc;
}

MPIPCL_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm)
{
    return child_comm("MPI_Comm_dup", comm, newcomm, [&] { return PMPI_Comm_dup(comm, newcomm); });
}

MPIPCL_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm)
{
    return child_comm("MPI_Comm_dup_with_info", comm, newcomm,
                      [&] { return PMPI_Comm_dup_with_info(comm, info, newcomm); });
}

MPIPCL_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm)
{
    return child_comm("MPI_Comm_split", comm, newcomm,
                      [&] { return PMPI_Comm_split(comm, color, key, newcomm); });
}

MPIPCL_API int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm* newcomm)
{
    return child_comm("MPI_Comm_split_type", comm, newcomm,
                      [&] { return PMPI_Comm_split_type(comm, split_type, key, info, newcomm); });
}

MPIPCL_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm)
{
    return child_comm("MPI_Comm_create", comm, newcomm,
                      [&] { return PMPI_Comm_create(comm, group, newcomm); });
}

MPIPCL_API int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm* comm_cart)
{
    return child_comm("MPI_Cart_create", comm_old, comm_cart, [&] {
        return PMPI_Cart_create(comm_old, ndims, dims, periods, reorder, comm_cart);
    });
}

MPIPCL_API int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request)
{
    return new_comm(
        "MPI_Comm_idup", comm, [&] { return PMPI_Comm_idup(comm, newcomm, request); },
        [&] { note_pending_child_comm(comm, *newcomm); });
}

#if MPIPCL_MPI_HAS_COMM_IDUP_WITH_INFO
MPIPCL_API int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm,
                                       MPI_Request* request)
{
    return new_comm(
        "MPI_Comm_idup_with_info", comm,
        [&] { return PMPI_Comm_idup_with_info(comm, info, newcomm, request); },
        [&] { note_pending_child_comm(comm, *newcomm); });
}
#endif

MPIPCL_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm)
{
    return new_comm(
        "MPI_Comm_create_group", comm,
        [&] { return PMPI_Comm_create_group(comm, group, tag, newcomm); },
        [&] { note_group_child_comm(comm, tag, *newcomm); });
}

#if MPIPCL_MPI_HAS_COMM_CREATE_FROM_GROUP
MPIPCL_API int MPI_Comm_create_from_group(MPI_Group group, const char* stringtag, MPI_Info info,
                                          MPI_Errhandler errhandler, MPI_Comm* newcomm)
{
    return new_comm(
        "MPI_Comm_create_from_group", MPI_COMM_NULL,
        [&] { return PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm); },
        [&] { note_tagged_comm(stringtag, *newcomm); });
}
#endif

MPIPCL_API int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                    int remote_leader, int tag, MPI_Comm* newintercomm)
{
    return new_comm(
        "MPI_Intercomm_create", local_comm,
        [&] {
            return PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag,
                                         newintercomm);
        },
        [&] { note_intercomm(*newintercomm); });
}

#if MPIPCL_MPI_HAS_INTERCOMM_CREATE_FROM_GROUPS
MPIPCL_API int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                                MPI_Group remote_group, int remote_leader,
                                                const char* stringtag, MPI_Info info,
                                                MPI_Errhandler errhandler, MPI_Comm* newintercomm)
{
    return new_comm(
        "MPI_Intercomm_create_from_groups", MPI_COMM_NULL,
        [&] {
            return PMPI_Intercomm_create_from_groups(local_group, local_leader, remote_group,
                                                     remote_leader, stringtag, info, errhandler,
                                                     newintercomm);
        },
        [&] { note_tagged_comm(stringtag, *newintercomm); });
}
#endif

MPIPCL_API int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm)
{
    return child_comm("MPI_Intercomm_merge", intercomm, newintracomm,
                      [&] { return PMPI_Intercomm_merge(intercomm, high, newintracomm); });
}

MPIPCL_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm)
{
    return child_comm("MPI_Cart_sub", comm, newcomm,
                      [&] { return PMPI_Cart_sub(comm, remain_dims, newcomm); });
}

MPIPCL_API int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm* comm_graph)
{
    return child_comm("MPI_Graph_create", comm_old, comm_graph, [&] {
        return PMPI_Graph_create(comm_old, nnodes, index, edges, reorder, comm_graph);
    });
}

MPIPCL_API int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                                     const int degrees[], const int destinations[],
                                     const int weights[], MPI_Info info, int reorder,
                                     MPI_Comm* comm_dist_graph)
{
    return child_comm("MPI_Dist_graph_create", comm_old, comm_dist_graph, [&] {
        return PMPI_Dist_graph_create(comm_old, n, sources, degrees, destinations, weights, info,
                                      reorder, comm_dist_graph);
    });
}

MPIPCL_API int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder, MPI_Comm* comm_dist_graph)
{
    return child_comm("MPI_Dist_graph_create_adjacent", comm_old, comm_dist_graph, [&] {
        return PMPI_Dist_graph_create_adjacent(comm_old, indegree, sources, sourceweights,
                                               outdegree, destinations, destweights, info, reorder,
                                               comm_dist_graph);
    });
}

MPIPCL_API int MPI_Comm_free(MPI_Comm* comm)
{
    return end_comm("MPI_Comm_free", comm, [&] { return PMPI_Comm_free(comm); });
}

MPIPCL_API int MPI_Comm_disconnect(MPI_Comm* comm)
{
    return end_comm("MPI_Comm_disconnect", comm, [&] { return PMPI_Comm_disconnect(comm); });
}

MPIPCL_API int MPIX_Pcl_interposed(int* flag)
{
    return api_guard("MPIX_Pcl_interposed", [&](ApiCall& call) -> int {
        if (flag == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        *flag = interposed() ? 1 : 0;
        return MPI_SUCCESS;
    });
}

}  // extern "C"
