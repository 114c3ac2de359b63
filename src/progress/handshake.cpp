// SPDX-License-Identifier: BSD-3-Clause
// The pairing protocol: Setup, matching, Reply, Ready, Cancel and Abort.
#include "progress/handshake.hpp"

#include <new>
#include <optional>

#include "common/error.hpp"
#include "common/log.hpp"
#include "progress/backends.hpp"

namespace mpipcl::progress {

namespace {
MatchKey match_key(const Transfer& recv)
{
    const Endpoint& ep = recv.endpoint();
    return MatchKey{ep.comm_key, ep.peer_world, ep.tag};
}
}  // namespace

void Handshake::finalize()
{
    matcher_.clear();
    sends_.clear();
    for (auto& [id, t] : all_) {
        t->release_backend_locked();
    }
    all_.clear();
    kept_failed_.store(false, std::memory_order_relaxed);
}

void Handshake::add(const TransferPtr& t)
{
    ctrl_.post_receive();
    all_[t->id()] = t;
    const Endpoint& ep = t->endpoint();
    pending_pairs_.fetch_add(1, std::memory_order_relaxed);
    if (t->kind() == Kind::Send) {
        sends_[t->id()] = t;
        CtrlMsg setup = setup_msg(ep, t->id(), backends::offer(ep, t->options()));
        setup.coll = t->coll();
        ctrl_.send(ep.peer_world, setup);
    } else {
        match_or_queue(t, false);
    }
}

void Handshake::start(const TransferPtr& t)
{
    if (const int code = t->owed_abort(); code != MPI_SUCCESS) {
        send_abort(*t, code);
        t->owe_abort(MPI_SUCCESS);
    }
    if (std::optional<Setup> setup = matcher_.take_held(t->id())) {
        pair_recv(t, *setup);
    } else if (t->kind() == Kind::Recv && t->backend() != nullptr && !t->round_complete()) {
        send_ready(*t);
    }
}

void Handshake::remove(const TransferPtr& t)
{
    if (failed_unmatched(*t) && t->ever_started()) {
        // Its peer may still send a Setup or Reply and then wait for an answer: kept (until
        // MPI_Finalize) to give it the error. No longer counted as awaiting a pair.
        pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
        t->set_orphan();
        kept_failed_.store(true, std::memory_order_relaxed);
        return;
    }
    all_.erase(t->id());
    if (t->kind() == Kind::Send) {
        sends_.erase(t->id());
        const Pairing pairing = t->pairing();
        if (pairing == Pairing::Unpaired || failed_unmatched(*t)) {
            pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
        }
        if (!t->ever_started() && (pairing != Pairing::Failed || t->owed_abort() != MPI_SUCCESS)) {
            // Withdraw the Setup so it cannot pair with (and starve) a later receive.
            ctrl_.send(t->endpoint().peer_world, cancel_msg(t->endpoint(), t->id()));
        }
    } else {
        remove_recv(t);
    }
    release_tags(*t);
}

void Handshake::remove_recv(const TransferPtr& t)
{
    const Matcher::Removed r = matcher_.remove_receive(t->id(), match_key(*t), t->peer_id());
    if (r.next) {
        matched(*r.next);
    }
    if (!r.was_held && (t->pairing() == Pairing::Unpaired || failed_unmatched(*t))) {
        pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
    }
}

void Handshake::handle(const CtrlMsg& msg, int src)
{
    switch (msg.type) {
        case MsgType::Setup:
            handle_setup(Setup{msg, src});
            break;
        case MsgType::Reply:
            handle_reply(msg);
            break;
        case MsgType::Cancel:
            handle_cancel(msg, src);
            break;
        case MsgType::Ready: {
            auto it = sends_.find(msg.send_id);
            if (it != sends_.end() && it->second->peer_id() == msg.recv_id) {
                it->second->peer_ready_locked(msg.extra[0]);
            }
            break;
        }
        case MsgType::Abort:
            handle_abort(msg, src);
            break;
        case MsgType::AbortAck:
            handle_abort_ack(msg, src);
            break;
        default:
            MPIPCL_LOG(Error, "unknown control message %d from %d", static_cast<int>(msg.type),
                       src);
    }
}

void Handshake::handle_setup(const Setup& setup)
{
    if (std::optional<Matcher::Match> m = matcher_.add_setup(setup)) {
        matched(*m);
    }
}

void Handshake::match_or_queue(const TransferPtr& recv, bool first_in_line)
{
    if (std::optional<Matcher::Match> m =
            matcher_.add_receive(recv->id(), match_key(*recv), first_in_line)) {
        matched(*m);
    }
}

void Handshake::matched(const Matcher::Match& m)
{
    const TransferPtr recv = find(m.recv);
    if (!recv->orphan()) {
        pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
    }
    recv->set_peer_id(m.setup.msg.send_id);
    // Matched in init order, but the pairing (backend, data tags, Reply) waits for the first
    // Start: a receive freed before it ever starts then gives its Setup back to the next
    // receive in line, and the sender has sent nothing that could go astray.
    if (recv->ever_started()) {
        matcher_.take_held(m.recv);
        pair_recv(recv, m.setup);
    }
}

Handshake::TransferPtr Handshake::find(std::uint64_t id) const
{
    auto it = all_.find(id);
    return it == all_.end() ? nullptr : it->second;
}

void Handshake::pair_recv(const TransferPtr& recv, const Setup& setup)
{
    Agreement a = agreement_of(recv->endpoint(), setup.msg);
    const RequestOptions& opts = recv->options();
    a.messages = opts.messages > 0 ? opts.messages : setup.msg.messages;
    // Sides that asked for different backends use "persistent" (backends::agree).
    a.backend = backends::agree(static_cast<BackendKind>(setup.msg.backend), opts.backend);
    CtrlMsg reply{};
    // A receive that failed before pairing (its collective failed) refuses with its error;
    // members of a collective that disagree refuse with the difference.
    int err = recv->pairing() == Pairing::Failed ? recv->sticky_error()
                                                 : collective_mismatch(recv->coll(), setup.msg);
    if (err == MPI_SUCCESS) {
        err = build_recv(*recv, a, setup.msg.send_id, &reply);
    }
    if (err != MPI_SUCCESS) {
        // Not failed yet: the send may have been freed before it ever started, its Cancel on
        // the way — then this receive must pair with the next Setup as if that send never
        // existed. The sender answers the error with an Abort (it still exists: the pair
        // fails) or has already sent its Cancel (the receive unpairs); the control channel
        // is FIFO, so one of the two arrives.
        reply = reply_msg(setup.msg.send_id, recv->id(), a, err);
    }
    MPIPCL_LOG(Debug,
               "recv %llu paired with send %llu of rank %d: tags %d.., %d messages, error %d",
               static_cast<unsigned long long>(recv->id()),
               static_cast<unsigned long long>(setup.msg.send_id), setup.src, reply.tag_base,
               a.messages, err);
    ctrl_.send(setup.src, reply);
    if (!recv->round_complete()) {
        if (err == MPI_SUCCESS) {
            send_ready(*recv);
        }
        active_.add(recv);
    }
}

int Handshake::build_recv(Transfer& recv, const Agreement& a, std::uint64_t send_id, CtrlMsg* reply)
{
    const std::int64_t send_total = a.send_part_bytes * a.send_partitions;
    const std::int64_t recv_total = a.recv_part_bytes * a.recv_partitions;
    if (send_total != recv_total) {
        MPIPCL_LOG(Info, "size mismatch: sender %lld bytes, receiver %lld bytes",
                   static_cast<long long>(send_total), static_cast<long long>(recv_total));
        return error_code(send_total > recv_total ? ErrId::Truncate : ErrId::SizeMismatch);
    }
    if (const int err = build_backend(recv, a); err != MPI_SUCCESS) {
        return err;
    }
    *reply = reply_msg(send_id, recv.id(), recv.agreement(), MPI_SUCCESS);
    recv.backend()->reply_extra(reply->extra);
    return MPI_SUCCESS;
}

int Handshake::build_backend(Transfer& t, Agreement a)
{
    const char* side = t.kind() == Kind::Send ? "send" : "receive";
    try {
        // The factory may settle a differently (rma -> persistent fallback, message count,
        // data tags on the receiver).
        t.pair_locked(a, backends::create(t.endpoint(), t.options(), &a, &tags_, comm_));
    } catch (const Error& e) {
        MPIPCL_LOG(Warn, "cannot set up the %s: %s", side, e.what());
        return e.code();
    } catch (const std::bad_alloc&) {
        MPIPCL_LOG(Warn, "cannot set up the %s: out of memory", side);
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

void Handshake::send_ready(Transfer& recv)
{
    if (recv.backend() == nullptr || !recv.backend()->needs_peer_ready()) {
        return;
    }
    ctrl_.send(recv.endpoint().peer_world, ready_msg(recv.peer_id(), recv.id(), recv.round()));
}

void Handshake::handle_reply(const CtrlMsg& msg)
{
    auto it = sends_.find(msg.send_id);
    if (it == sends_.end()) {
        return;  // freed meanwhile
    }
    TransferPtr req = it->second;
    if (failed_unmatched(*req)) {
        // Failed before the Reply came (its collective failed): the receiver, accepted or
        // not, waits for this side's word.
        if (!req->orphan()) {
            pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
        }
        req->set_peer_id(msg.recv_id);
        send_abort(*req, req->sticky_error());
        return;
    }
    if (req->pairing() != Pairing::Unpaired) {
        return;
    }
    pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
    req->set_peer_id(msg.recv_id);
    MPIPCL_LOG(Debug, "send %llu paired with recv %llu: tags %d.., error %d",
               static_cast<unsigned long long>(req->id()),
               static_cast<unsigned long long>(msg.recv_id), msg.tag_base, msg.error);
    if (msg.error != 0) {
        // Confirm to the receiver, which waits for this (see pair_recv).
        fail_pair(*req, msg_error(msg));
        return;
    }
    if (const int err = build_backend(*req, agreement_of(req->endpoint(), msg));
        err != MPI_SUCCESS) {
        // The receiver accepted and waits for data: tell it, or its Wait never returns.
        fail_pair(*req, err);
    }
    if (!req->round_complete()) {
        active_.add(req);
    }
}

void Handshake::handle_cancel(const CtrlMsg& msg, int src)
{
    const Matcher::Cancelled c = matcher_.cancel(MatchKey{msg.comm_key, src, msg.tag}, msg.send_id);
    if (c.what != Matcher::Cancelled::What::Receive) {
        return;  // the Setup was still unexpected (dropped), or is gone already
    }
    // The receive was paired with a send that was freed before it ever started: unpair it
    // and give it to the next Setup, as if the send had never existed.
    const TransferPtr recv = find(c.recv);
    MPIPCL_LOG(Debug, "send %llu of rank %d cancelled: unpairing recv %llu",
               static_cast<unsigned long long>(msg.send_id), src,
               static_cast<unsigned long long>(c.recv));
    if (!c.was_held) {
        release_tags(*recv);
        recv->unpair_locked();
    }
    pending_pairs_.fetch_add(1, std::memory_order_relaxed);
    if (c.next) {
        matched(*c.next);
    }
}

void Handshake::fail_pair(Transfer& t, int code)
{
    const bool paired = t.pairing() == Pairing::Paired;
    const bool tell = paired || t.kind() == Kind::Send;
    // A paired receive whose sender writes into its buffer (RMA) keeps its round running
    // until the sender confirms that it stopped: its Puts may still be in flight, or come
    // before it reads this Abort. A sender stops (abort_round) before its Abort leaves.
    const bool await = paired && t.kind() == Kind::Recv && t.backend() != nullptr &&
                       t.backend()->written_by_peer() && !t.round_complete();
    t.fail_locked(code, await);
    if (!tell || t.peer_id() == 0) {
        return;
    }
    if (t.kind() == Kind::Send && !t.ever_started()) {
        t.owe_abort(code);  // see Transfer::owe_abort
        return;
    }
    send_abort(t, code, t.awaits_peer());
}

void Handshake::abort(Transfer& t, int code)
{
    if (t.pairing() == Pairing::Failed) {
        return;
    }
    if (t.pairing() == Pairing::Paired) {
        fail_pair(t, code);
        return;
    }
    // Unpaired: failed here; the peer hears of it when its Setup or Reply comes (pair_recv
    // refuses it, handle_reply answers with an Abort). A receive that refused its Setup
    // already gets the sender's Abort.
    t.fail_locked(code);
}

void Handshake::send_abort(Transfer& t, int code, bool ack)
{
    const bool send = t.kind() == Kind::Send;
    const std::uint64_t send_id = send ? t.id() : t.peer_id();
    const std::uint64_t recv_id = send ? t.peer_id() : t.id();
    ctrl_.send(t.endpoint().peer_world, abort_msg(send, send_id, recv_id, code, ack));
}

Handshake::TransferPtr Handshake::abort_target(const CtrlMsg& msg, int src) const
{
    if (msg.tag == kAbortToSender) {
        if (auto s = sends_.find(msg.send_id); s != sends_.end()) {
            if (s->second->peer_id() == msg.recv_id && s->second->endpoint().peer_world == src) {
                return s->second;
            }
        }
        return nullptr;
    }
    const std::optional<std::uint64_t> recv = matcher_.receive_of(src, msg.send_id);
    return recv ? find(*recv) : nullptr;
}

void Handshake::handle_abort(const CtrlMsg& msg, int src)
{
    const TransferPtr t = abort_target(msg, src);
    if (t && t->pairing() != Pairing::Failed) {
        const int code = msg_error(msg);
        MPIPCL_LOG(Info, "the peer (rank %d) of request %llu failed: error %d", src,
                   static_cast<unsigned long long>(t->id()), code);
        matcher_.take_held(t->id());  // a never-started receive: the pair is dead before it began
        t->fail_locked(code);         // a send stops writing first (Backend::abort_round)
    } else if (t && t->kind() == Kind::Recv) {
        // Both sides failed at once: the sender's own Abort left after it stopped writing.
        t->peer_stopped_locked();
    }
    if ((msg.flags & kFlagAckAbort) != 0) {
        // The receiver's round waits for this. Whether the send failed just now, earlier
        // (it stopped then) or is freed (its last round completed: nothing in flight), it
        // writes nothing more.
        ctrl_.send(src, abort_ack_msg(msg.send_id, msg.recv_id));
    }
}

void Handshake::handle_abort_ack(const CtrlMsg& msg, int src)
{
    const TransferPtr t = find(msg.recv_id);
    if (t && t->kind() == Kind::Recv && t->peer_id() == msg.send_id &&
        t->endpoint().peer_world == src) {
        t->peer_stopped_locked();  // nothing if it no longer waits (the sender's Abort came)
    }
}

void Handshake::release_tags(Transfer& t)
{
    if (t.kind() == Kind::Recv && t.backend() != nullptr && t.backend()->tags_used() > 0) {
        tags_.release(t.agreement().tag_base);
    }
}

}  // namespace mpipcl::progress
