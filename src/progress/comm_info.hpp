// SPDX-License-Identifier: BSD-3-Clause
// Identifies a user communicator the same way on all its members without communicating, and
// translates its ranks to the library's private communicator.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace mpipcl::progress {

void comm_info_init();      ///< creates the attribute keyval (MPI_Init*)
void comm_info_finalize();  ///< frees it (MPI_Finalize)

/// The key of @p comm: derived from its parent's key and creation order when the
/// communicator was created through a wrapped constructor (MPI_Comm_dup, _split, _create ...),
/// otherwise a hash of its group's world ranks. Throws Error(BadComm) for intercommunicators.
std::uint64_t comm_key(MPI_Comm comm);

/// The rank of @p rank of @p comm in MPI_COMM_WORLD (== the private communicator).
int world_rank_of(MPI_Comm comm, int rank);

/// Called by the wrapped communicator constructors after PMPI created @p newcomm from
/// @p parent (collectively, on every member, in the same order).
void note_child_comm(MPI_Comm parent, MPI_Comm newcomm);

}  // namespace mpipcl::progress
