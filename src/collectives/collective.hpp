// SPDX-License-Identifier: BSD-3-Clause
// Collective: the engine-side half of a partitioned collective request. This rank's part of
// the algorithm is a schedule of internal partitioned point-to-point transfers
// (progress::Transfer, any backend); the Collective is also the progress::Task that moves
// partitions from one transfer to the next in the engine's progress passes. This base holds
// what every collective shares: the internal transfers, the first round's check that makes a
// mismatch anywhere fail every member's round, the round's error and its completion, and the
// MPI_Pready bookkeeping. TreeCollective (bcast, reduce, allreduce) and BlockCollective
// (gather, allgather, alltoall, neighbour alltoall) are the schedules. A requests::Request
// owns one, as it owns a Transfer for point-to-point.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/config.hpp"
#include "progress/task.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::collectives {

enum class CollKind : std::uint8_t {
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Allgather,
    Alltoall,
    Neighbor
};

/// One side of a collective's buffers: partitions of count elements of datatype (checked by
/// the API layer, sizes filled in).
struct Side {
    int partitions = 0;
    MPI_Count count = 0;  ///< elements per partition
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    std::int64_t type_size = 0;
    MPI_Aint extent = 0;
};

/// What an MPIX_P*_init call was given (checked by the API layer). Bcast, reduce and allreduce
/// use send only (the one datatype; a bcast's buffer is recvbuf); the block-wise ones both
/// sides (the receive side as given, also where the MPI ignores it: gather's non-roots).
struct CollArgs {
    CollKind kind = CollKind::Bcast;
    const void* sendbuf = nullptr;  ///< MPI_IN_PLACE: the contribution is in recvbuf
    void* recvbuf = nullptr;
    Side send{};
    Side recv{};
    MPI_Op op = MPI_OP_NULL;
    int root = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    RequestOptions options{};
};

/// Creates the collective @p a describes: its schedule and its internal transfers (their
/// Setups leave at once; no collective MPI call). Throws Error / std::bad_alloc.
std::shared_ptr<class Collective> make_collective(const CollArgs& a);

class Collective : public progress::Task, public std::enable_shared_from_this<Collective> {
   public:
    ~Collective() override;
    Collective(const Collective&) = delete;
    Collective& operator=(const Collective&) = delete;

    MPI_Comm comm() const noexcept { return comm_; }
    /// The partitions MPI_Pready* may mark on this rank (0: it contributes nothing).
    int ready_partitions() const noexcept { return ready_parts_; }
    /// The partitions MPI_Parrived may ask for on this rank (0: it receives nothing).
    int arrived_partitions() const noexcept { return arrived_parts_; }
    /// The backend of the internal transfers (all were asked for the same one).
    BackendKind backend() const noexcept;

    /// MPI_Start (the request is Starting, nobody else inside): resets the round, starts every
    /// internal transfer and hangs the task on the progress passes. Throws like Engine::start.
    void start();
    /// MPI_Pready* on partitions [@p lo, @p hi] (the caller checked the range). Lock-free.
    [[nodiscard]] int pready(int lo, int hi, bool flush) noexcept;
    /// Issues the queued MPI work of the transfers a Pready fed (MPI_THREAD_MULTIPLE).
    void flush_ready() noexcept;
    /// MPI_Parrived on an active request (the caller checked the range).
    [[nodiscard]] int parrived(int p, int* flag) noexcept;
    /// Every internal transfer's round is over (completed, or aborted when the round failed)
    /// and every step of the task is done (or the round failed).
    bool round_complete() const noexcept;
    /// The round's error; read after round_complete() returned true.
    int round_error() const noexcept;
    /// MPI_Request_free: withdraws the task and every internal transfer from the engine.
    void release();

    bool advance_locked() noexcept override;
    /// No step of this round is pending and the first round's check is over: only a change
    /// of the internal transfers (or a failure) gives advance_locked() something to do.
    bool waits_on_transfers() const noexcept override;

   protected:
    using TransferPtr = std::shared_ptr<progress::Transfer>;
    /// Partition state bit of a round, set by MPI_Pready (the schedules add their own).
    static constexpr std::uint8_t kOwn = 1;

    /// Reads rank and size, takes the collective's key: call once every local check passed.
    explicit Collective(const CollArgs& a);

    /// Automatic mode: the fewest bytes an internal message of add_transfer() carries (one
    /// message per partition where that leaves them larger; 0: one per partition).
    std::int64_t min_message_bytes_ = 0;

    /// The library's handle on @p type (a duplicate if derived; freed with the collective).
    MPI_Datatype own(MPI_Datatype type);
    /// A new internal transfer of this rank to/from @p peer over @p buf: @p s's partitions,
    /// count and sizes, the datatype @p type (one of own()'s). Registered with the engine.
    TransferPtr add_transfer(Kind kind, const void* buf, int peer, int tag, const Side& s,
                             MPI_Datatype type);
    /// The first round's check: empty transfers both ways along the edges of the binomial
    /// tree rooted at rank 0. Members that disagree pair there and fail; and the first round
    /// completes nowhere before rank 0 has heard, up the tree, that every member's data
    /// transfers paired, and told them so down the tree: a mismatch anywhere fails the round
    /// on every member. Call after the data transfers were added.
    void build_checks();
    /// Marks @p p on @p t (engine lock held): issues the queued work at once.
    static void mark_locked(progress::Transfer& t, int p) noexcept;
    /// Marks @p p on @p t from a Pready thread; *queued when it queued MPI work.
    static void mark_from_pready(progress::Transfer& t, int p, bool* queued) noexcept;
    void fail(int code) noexcept;
    bool failed() const noexcept { return error_.load(std::memory_order_acquire) != MPI_SUCCESS; }

    // ---- what a schedule defines ----
    /// MPI_Pready of partition @p p, after the base marked it (kOwn) and counted it.
    virtual void on_ready(int p, bool* queued) noexcept = 0;
    /// Issues the work on_ready queued (MPI_THREAD_MULTIPLE).
    virtual void flush_sends() noexcept = 0;
    /// Partition @p p of the result is final in the receive buffer.
    virtual bool part_arrived(int p) const noexcept = 0;
    /// Steps the task does per round (partitions it forwards or combines); 0: none.
    virtual int steps() const noexcept { return 0; }
    /// Start of a round: the schedule's own per-round state (before the transfers start).
    virtual void reset_round() noexcept {}
    /// Moves every partition whose inputs are there (engine lock held; steps pending).
    virtual void advance_steps_locked() noexcept {}
    /// A Pready handed the task work: wake the progress thread for it.
    virtual bool pready_feeds_task() const noexcept { return false; }

    const CollKind kind_;
    const MPI_Comm comm_;
    const RequestOptions options_;
    int rank_ = 0;
    int size_ = 1;
    int ready_parts_ = 0;
    int arrived_parts_ = 0;
    /// Entries of state_ (at least ready_parts_; a schedule may keep state for more).
    int state_parts_ = 0;
    std::uint64_t key_ = 0;
    progress::CollSig sig_{};        ///< carried by every internal transfer's Setup
    std::vector<TransferPtr> data_;  ///< the transfers that carry partitions
    std::unique_ptr<std::atomic<std::uint8_t>[]> state_;  ///< per partition, reset per round
    std::atomic<int> pending_{0};  ///< steps the task still has to do this round

   private:
    /// The first round's check step (engine lock held).
    void advance_check_locked() noexcept;
    /// The error of a failed internal transfer, or MPI_SUCCESS (engine lock held).
    int transfer_error_locked() const noexcept;
    /// The round failed with @p code: every internal transfer still running is aborted (its
    /// posted receives cancelled, its peer told), so every member's round ends with an error
    /// and no receive writes into the temporary buffers any more (engine lock held).
    void abort_all_locked(int code) noexcept;
    bool all_transfers_done() const noexcept;
    TransferPtr add_check(Kind kind, int peer, int tag);

    std::vector<MPI_Datatype> owned_types_;
    std::vector<TransferPtr> all_;
    TransferPtr check_up_send_;                  ///< first round: "my subtree paired", to parent
    std::vector<TransferPtr> check_up_recvs_;    ///< ... from the children
    TransferPtr check_down_recv_;                ///< "every member paired", from the parent
    std::vector<TransferPtr> check_down_sends_;  ///< ... to the children
    bool started_once_ = false;
    bool up_checked_ = false;          ///< engine lock: check_up_send_ marked (rank 0: down sent)
    bool down_checked_ = false;        ///< engine lock: check_down_sends_ marked
    char check_byte_ = 0;              ///< the (empty) buffer of the check transfers
    std::atomic<int> ready_count_{0};  ///< partitions marked by MPI_Pready this round
    std::atomic<int> error_{MPI_SUCCESS};  ///< sticky: a failed round fails every later one
};

}  // namespace mpipcl::collectives
