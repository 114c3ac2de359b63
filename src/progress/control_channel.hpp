// SPDX-License-Identifier: BSD-3-Clause
// The control channel: tag kCtrlTag of the private communicator. Builds and decodes the
// control messages (one factory per kind), keeps one receive posted, tracks the sends in
// flight and the messages exchanged with each process, and drains them at MPI_Finalize.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/backend.hpp"
#include "progress/doorbell.hpp"
#include "progress/protocol.hpp"

namespace mpipcl::progress {

// ---- message factories and decoding (no MPI call but PMPI_Error_class) ----

/// Sender -> receiver at Psend_init: the send side @p ep of send @p send_id and its offer.
CtrlMsg setup_msg(const Endpoint& ep, std::uint64_t send_id, const Offer& offer);
/// Sender -> receiver: send @p send_id (of @p ep) was freed before it ever started.
CtrlMsg cancel_msg(const Endpoint& ep, std::uint64_t send_id);
/// Receiver -> sender at pairing: the receive side of @p a (sizes, messages, backend, data
/// tags) and @p error (an MPI code, MPI_SUCCESS = accepted). The backend's reply data is
/// written into extra by the caller.
CtrlMsg reply_msg(std::uint64_t send_id, std::uint64_t recv_id, const Agreement& a, int error);
/// Receiver -> sender: round @p round of receive @p recv_id has started.
CtrlMsg ready_msg(std::uint64_t send_id, std::uint64_t recv_id, std::uint64_t round);
/// Either way after pairing: the pair (@p send_id, @p recv_id) failed with @p error;
/// @p to_receiver says which side it is for. An Abort to the sender with @p ack asks for its
/// AbortAck.
CtrlMsg abort_msg(bool to_receiver, std::uint64_t send_id, std::uint64_t recv_id, int error,
                  bool ack = false);
/// Sender -> receiver: answers the Abort of pair (@p send_id, @p recv_id) that asked for it.
CtrlMsg abort_ack_msg(std::uint64_t send_id, std::uint64_t recv_id);
/// The error code a Reply or Abort carries.
int msg_error(const CtrlMsg& msg);
/// The agreement of a pair, from this side's endpoint @p local and the peer's Setup (on the
/// receiver) or Reply (on the sender) @p peer: both sides' sizes, and the peer's message
/// count, backend, data tags and backend data.
Agreement agreement_of(const Endpoint& local, const CtrlMsg& peer);
/// A receive's collective signature (Transfer::coll) against its sender's Setup: MPI_SUCCESS when
/// they agree (also for point-to-point, where both are empty), else the error class of the first
/// difference (kind or partitions, root, op, size).
int collective_mismatch(const CollSig& local, const CtrlMsg& setup);

/// Control traffic of this process. Every method runs with the engine lock held.
class ControlChannel {
   public:
    /// Most messages handled per receive() call (a pass stays bounded).
    static constexpr int kMaxPerPass = 64;

    /// MPI_Init*: the private communicator @p comm and its size.
    void init(MPI_Comm comm, int size);
    /// Event and offload modes: every send rings its destination's doorbell (null: none).
    void use_doorbells(Doorbells* bells) noexcept { bells_ = bells; }
    /// Posts the control receive unless it is posted. Throws Error.
    void post_receive();
    /// Sends @p msg to private rank @p dest (non-blocking; the copy lives until it completed).
    /// Throws Error.
    void send(int dest, const CtrlMsg& msg);
    /// Receives up to kMaxPerPass messages and calls @p handle(msg, src) for each, reposting
    /// the receive before the call. Throws Error (from MPI or from @p handle).
    template <class Handler>
    void receive(Handler&& handle)
    {
        if (!posted_) {
            return;
        }
        for (int i = 0; i < kMaxPerPass; ++i) {
            int src = 0;
            if (!test_receive(&src)) {
                break;
            }
            const CtrlMsg msg = buf_;
            post_receive();
            handle(msg, src);
        }
    }
    /// Forgets the sends that completed.
    void complete_sends();
    std::size_t sends_in_flight() const { return outgoing_.size(); }
    bool posted() const { return posted_; }
    /// MPI_Finalize (collective): receives and drops every control message other processes
    /// sent here, waits for this process's sends, cancels the posted receive.
    void drain();
    /// Logs, per process, the messages exchanged with it (MPIPCL_DUMP_SIGNAL).
    void dump() const noexcept;

   private:
    struct Outgoing {
        std::unique_ptr<CtrlMsg> msg;
        MPI_Request req;
    };
    /// True when the posted receive completed (*src: its sender); it is then no longer
    /// posted. Throws Error.
    bool test_receive(int* src);

    MPI_Comm comm_ = MPI_COMM_NULL;
    Doorbells* bells_ = nullptr;
    bool posted_ = false;
    CtrlMsg buf_{};
    MPI_Request req_ = MPI_REQUEST_NULL;
    std::vector<Outgoing> outgoing_;
    std::vector<std::uint64_t> sent_to_;    ///< control messages sent, per private rank
    std::vector<std::uint64_t> recv_from_;  ///< control messages received, per private rank
};

}  // namespace mpipcl::progress
