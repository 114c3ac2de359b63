// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --collective gather|allgather|alltoall|neighbor: which blocks each rank sends and
// receives, and each mode's calls over them (collective.cpp runs them like bcast and reduce).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "options.hpp"

namespace mpipcl::bench {

/// Whether @p kind exchanges blocks (gather, allgather, alltoall, neighbor).
[[nodiscard]] bool is_blockwise(CollectiveKind kind);

/// The communicator @p kind runs on: for neighbor a new periodic cartesian grid over the ranks
/// of @p comm in their order (MPI_Dims_create in 2-D, a dimension of 1 dropped: 2 x 2 on 4
/// ranks, a ring on 2 or 3); else @p comm itself. Collective.
[[nodiscard]] MPI_Comm collective_comm(CollectiveKind kind, MPI_Comm comm);

/// What one rank sends and receives: send_blocks blocks in its send buffer, recv_blocks in its
/// receive buffer; receive block k comes from rank sources[k].first, which sends it from its
/// send block sources[k].second. bcast, reduce, allreduce: one block each way, from the root.
struct BlockLayout {
    int send_blocks = 1;
    int recv_blocks = 1;
    std::vector<std::pair<int, int>> sources;
};

/// The layout of @p kind on this rank of @p comm (from collective_comm); @p list_order: a
/// neighbor's two blocks of a dimension whose neighbours are one rank pair in list order
/// (ineighbor_pairs_in_list_order), not swapped as MPI-4.1 says.
[[nodiscard]] BlockLayout block_layout(CollectiveKind kind, MPI_Comm comm, int root,
                                       bool list_order = false);

/// Whether this MPI's MPI_Ineighbor_alltoall on the cartesian @p grid delivers, in a dimension
/// whose two neighbours are one rank, that rank's block 2d into block 2d (list order, as MPI
/// before the 4.1 errata; Open MPI's libnbc, open-mpi/ompi#14430) where MPI-4.1 and the
/// blocking MPI_Neighbor_alltoall put it into block 2d+1. Collective over @p grid.
[[nodiscard]] bool ineighbor_pairs_in_list_order(MPI_Comm grid);

/// One rank's buffers of a block-wise collective: blocks of partitions x per_part doubles.
struct BlockBuffers {
    CollectiveKind kind = CollectiveKind::gather;
    const double* send = nullptr;
    double* recv = nullptr;  ///< nullptr where it is not significant (a gather's non-root)
    int partitions = 1;
    std::size_t per_part = 0;
    int root = 0;
};

/// The partitioned request (MPIX_Pgather_init ..., partitions per block on both sides).
[[nodiscard]] int block_init(const BlockBuffers& b, MPI_Comm comm, MPI_Info info,
                             MPI_Request* request);

/// The whole collective at once (single): MPI_Gather, MPI_Allgather, MPI_Alltoall,
/// MPI_Neighbor_alltoall.
void block_whole(const BlockBuffers& b, MPI_Comm comm);

/// Partition @p p of every block as one non-blocking collective on @p comm (multi); @p strided
/// is strided_type's.
void block_start_part(const BlockBuffers& b, int p, MPI_Datatype strided, MPI_Comm comm,
                      MPI_Request* request);

/// per_part doubles resized to a block's extent (partitions x per_part doubles), committed:
/// one element of it per block is that block's partition. Free with MPI_Type_free.
[[nodiscard]] MPI_Datatype strided_type(int partitions, std::size_t per_part);

}  // namespace mpipcl::bench
