// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend: the sender MPI_Puts each ready put unit straight into the receiver's buffer
// through the process's dynamic window, flushes, then Puts the round number into the
// notification flags whose units are all in, and flushes again. The receiver reads its own
// flag memory: MPI_Parrived needs no MPI call once a flag holds the current round.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/backend.hpp"
#include "common/ready_counter.hpp"
#include "common/ready_queue.hpp"
#include "rma/blocks.hpp"
#include "rma/notify.hpp"
#include "rma/window.hpp"

namespace mpipcl::rma {

/// What the receiver tells the sender in the Reply (CtrlMsg::extra).
struct TargetInfo {
    std::uint64_t base = 0;   ///< address of element 0's first touched byte (its true lb)
    std::uint64_t flags = 0;  ///< address of flag 0
    std::uint64_t desc = 0;   ///< address of the datatype description, 0 = contiguous
    FlagMode mode = FlagMode::Gcd;
    std::uint32_t desc_blocks = 0;

    void encode(std::uint64_t extra[4]) const;
    static TargetInfo decode(const std::uint64_t extra[4]);
};

class RmaBackend final : public Backend {
   public:
    /// The backend for agreement @p a. Null when this receive buffer or datatype cannot use
    /// RMA, with *why_not saying why (the factory then falls back). Throws Error.
    static std::unique_ptr<RmaBackend> build(const Endpoint& ep, const RequestOptions& opts,
                                             const Agreement& a, const char** why_not);
    ~RmaBackend() override;

    void start(std::uint64_t round) override;
    void flush() noexcept override;
    bool arrived(int p) const noexcept override;
    bool progress() override;
    /// Sender: no Put of this backend reaches the receiver's buffer afterwards (the ready
    /// queue is sealed, a drain running in another thread is waited for, and Puts a failed
    /// drain left unflushed are flushed). Receiver: nothing (the sender writes).
    void abort_round() noexcept override;
    bool written_by_peer() const noexcept override { return !send_; }
    int tags_used() const noexcept override { return 0; }
    void describe(char* out, std::size_t n) const noexcept override;
    bool needs_peer_ready() const noexcept override { return true; }
    /// Receiver: MPICH's and Open MPI 5's Puts into a dynamic window are active messages the
    /// target handles inside MPI calls only.
    bool wants_mpi_progress() const noexcept override { return !send_; }
    /// Sender: a drain of a few MiB runs for milliseconds inside MPI_Put and MPI_Win_flush.
    bool flush_in_background() const noexcept override { return send_; }
    void peer_ready(std::uint64_t round) noexcept override;
    void reply_extra(std::uint64_t extra[4]) const noexcept override { target_info_.encode(extra); }

   private:
    /// Owns one attach() reference.
    struct Attachment {
        std::uintptr_t key = 0;
        bool held = false;
        ~Attachment();
    };
    /// Owns slots from the pool.
    struct SlotLease {
        Slots slots;
        ~SlotLease();
    };

    explicit RmaBackend(const Endpoint& ep);
    void init_sender(const Agreement& a);
    /// Null when done, else why this buffer or datatype cannot use RMA. Throws Error.
    const char* init_receiver(const RequestOptions& opts, const Agreement& a);
    /// Attaches the bytes the receive elements touch; false when the window refuses.
    bool attach_buffer(const Flat& flat);
    /// Fills target_info_ (and the datatype description after the flags) for the Reply.
    void describe_target(const Flat& flat);
    bool peer_started() const;
    /// Puts and flushes the units of one list taken from ready_, then their completed flags,
    /// in groups of about 1 MiB; returns the number of flags now set (the caller publishes
    /// them in flags_done_).
    int drain(int head) noexcept;
    /// Units batch_[g0, g1) of a drain: Puts, flush, then the flags they completed, flush.
    /// Returns the number of flags set, or -1 after a failure (flush_error_ set).
    int drain_group(std::size_t g0, std::size_t g1, bool any_data) noexcept;
    /// Puts stream bytes [b0, b1) (on unit boundaries) into the receiver's buffer.
    int put_bytes(std::int64_t b0, std::int64_t b1) noexcept;
    /// Counts @p blocks just Put; flushes once MPIPCL_RMA_PUT_BLOCKS are in flight.
    int count_blocks(std::int64_t blocks) noexcept;
    int fetch_description() noexcept;
    std::uint64_t flag(int f) const noexcept;

    const Endpoint ep_;
    const bool send_;
    MPI_Win win_;
    const int peer_;  ///< the peer's rank in the window's (private) communicator
    FlagMode mode_ = FlagMode::Gcd;
    NotifyMap map_;

    // ---- receiver ----
    Attachment attachment_;
    SlotLease lease_;
    std::uint64_t* flags_ = nullptr;
    std::atomic<std::uint64_t> round_{0};  ///< current round (the value its flags must hold)
    int seen_ = 0;                         ///< flags 0..seen_-1 hold the round (engine lock)
    /// Flags receive partition p waits for (cached up to kCachedPartitions, else looked up).
    static constexpr int kCachedPartitions = 1 << 16;
    std::int64_t recv_part_bytes_ = 0;
    std::vector<int> part_first_;
    std::vector<int> part_last_;
    TargetInfo target_info_;

    // ---- sender ----
    std::uint64_t send_round_ = 0;  ///< written at start (engine), read by flushers after it
    /// The latest round the receiver announced (its Ready); seq_cst against the ready queue
    /// (see ReadyQueue::push): a unit queued while the gate was closed is drained by whoever
    /// opens it.
    std::atomic<std::uint64_t> peer_round_{0};
    Flat origin_;
    MPI_Datatype origin_type_ = MPI_BYTE;
    bool target_contig_ = true;
    std::int64_t target_size_ = 0;    ///< receiver's element size
    std::int64_t target_extent_ = 0;  ///< receiver's element extent (derived datatypes)
    MPI_Datatype target_type_ = MPI_BYTE;
    std::int64_t piece_ = 0;  ///< largest Put (bytes) whose counts fit in an int
    // MPIPCL_RMA_PUT_BLOCKS (Config::rma_put_blocks): contiguous blocks per byte step_ of a
    // Put (0: both sides contiguous, each Put then counts as one block), and (flusher-only) the
    // blocks Put since the last flush.
    std::int64_t step_ = 1;
    std::int64_t step_blocks_ = 0;
    std::int64_t blocks_in_flight_ = 0;
    std::atomic<bool> described_{false};  ///< target_type_ is built
    std::atomic<int> flags_done_{0};
    std::atomic<int> flush_error_{MPI_SUCCESS};
    // Flusher-only (one drainer at a time, see ReadyQueue).
    std::vector<int> flag_left_;           ///< per flag: units not yet flushed this round
    std::vector<std::uint64_t> flag_src_;  ///< origin of flag Puts: the round, per flag
    std::vector<int> batch_;
    std::vector<int> done_;
};

}  // namespace mpipcl::rma
