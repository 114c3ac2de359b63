// SPDX-License-Identifier: BSD-3-Clause
// Collective: the engine-side half of a partitioned collective request (MPIX_Pbcast_init,
// MPIX_Preduce_init, MPIX_Pallreduce_init). This rank's part of the algorithm is a schedule of
// internal partitioned point-to-point transfers (progress::Transfer, any backend) along a
// tree that follows the nodes (common/tree.hpp); the Collective is also the progress::Task that
// moves each partition from one transfer to the next (forwarding, combining with MPI_Reduce_local)
// in the engine's progress passes. A requests::Request owns it, as it owns a Transfer for
// point-to-point.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/backend.hpp"
#include "common/config.hpp"
#include "common/tree.hpp"
#include "progress/task.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::requests {

enum class CollKind : std::uint8_t { Bcast, Reduce, Allreduce };

/// What MPIX_Pbcast_init / MPIX_Preduce_init / MPIX_Pallreduce_init were given (checked by the
/// API layer). A bcast's buffer is recvbuf.
struct CollArgs {
    CollKind kind = CollKind::Bcast;
    const void* sendbuf = nullptr;  ///< MPI_IN_PLACE: the contribution is in recvbuf
    void* recvbuf = nullptr;
    int partitions = 0;
    MPI_Count count = 0;  ///< elements per partition
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int root = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    std::int64_t type_size = 0;
    MPI_Aint extent = 0;
    RequestOptions options{};
};

/// The number MPI_Op @p op has in the collectives' signature: 1.. for a predefined op, 0 for
/// a user op (its handle means nothing on another process).
int op_number(MPI_Op op) noexcept;
/// MPI_SUCCESS when @p op may reduce @p type (the standard's table of predefined ops on
/// predefined types; a derived type is checked on the named types it is built from; a user op
/// takes any type), else MPI_ERR_OP's code.
int check_op(MPI_Op op, MPI_Datatype type);

class Collective final : public progress::Task, public std::enable_shared_from_this<Collective> {
   public:
    /// Builds this rank's schedule and its internal transfers (their Setups leave at once; no
    /// collective MPI call). Throws Error / std::bad_alloc.
    explicit Collective(const CollArgs& a);
    ~Collective() override;
    Collective(const Collective&) = delete;
    Collective& operator=(const Collective&) = delete;

    /// The Transfer a request holds for this collective (Kind::Coll; never paired, its
    /// endpoint's buf is this collective): the request layer's point-to-point fields stay
    /// where they are.
    std::shared_ptr<progress::Transfer> face() { return {shared_from_this(), face_.get()}; }
    /// The collective whose face() @p t is.
    static Collective& of(const progress::Transfer& t) noexcept
    {
        return *static_cast<Collective*>(t.endpoint().buf);
    }

    int partitions() const noexcept { return parts_; }
    /// This rank marks partitions with MPI_Pready* (a bcast's root; every rank of a reduction).
    bool contributes() const noexcept { return contributes_; }
    /// This rank gets a result it may poll with MPI_Parrived (a bcast's non-roots, a reduce's
    /// root, every rank of an allreduce).
    bool receives() const noexcept
    {
        return kind_ == CollKind::Allreduce || ((kind_ == CollKind::Bcast) != (rank_ == root_));
    }
    /// The backend of the internal transfers (all were asked for the same one).
    BackendKind backend() const noexcept;

    /// MPI_Start (the request is Starting, nobody else inside): resets the round, starts every
    /// internal transfer and hangs the task on the progress passes. Throws like Engine::start.
    void start();
    /// MPI_Pready* on partitions [@p lo, @p hi] (the caller checked the range). Lock-free.
    [[nodiscard]] int pready(int lo, int hi, bool flush) noexcept;
    /// Issues the queued MPI work of the transfers a Pready fed (MPI_THREAD_MULTIPLE).
    void flush_ready() noexcept;
    /// MPI_Parrived on an active request: partition @p p of the result is final in recvbuf.
    [[nodiscard]] int parrived(int p, int* flag) noexcept;
    /// Every internal transfer's round is over (completed, or aborted when the round failed)
    /// and every forwarding step is done (or the round failed).
    bool round_complete() const noexcept;
    /// The round's error; read after round_complete() returned true.
    int round_error() const noexcept;
    /// MPI_Request_free: withdraws the task and every internal transfer from the engine.
    void release();

    bool advance_locked() noexcept override;
    /// No step of this round is pending and the first round's check is over: only a change
    /// of the internal transfers (or a failure) gives advance_locked() something to do.
    bool waits_on_transfers() const noexcept override;

   private:
    using TransferPtr = std::shared_ptr<progress::Transfer>;
    /// Partition state bits of a round.
    static constexpr std::uint8_t kOwn = 1;    ///< marked by MPI_Pready
    static constexpr std::uint8_t kUp = 2;     ///< reduction phase done (combined and passed on)
    static constexpr std::uint8_t kDown = 4;   ///< forwarded to the bcast children
    static constexpr std::uint8_t kFinal = 8;  ///< final in recvbuf (no transfer reports it)

    bool reduces() const noexcept { return kind_ != CollKind::Bcast; }
    void build_tree(const CollArgs& a);
    /// The reduction phase along @p tree (rooted at rank 0, combining in rank order).
    void build_reduce(const CollArgs& a, const TreeLinks& tree);
    /// The bcast phase along @p tree, from and into @p buf.
    void build_bcast(const CollArgs& a, const TreeLinks& tree, void* buf);
    /// A new internal transfer of this rank to/from @p peer over @p buf (@p parts partitions of
    /// @p count elements).
    TransferPtr add_transfer(Kind kind, const void* buf, int peer, int tag, const CollArgs& a,
                             int parts, MPI_Count count);
    TransferPtr add_transfer(Kind kind, const void* buf, int peer, int tag, const CollArgs& a)
    {
        return add_transfer(kind, buf, peer, tag, a, parts_, count_);
    }
    /// The first round's check: empty transfers both ways along the edges of the tree rooted
    /// at rank 0, whatever the collective's root. Members that disagree (on the root, too)
    /// pair there and fail; and the first round completes nowhere before rank 0 has heard,
    /// up the tree, that every member's transfers paired, and told them so down the tree: a
    /// mismatch anywhere fails the round on every member.
    void build_checks(const CollArgs& a);
    /// The first round's check step (engine lock held).
    void advance_check_locked() noexcept;
    /// The checks a derived datatype's partition copy needs (before the key is taken).
    void size_scratch();
    /// The bytes of partition @p p in a buffer laid out like the user's.
    char* part(const void* buf, int p) const noexcept;
    /// Marks @p p on @p t (engine lock held): issues the queued work at once.
    static void mark_locked(progress::Transfer& t, int p) noexcept;
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
    void fail(int code) noexcept;
    /// The error of a failed internal transfer, or MPI_SUCCESS (engine lock held).
    int transfer_error_locked() const noexcept;
    /// The round failed with @p code: every internal transfer still running is aborted (its
    /// posted receives cancelled, its peer told), so every member's round ends with an error
    /// and no receive writes into the temporary buffers any more (engine lock held).
    void abort_all_locked(int code) noexcept;
    bool all_transfers_done() const noexcept;
    /// Moves every partition whose inputs are there (engine lock held).
    void advance_steps_locked() noexcept;

    const CollKind kind_;
    const int parts_;
    const MPI_Count count_;
    const MPI_Op op_;
    int rank_ = 0;
    int size_ = 1;
    int root_ = 0;
    MPI_Datatype type_ = MPI_DATATYPE_NULL;  ///< the library's handle (a duplicate if derived)
    bool owns_type_ = false;
    MPI_Aint extent_ = 0;
    MPI_Aint true_lb_ = 0;
    MPI_Aint true_extent_ = 0;
    bool dense_ = false;  ///< a partition is count * extent bytes without holes (memcpy)
    std::uint64_t key_ = 0;
    CollSig sig_{};  ///< carried by every internal transfer's Setup
    std::shared_ptr<progress::Transfer> face_;
    bool contributes_ = false;
    /// A leaf of the reduction tree: its own partitions go up from the Pready caller.
    bool direct_up_ = false;
    bool need_up_ = false;    ///< the task combines and passes on partitions
    bool need_down_ = false;  ///< the task forwards arrived partitions to bcast children
    const char* own_ = nullptr;
    char* recv_ = nullptr;
    char* result_ = nullptr;  ///< where the reduction phase leaves partition p (before delivery)

    TransferPtr down_recv_;                    ///< bcast: from the parent, into recvbuf
    std::vector<TransferPtr> down_sends_;      ///< bcast: to the children, from recvbuf
    TransferPtr up_send_;                      ///< reduction: to the parent
    std::vector<TransferPtr> up_recvs_;        ///< reduction: from the children, ascending ranks
    TransferPtr relay_send_;                   ///< reduce at rank 0 with another root
    TransferPtr relay_recv_;                   ///< reduce at a root other than rank 0
    TransferPtr check_up_send_;                ///< first round: "my subtree paired", to the parent
    std::vector<TransferPtr> check_up_recvs_;  ///< ... from the children
    TransferPtr check_down_recv_;              ///< "every member paired", from the parent
    std::vector<TransferPtr> check_down_sends_;  ///< ... to the children
    std::vector<TransferPtr> data_;              ///< the transfers that carry partitions
    bool started_once_ = false;
    bool up_checked_ = false;    ///< engine lock: check_up_send_ marked (rank 0: down sent)
    bool down_checked_ = false;  ///< engine lock: check_down_sends_ marked
    std::vector<TransferPtr> all_;
    /// Receive buffers of up_recvs_ (the last one also holds the combined result).
    std::vector<std::unique_ptr<char[]>> temps_;
    std::vector<char*> temp_bases_;
    std::vector<char> scratch_;  ///< pack/unpack of a non-dense partition copy
    char check_byte_ = 0;        ///< the (empty) buffer of the bcast's check transfers

    std::unique_ptr<std::atomic<std::uint8_t>[]> state_;
    std::atomic<int> ready_count_{0};      ///< partitions marked by MPI_Pready this round
    std::atomic<int> pending_{0};          ///< partitions the task still has to move this round
    std::atomic<int> error_{MPI_SUCCESS};  ///< sticky: a failed round fails every later one
    int cursor_ = 0;                       ///< engine lock: first partition not yet all moved
};

}  // namespace mpipcl::requests
