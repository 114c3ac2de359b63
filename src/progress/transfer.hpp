// SPDX-License-Identifier: BSD-3-Clause
// Transfer: the engine's half of a partitioned request — the endpoint, the pairing with the
// peer, the backend, and the per-round completion state. requests::Request (the user's half:
// the Inactive/Active state machine, Pready/Parrived checks, statuses) owns one.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/backend.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "progress/protocol.hpp"

namespace mpipcl::progress {

/// What a transfer is made from: MPI_Psend_init / MPI_Precv_init's arguments (checked by the
/// API layer, sizes filled in), or an internal transfer of a collective.
struct TransferArgs {
    Kind kind = Kind::Send;
    const void* buf = nullptr;
    int partitions = 0;
    MPI_Count count = 0;
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    int peer = MPI_PROC_NULL;
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    std::int64_t type_size = 0;
    MPI_Aint extent = 0;
    RequestOptions options{};
};

/// mpipcl::own_type (common/datatype.hpp) with the engine's private communicator for the
/// commit probe: the library's own handle on @p type (a duplicate for a derived type, *owned
/// then true; the type itself for a named one). Throws Error.
MPI_Datatype own_type(MPI_Datatype type, bool* owned);
/// The endpoint of @p args (datatype as given) on the communicator keyed @p comm_key (0: the
/// key of args.comm; none for MPI_PROC_NULL).
Endpoint make_endpoint(const TransferArgs& args, std::uint64_t comm_key);

/// How a transfer stands with respect to its peer.
enum class Pairing : std::uint8_t { Unpaired, Paired, Failed };

class Transfer {
   public:
    /// @p owns_type: ep.datatype is the library's duplicate, freed with the transfer.
    Transfer(const Endpoint& ep, const RequestOptions& opts, std::uint64_t id, bool owns_type);
    ~Transfer();
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    Kind kind() const { return ep_.kind; }
    const Endpoint& endpoint() const { return ep_; }
    const RequestOptions& options() const { return opts_; }
    std::uint64_t id() const { return id_; }
    bool null_peer() const { return ep_.peer == MPI_PROC_NULL; }

    // ---- lock-free: any thread that holds a reference on the request ----
    /// Rounds started so far (1 during the first round).
    std::uint64_t round() const { return round_.load(std::memory_order_acquire); }
    /// True while no round runs: before the first Start, and once the current round completed
    /// (all data sent / arrived, or failed).
    bool round_complete() const { return complete_.load(std::memory_order_acquire); }
    /// The current round's error; read only after round_complete() returned true.
    int round_error() const { return round_error_; }
    Pairing pairing() const { return pairing_.load(std::memory_order_acquire); }
    /// The pair's sticky error (MPI_SUCCESS while it has not failed).
    int sticky_error() const { return error_.load(std::memory_order_acquire); }
    /// Sender: the latest round the receiver has started (its Ready message), 0 = none yet.
    std::uint64_t peer_ready_round() const { return peer_ready_.load(std::memory_order_acquire); }
    /// Sender: marks partition @p p (in range) ready for this round and hands it to the
    /// backend when there is one. Returns MPI_SUCCESS or the DuplicatePready error; *queued
    /// is set when the backend queued MPI work for flush().
    [[nodiscard, gnu::always_inline]] int mark_ready(int p, bool* queued) noexcept
    {
        // Fast path, the common case: paired and the pairing scan is over, so only Preadys
        // count partitions, straight into the backend, whose ready bits also catch a duplicate
        // (one read-modify-write per Pready; part_state_ stays 0). sync: acquire pairs with the
        // release store after the scan.
        if (Backend* b = settled_backend_.load(std::memory_order_acquire)) [[likely]] {
            const Marked m = b->partition_ready(p);
            *queued = m == Marked::Queued;
            return m == Marked::Duplicate ? error_code(ErrId::DuplicatePready) : MPI_SUCCESS;
        }
        return mark_ready_unsettled(p, queued);
    }
    /// Sender: mark_ready() for partitions [@p lo, @p hi] (in range). On a duplicate the
    /// others are marked all the same and DuplicatePready is returned.
    [[nodiscard]] int mark_range_ready(int lo, int hi, bool* queued) noexcept
    {
        if (Backend* b = settled_backend_.load(std::memory_order_acquire)) [[likely]] {
            return b->range_ready(lo, hi, queued) ? error_code(ErrId::DuplicatePready)
                                                  : MPI_SUCCESS;
        }
        int rc = MPI_SUCCESS;
        *queued = false;
        for (int p = lo; p <= hi; ++p) {
            bool q = false;
            if (const int r = mark_ready_unsettled(p, &q); r != MPI_SUCCESS) {
                rc = r;
            }
            *queued = *queued || q;
        }
        return rc;
    }
    /// Sender: issues the backend's queued MPI work from this thread (the caller checked that
    /// this thread may call MPI).
    void flush() noexcept;
    /// Sender: the backend's queued work is best left to the progress thread
    /// (Backend::flush_in_background). False while not paired.
    bool flush_in_background() const noexcept
    {
        const Backend* b = ready_backend_.load(std::memory_order_acquire);
        return b != nullptr && b->flush_in_background();
    }
    /// Receiver: all but the last of this round's data arrived (Backend::finishing).
    bool finishing() const noexcept
    {
        const Backend* b = ready_backend_.load(std::memory_order_acquire);
        return b != nullptr && b->finishing();
    }
    /// Two or more pieces of this round are still to come (Backend::expects_more).
    bool expects_more() const noexcept
    {
        const Backend* b = ready_backend_.load(std::memory_order_acquire);
        return b != nullptr && b->expects_more();
    }
    /// Sender: the receiver announces each round's start (Ready); true while not yet paired.
    bool needs_peer_ready() const noexcept;
    /// Receiver: every byte of receive partition @p p is in the buffer this round.
    bool arrived(int p) const noexcept
    {
        const Backend* b = ready_backend_.load(std::memory_order_acquire);
        return b != nullptr && b->arrived(p);
    }

    // ---- engine lock held ----
    /// A new round: resets per-round state and starts the backend's round.
    void begin_round_locked();
    void pair_locked(const Agreement& a, std::unique_ptr<Backend> backend);
    /// The pair failed (sticky): the running round completes with @p code, and so does every
    /// later one. With @p await_peer (a receive whose sender writes into its buffer,
    /// Backend::written_by_peer) the running round ends only at peer_stopped_locked(), or once
    /// every byte of it arrived.
    void fail_locked(int code, bool await_peer = false);
    /// Receiver: the sender confirmed that it writes nothing more into the buffer (its
    /// AbortAck, or its own Abort): a round that fail_locked left waiting for it completes.
    void peer_stopped_locked();
    /// Receiver: the failed round waits for the sender's confirmation (fail_locked).
    bool awaits_peer() const { return awaits_peer_ && !round_complete(); }
    /// The peer withdrew before it ever started: back to unpaired (its Setup was cancelled).
    void unpair_locked();
    void peer_ready_locked(std::uint64_t round);
    /// Advances a running round. Returns true once it is complete. *failed gets an error the
    /// backend reported (then false is returned: the caller fails the pair with fail_locked
    /// and tells the peer), else MPI_SUCCESS.
    bool progress_locked(int* failed);
    bool ever_started() const { return ever_started_; }
    /// A running transfer for which every progress pass polls the control channel (a full MPI
    /// progress poll): an RMA sender waiting for the receiver's Ready, or a transfer whose
    /// data moves only while this process is inside MPI.
    bool wants_every_pass() const;
    const Agreement& agreement() const { return agreement_; }
    /// Lock-free: the backend the pair agreed on once paired, else the one this side asked
    /// for (options().backend, settled at init).
    BackendKind backend_kind() const noexcept
    {
        const int k = agreed_.load(std::memory_order_acquire);
        return k < 0 ? opts_.backend : static_cast<BackendKind>(k);
    }
    Backend* backend() const { return backend_.get(); }
    /// Diagnostic dump (MPIPCL_DUMP_SIGNAL): one line of this transfer's state and its
    /// backend's into @p out (always terminated). Never throws.
    void describe_locked(char* out, std::size_t n) const noexcept;
    /// MPI_Finalize: frees the backend's MPI objects; later calls see no backend.
    void release_backend_locked();

    // ---- engine bookkeeping (engine lock held) ----
    /// The peer transfer's id once matched (0 = never matched).
    std::uint64_t peer_id() const { return peer_id_; }
    /// Matched with the peer transfer @p id (a receive: with the Setup of send @p id).
    void set_peer_id(std::uint64_t id) { peer_id_ = id; }
    /// On the engine's list of running transfers (ActiveList).
    bool in_active_list() const { return in_active_list_; }
    /// Sender that failed before it ever started: the Abort it owes the receiver leaves at its
    /// first Start (a never-started send freed instead withdraws with a Cancel: it never
    /// existed for the receiver).
    void owe_abort(int code) { abort_owed_ = code; }
    /// The Abort owed (MPI_SUCCESS = none).
    int owed_abort() const { return abort_owed_; }
    /// Freed by its owner while failed and not yet matched with its peer: the handshake keeps
    /// it to answer the peer's Setup or Reply with the error (no backend, never writes).
    bool orphan() const { return orphan_; }
    void set_orphan() { orphan_ = true; }
    /// The collective this transfer belongs to (kind -1: none), compared at pairing. Set
    /// before the engine is told of the transfer; kept out of the fields Pready and Parrived
    /// read.
    const CollSig& coll() const { return coll_; }
    void set_coll(const CollSig& sig) { coll_ = sig; }

   private:
    friend class ActiveList;  // keeps in_active_list_
    /// mark_ready() before pairing, or while pair_locked scans the partitions marked so far.
    int mark_ready_unsettled(int p, bool* queued) noexcept;
    bool count_partition(Backend* b, int p) noexcept;
    void mark_complete_locked();

    const Endpoint ep_;
    const RequestOptions opts_;
    const std::uint64_t id_;
    const bool owns_type_;

    std::atomic<bool> complete_{true};
    std::atomic<Pairing> pairing_{Pairing::Unpaired};
    /// The backend as seen by lock-free readers (Pready, Parrived); null until paired.
    std::atomic<Backend*> ready_backend_{nullptr};
    /// ready_backend_ once pair_locked's scan of partitions marked before pairing is over:
    /// then a Pready counts its partition with one CAS (no scan can race with it).
    std::atomic<Backend*> settled_backend_{nullptr};
    std::atomic<int> agreed_{-1};          ///< agreement_.backend once paired (lock-free readers)
    std::atomic<int> error_{MPI_SUCCESS};  ///< sticky pair error (size mismatch, peer failed)
    std::atomic<std::uint64_t> round_{0};
    std::atomic<std::uint64_t> peer_ready_{0};
    int round_error_ = MPI_SUCCESS;
    bool ever_started_ = false;
    Agreement agreement_;
    std::unique_ptr<Backend> backend_;
    /// Backends replaced by unpair_locked stay alive until the transfer dies, because a
    /// reader that holds a reference on the request may still be inside them.
    std::vector<std::unique_ptr<Backend>> retired_;
    struct FreeDeleter {
        void operator()(void* p) const noexcept { std::free(p); }
    };
    /// Sender: 0 = not ready, 1 = ready but not yet given to the backend, 2 = given. From
    /// calloc: zeroed pages are not touched until used (init stays local and cheap, also for
    /// INT_MAX partitions).
    std::unique_ptr<std::atomic<std::uint8_t>[], FreeDeleter> part_state_;
    std::uint64_t peer_id_ = 0;
    bool in_active_list_ = false;
    int abort_owed_ = MPI_SUCCESS;
    bool orphan_ = false;
    bool awaits_peer_ = false;  ///< fail_locked(await_peer): the round ends at the sender's word
    CollSig coll_{};
};

/// The running transfers a full pass advances. Engine lock held, except count().
class ActiveList {
   public:
    /// Puts @p t on the list unless it is on it.
    void add(const std::shared_ptr<Transfer>& t);
    /// Takes @p t off the list (nothing when it is not on it). The caller holds a reference on
    /// @p t (the list's may be the last but one).
    void remove(Transfer& t);
    /// Advances every listed transfer with @p advance (Transfer&) -> true once its round is
    /// complete, and takes those off the list.
    template <class Advance>
    void advance_all(Advance&& advance)
    {
        for (std::size_t i = 0; i < list_.size();) {
            if (advance(*list_[i])) {
                erase_at(i);
            } else {
                ++i;
            }
        }
    }
    /// Lock-free: transfers on the list (a relaxed snapshot).
    int count() const { return count_.load(std::memory_order_relaxed); }
    std::size_t size() const { return list_.size(); }
    void clear();

   private:
    /// Takes entry @p i off (the last entry takes its place).
    void erase_at(std::size_t i);

    std::vector<std::shared_ptr<Transfer>> list_;
    std::atomic<int> count_{0};  ///< list_.size(), for lock-free readers
};

}  // namespace mpipcl::progress
