// SPDX-License-Identifier: BSD-3-Clause
// BlockCollective: MPIX_Pgather_init, MPIX_Pallgather_init, MPIX_Palltoall_init,
// MPIX_Pneighbor_alltoall_init. Every block a rank sends to another (itself included) is one
// internal partitioned send, every block it receives one internal partitioned receive, so a
// marked partition leaves at once and each pair of blocks may be cut into different partition
// counts, with different datatypes, as for point-to-point. Only an allgather across nodes has
// steps for the task (a leader forwards each arrived partition); otherwise the task only
// carries the first round's check and spreads a failure.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <vector>

#include "collectives/collective.hpp"

namespace mpipcl::collectives {

class BlockCollective final : public Collective {
   public:
    /// Builds this rank's transfers. Throws Error (MPI_ERR_TOPOLOGY for a neighbour alltoall
    /// on a communicator without one) / std::bad_alloc.
    explicit BlockCollective(const CollArgs& a);
    ~BlockCollective() override;

    /// This rank's neighbours in MPI_Neighbor_alltoall's order and the tag index that pairs
    /// each block with its peer's (its occurrence among equal neighbours; a cartesian
    /// communicator's lower neighbour sends its upper block). Throws Error.
    struct Neighbours {
        std::vector<int> out, out_tag;  ///< send block j goes to out[j]
        std::vector<int> in, in_tag;    ///< receive block i comes from in[i]
    };
    static Neighbours neighbours(MPI_Comm comm);

   private:
    void on_ready(int p, bool* queued) noexcept override;
    void flush_sends() noexcept override;
    bool part_arrived(int q) const noexcept override;
    int steps() const noexcept override;
    void reset_round() noexcept override;
    void advance_steps_locked() noexcept override;

    /// The peers of each send and receive block (MPI_PROC_NULL: none) and their tag indices.
    Neighbours peers(const CollArgs& a) const;
    void build(const CollArgs& a);
    /// An allgather: one bcast of every rank's block along the tree that follows the nodes
    /// (node_tree, Inside::Flat), so a block crosses each node boundary once; an interior rank
    /// forwards each partition of a block as soon as it arrived.
    void build_allgather(const CollArgs& a, MPI_Datatype stype, MPI_Datatype rtype);
    /// Block @p b of @p buf laid out as @p s.
    static const char* block(const void* buf, const Side& s, int b) noexcept;

    Side send_{};
    Side recv_{};
    /// This rank's own block is in recvbuf (MPI_IN_PLACE): its index there, else -1.
    int own_block_ = -1;
    int ready_per_block_ = 0;  ///< partitions per send block MPI_Pready numbers
    /// Per send block, the transfers that carry it (allgather: one per rank; none towards
    /// MPI_PROC_NULL or an in-place gather root's own block).
    std::vector<std::vector<TransferPtr>> sends_;
    /// Per receive block, its transfer (null: from MPI_PROC_NULL, or the in-place own block).
    std::vector<TransferPtr> recvs_;
    /// Per send block: a Pready queued MPI work on its transfers that no flush issued yet.
    std::unique_ptr<std::atomic<bool>[]> queued_;
    /// An allgather's interior rank: a block it receives and passes on to its children.
    struct Forward {
        TransferPtr from;
        std::vector<TransferPtr> to;
        std::vector<char> done;  ///< engine lock: partition forwarded this round
    };
    std::vector<Forward> forwards_;
};

}  // namespace mpipcl::collectives
