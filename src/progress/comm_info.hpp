// SPDX-License-Identifier: BSD-3-Clause
// Identifies a user communicator the same way on all its members without communicating, and
// translates its ranks to the library's private communicator.
//
// Keys: MPI_COMM_WORLD and MPI_COMM_SELF get fixed keys at MPI_Init*. A communicator made by a
// wrapped constructor (src/api/init.cpp: every MPI communicator constructor except the dynamic
// process ones) gets a key derived from what all its members agree on: its parent's key and
// creation count, or — where the call is not collective over a whole parent — a creation count
// per (string) tag and groups. Remaining limit: a communicator created behind the library's
// back (another library calling PMPI_Comm_dup etc. directly, or MPI_Comm_spawn/_connect/
// _accept/_join/_get_parent) is keyed by a hash of its groups' MPI_COMM_WORLD ranks only, so
// two of those with the same group(s) share a key, and their partitioned operations with the
// same (peer, tag) at the same time pair in init order across them (docs/design.md).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace mpipcl::progress {

/// MPI_Init*: maps the processes to nodes (collective over @p world, a duplicate of
/// MPI_COMM_WORLD), creates the attribute keyval, keys WORLD and SELF.
void comm_info_init(MPI_Comm world);
void comm_info_finalize();  ///< frees it (MPI_Finalize)

/// The key of @p comm (see above). Throws Error(BadComm) for intercommunicators.
std::uint64_t comm_key(MPI_Comm comm);

/// The key of the next partitioned collective initialized on @p comm: derived from @p comm's
/// key and the number of collective inits on it so far. MPI makes every member initialize
/// collectives on one communicator in the same order, so the n-th one gets the same key on
/// every member, and keys the internal transfers of that collective apart from every other
/// operation's. Throws Error(BadComm) for intercommunicators.
std::uint64_t collective_key(MPI_Comm comm);

/// The rank of @p rank of @p comm in MPI_COMM_WORLD (== the private communicator).
int world_rank_of(MPI_Comm comm, int rank);

/// The node of every rank of @p comm: equal values for ranks that share memory
/// (MPI_COMM_TYPE_SHARED at MPI_Init*; the value is the node's lowest MPI_COMM_WORLD rank).
std::vector<int> nodes_of(MPI_Comm comm);
/// The node of MPI_COMM_WORLD rank @p world_rank (as nodes_of), -1 if unknown.
int node_of_world(int world_rank);

// Called by the wrapped constructors after PMPI created @p newcomm, on every process that
// called the constructor; each throws Error when an MPI query fails (the communicator then
// falls back to the group hash at first use).

/// A constructor collective over all of @p parent, called in the same order on every member
/// (MPI_Comm_dup, _split, _create, MPI_Cart_*, MPI_Graph_create, MPI_Dist_graph_create*,
/// MPI_Intercomm_merge with the intercommunicator as parent). @p newcomm may be MPI_COMM_NULL.
void note_child_comm(MPI_Comm parent, MPI_Comm newcomm);

/// MPI_Comm_idup(_with_info): the key is derived now (the parent's count advances in call
/// order) and bound to @p newcomm at its first use, which MPI allows only after completion.
void note_pending_child_comm(MPI_Comm parent, MPI_Comm newcomm);

/// MPI_Comm_create_group: collective over @p newcomm's group only, so @p parent's count is
/// not touched; the key counts the creations per (parent, @p tag, group) instead.
void note_group_child_comm(MPI_Comm parent, int tag, MPI_Comm newcomm);

/// MPI_Comm_create_from_group, MPI_Intercomm_create_from_groups: no parent; the key counts
/// the creations per (@p stringtag, groups).
void note_tagged_comm(const char* stringtag, MPI_Comm newcomm);

/// MPI_Intercomm_create: the two sides have different local communicators, so the key counts
/// the creations per (unordered) pair of groups.
void note_intercomm(MPI_Comm newintercomm);

/// MPI_Comm_free, MPI_Comm_disconnect: before MPI may reuse @p comm's handle value.
void forget_comm(MPI_Comm comm);

}  // namespace mpipcl::progress
