// SPDX-License-Identifier: BSD-3-Clause
// The pairing protocol over the control channel: Setup, matching in init order (Matcher),
// Reply and the backend of each side, Ready, Cancel, Abort and AbortAck.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "progress/control_channel.hpp"
#include "progress/matcher.hpp"
#include "progress/protocol.hpp"
#include "progress/tags.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::progress {

/// The live transfers with a real peer and their pairing with the peer's transfer. Every
/// method runs with the engine lock held, except pending().
class Handshake {
   public:
    using TransferPtr = std::shared_ptr<Transfer>;
    using Transfers = std::unordered_map<std::uint64_t, TransferPtr>;

    /// @p ctrl carries the messages, @p active gets the transfers that run once paired,
    /// @p tags gives the receives their data tags.
    Handshake(ControlChannel& ctrl, ActiveList& active, TagAllocator& tags)
        : ctrl_(ctrl), active_(active), tags_(tags)
    {
    }
    /// MPI_Init*: the private communicator the backends use.
    void init(MPI_Comm comm) { comm_ = comm; }
    /// MPI_Finalize: frees every backend (also of transfers never freed), forgets everything.
    void finalize();

    /// New transfer: a send sends its Setup, a receive is matched or queued.
    void add(const TransferPtr& t);
    /// MPI_Start, after Transfer::begin_round_locked: a send's owed Abort leaves, a matched
    /// receive pairs on its first Start, a paired one announces the round (Ready).
    void start(const TransferPtr& t);
    /// MPI_Request_free: withdraws @p t (a never-started send with a Cancel, a receive from
    /// matching) and releases its data tags.
    void remove(const TransferPtr& t);
    /// A control message from private rank @p src.
    void handle(const CtrlMsg& msg, int src);
    /// The pair of @p t failed after pairing: fails @p t and tells the peer (MsgType::Abort).
    void fail_pair(Transfer& t, int code);

    /// Fails @p t now with @p code (a collective's round failed): a paired transfer tells its
    /// peer at once (fail_pair), an unpaired one when the peer's Setup or Reply arrives.
    void abort(Transfer& t, int code);

    /// Lock-free: transfers waiting for their peer (a relaxed snapshot).
    int pending() const { return pending_pairs_.load(std::memory_order_relaxed); }
    /// Lock-free: failed transfers kept to answer a peer that pairs late (see remove).
    bool keeps_failed() const { return kept_failed_.load(std::memory_order_relaxed); }
    const Transfers& transfers() const { return all_; }
    const Matcher& matcher() const { return matcher_; }

   private:
    void handle_setup(const Setup& setup);
    /// A receive enters matching (new, or unpaired by a Cancel: @p first_in_line).
    void match_or_queue(const TransferPtr& recv, bool first_in_line);
    /// Receive @p m.recv was matched (init order): pairs at once if it was ever started,
    /// else its first Start does.
    void matched(const Matcher::Match& m);
    /// Builds the receive's backend, reserves its data tags and sends the Reply.
    void pair_recv(const TransferPtr& recv, const Setup& setup);
    /// Builds the backend of @p recv, matched with send @p send_id, for @p a: MPI_SUCCESS and
    /// the Reply in @p reply, or the error that refuses the pairing (sizes differ, no backend).
    int build_recv(Transfer& recv, const Agreement& a, std::uint64_t send_id, CtrlMsg* reply);
    /// Builds @p t's backend for @p a and pairs @p t: MPI_SUCCESS, or the error (logged) that
    /// prevented it.
    int build_backend(Transfer& t, Agreement a);
    void handle_reply(const CtrlMsg& msg);
    /// Tells a paired receive's sender that round recv.round() has started (MsgType::Ready).
    void send_ready(Transfer& recv);
    void handle_cancel(const CtrlMsg& msg, int src);
    /// Tells @p t's peer that the pair failed with @p code; @p ack: asks the sender for its
    /// AbortAck (a receive that awaits it, Transfer::awaits_peer).
    void send_abort(Transfer& t, int code, bool ack = false);
    /// An Abort from @p src: fails the pair on this side (a send stops writing first), ends a
    /// failed receive's wait for its sender, and answers with an AbortAck when asked.
    void handle_abort(const CtrlMsg& msg, int src);
    /// An AbortAck from @p src: the receive that awaits it completes its failed round.
    void handle_abort_ack(const CtrlMsg& msg, int src);
    /// The transfer that an Abort from @p src is for, or null.
    TransferPtr abort_target(const CtrlMsg& msg, int src) const;
    /// Transfer @p id, or null once freed.
    TransferPtr find(std::uint64_t id) const;
    /// MPI_Request_free of a receive: withdraws it from matching.
    void remove_recv(const TransferPtr& t);
    void release_tags(Transfer& t);
    /// Failed by abort() before it was matched with its peer (still counted as pending).
    static bool failed_unmatched(const Transfer& t)
    {
        return t.pairing() == Pairing::Failed && t.peer_id() == 0;
    }

    ControlChannel& ctrl_;
    ActiveList& active_;
    TagAllocator& tags_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    Matcher matcher_;
    Transfers all_;                                         // every live transfer, by id
    std::unordered_map<std::uint64_t, TransferPtr> sends_;  // by send id
    std::atomic<int> pending_pairs_{0};                     // transfers waiting for their peer
    std::atomic<bool> kept_failed_{false};                  // remove() kept a failed transfer
};

}  // namespace mpipcl::progress
