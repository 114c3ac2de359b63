// SPDX-License-Identifier: BSD-3-Clause
// TreeCollective: MPIX_Pbcast_init, MPIX_Preduce_init, MPIX_Pallreduce_init. Partitions move
// along trees that follow the nodes (collectives/tree.hpp): a bcast forwards each arrived
// partition to the children at once, a reduction combines each partition (MPI_Reduce_local,
// rank order) as soon as this rank's and its children's are there and passes it up; an
// allreduce is a reduction to rank 0 and a bcast from it, pipelined per partition.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/tree.hpp"

namespace mpipcl::collectives {

class TreeCollective final : public Collective {
   public:
    /// Builds this rank's schedule (args.send: the one side; a bcast's buffer is recvbuf).
    /// Throws Error / std::bad_alloc.
    explicit TreeCollective(const CollArgs& a);
    ~TreeCollective() override;

   private:
    /// Partition state bits of a round (kOwn: marked by MPI_Pready).
    static constexpr std::uint8_t kUp = 2;     ///< reduction phase done (combined and passed on)
    static constexpr std::uint8_t kDown = 4;   ///< forwarded to the bcast children
    static constexpr std::uint8_t kFinal = 8;  ///< final in recvbuf (no transfer reports it)

    void on_ready(int p, bool* queued) noexcept override;
    void flush_sends() noexcept override;
    bool part_arrived(int p) const noexcept override;
    int steps() const noexcept override;
    void reset_round() noexcept override { cursor_ = 0; }
    void advance_steps_locked() noexcept override;
    bool pready_feeds_task() const noexcept override { return need_up_; }

    bool reduces() const noexcept { return kind_ != CollKind::Bcast; }
    void build_tree(const CollArgs& a);
    /// The reduction phase along @p tree (rooted at rank 0, combining in rank order).
    void build_reduce(const TreeLinks& tree);
    /// The bcast phase along @p tree, from and into @p buf.
    void build_bcast(const TreeLinks& tree, void* buf);
    TransferPtr add(Kind kind, const void* buf, int peer, int tag)
    {
        return add_transfer(kind, buf, peer, tag, side_, type_);
    }
    /// The checks a derived datatype's partition copy needs (before the key is taken).
    void size_scratch();
    /// The bytes of partition @p p in a buffer laid out like the user's.
    char* part(const void* buf, int p) const noexcept;
    /// Reduction phase of @p p: combines when its inputs are there, passes the result on.
    bool try_up_locked(int p) noexcept;
    /// Bcast phase of @p p on an interior rank: forwards it once it arrived.
    bool try_down_locked(int p) noexcept;
    /// own ∘ child 0 ∘ ... ∘ child k-1 of partition @p p (rank order, for non-commutative ops);
    /// returns where the result is.
    char* combine_locked(int p) noexcept;
    /// Copies partition @p p from @p src to @p dst (typed: holes of @p dst stay untouched).
    void copy_part_locked(const char* src, char* dst) noexcept;
    void reduce_local(const char* in, char* inout) noexcept;

    const int parts_;
    const MPI_Count count_;
    const MPI_Op op_;
    const Side side_;
    int root_ = 0;
    MPI_Datatype type_ = MPI_DATATYPE_NULL;  ///< the library's handle (a duplicate if derived)
    MPI_Aint extent_ = 0;
    MPI_Aint true_lb_ = 0;
    MPI_Aint true_extent_ = 0;
    bool dense_ = false;  ///< a partition is count * extent bytes without holes (memcpy)
    /// A leaf of the reduction tree: its own partitions go up from the Pready caller.
    bool direct_up_ = false;
    bool need_up_ = false;    ///< the task combines and passes on partitions
    bool need_down_ = false;  ///< the task forwards arrived partitions to bcast children
    const char* own_ = nullptr;
    char* recv_ = nullptr;
    char* result_ = nullptr;  ///< where the reduction phase leaves partition p (before delivery)

    TransferPtr down_recv_;                ///< bcast: from the parent, into recvbuf
    std::vector<TransferPtr> down_sends_;  ///< bcast: to the children, from recvbuf
    TransferPtr up_send_;                  ///< reduction: to the parent
    std::vector<TransferPtr> up_recvs_;    ///< reduction: from the children, ascending ranks
    TransferPtr relay_send_;               ///< reduce at rank 0 with another root
    TransferPtr relay_recv_;               ///< reduce at a root other than rank 0
    /// Receive buffers of up_recvs_ (the last one also holds the combined result).
    std::vector<std::unique_ptr<char[]>> temps_;
    std::vector<char*> temp_bases_;
    std::vector<char> scratch_;  ///< pack/unpack of a non-dense partition copy
    int cursor_ = 0;             ///< engine lock: first partition not yet all moved
};

}  // namespace mpipcl::collectives
