// SPDX-License-Identifier: BSD-3-Clause
// Handshake, matching in init order, and progress of active requests.
#include "progress/engine.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "progress/backends.hpp"
#include "progress/comm_info.hpp"

namespace mpipcl::progress {

namespace {
/// Errors travel as ErrId+1 (codes registered at run time may differ between processes), or
/// as minus the MPI error class for codes of the MPI library (same library on both sides).
std::int32_t encode_error(int code)
{
    for (int i = 0; i < static_cast<int>(ErrId::Count_); ++i) {
        if (error_code(static_cast<ErrId>(i)) == code) {
            return i + 1;
        }
    }
    int cls = MPI_ERR_INTERN;
    if (PMPI_Error_class(code, &cls) != MPI_SUCCESS || cls == MPI_SUCCESS) {
        cls = MPI_ERR_INTERN;
    }
    return -cls;
}
int decode_error(std::int32_t e)
{
    if (e < 0) {
        return -e;
    }
    if (e == 0 || e > static_cast<int>(ErrId::Count_)) {
        return error_code(ErrId::Internal);
    }
    return error_code(static_cast<ErrId>(e - 1));
}

/// A running transfer for which every progress pass polls the control channel (a full MPI
/// progress poll): an RMA sender waiting for the receiver's Ready, or a transfer whose data
/// moves only while this process is inside MPI.
bool wants_every_pass(const Transfer& t)
{
    if (t.kind() == Kind::Send && t.needs_peer_ready() && t.peer_ready_round() < t.round()) {
        return true;
    }
    return t.backend() != nullptr && t.backend()->wants_mpi_progress();
}

/// Set by the MPIPCL_DUMP_SIGNAL handler, consumed by the next pass (a lock-free atomic: safe
/// in a signal handler).
std::atomic<bool> g_dump_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_dump_signal(int /*sig*/)
{
    g_dump_requested.store(true, std::memory_order_relaxed);
}
}  // namespace

/// Takes the oldest entry queued under @p key (and drops the key once its queue is empty).
template <class Map, class T>
bool pop_front(Map& map, const typename Map::key_type& key, T* out)
{
    auto it = map.find(key);
    if (it == map.end() || it->second.empty()) {
        return false;
    }
    *out = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
        map.erase(it);
    }
    return true;
}

void Engine::init()
{
    if (initialized()) {
        return;
    }
    set_config(Config::load());
    register_error_codes();
    MPIPCL_CHECK_MPI(PMPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    PMPI_Comm_set_name(comm_, const_cast<char*>("mpipcl private"));
    PMPI_Comm_rank(comm_, &rank_);
    int* tag_ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    tags_.reset(kCtrlTag + 1, flag ? *tag_ub : 32767);
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    thread_multiple_ = provided == MPI_THREAD_MULTIPLE;
    comm_info_init();
    int size = 1;
    PMPI_Comm_size(comm_, &size);
    sent_to_.assign(size, 0);
    recv_from_.assign(size, 0);
    try {
        backends::init(comm_);  // collective, like the dup above: every process is in MPI_Init*
    } catch (...) {             // a backend module is missing: the library stays down
        comm_info_finalize();
        PMPI_Comm_free(&comm_);
        throw;
    }
    stop_ = false;
    install_dump_signal();
    initialized_.store(true, std::memory_order_release);
    MPIPCL_LOG(Debug, "engine up: thread level %d, tag ub %d", provided, flag ? *tag_ub : -1);
}

void Engine::finalize()
{
    if (!initialized()) {
        return;
    }
    {
        std::lock_guard<std::mutex> lk(wake_mu_);
        stop_ = true;
    }
    wake_cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    thread_running_.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> lk(mu_);
    drain_ctrl_locked();
    for (auto& o : outgoing_) {
        PMPI_Wait(&o.req, MPI_STATUS_IGNORE);
    }
    outgoing_.clear();
    unexpected_.clear();
    unmatched_.clear();
    matched_.clear();
    sends_.clear();
    recvs_.clear();
    for (auto& t : active_) {
        t->in_active_list = false;
    }
    active_.clear();
    for (auto& [id, t] : all_) {
        t->release_backend_locked();
    }
    all_.clear();
    backends::finalize();
    PMPI_Comm_free(&comm_);
    comm_info_finalize();
    restore_dump_signal();
    initialized_.store(false, std::memory_order_release);
}

void Engine::add(const TransferPtr& t)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        post_ctrl_recv_locked();
        all_[t->id()] = t;
        const Endpoint& ep = t->endpoint();
        pending_pairs_.fetch_add(1, std::memory_order_relaxed);
        if (t->kind() == Kind::Send) {
            sends_[t->id()] = t;
            const Offer o = backends::offer(ep, t->options());
            CtrlMsg m{};
            m.type = MsgType::Setup;
            m.tag = ep.tag;
            m.comm_key = ep.comm_key;
            m.send_id = t->id();
            m.part_bytes = ep.part_bytes();
            m.elem_bytes = ep.elem_bytes;
            m.partitions = ep.partitions;
            m.backend = static_cast<std::int32_t>(o.backend);
            m.messages = o.messages;
            std::copy(std::begin(o.extra), std::end(o.extra), std::begin(m.extra));
            send_ctrl_locked(ep.peer_world, m);
        } else {
            match_or_queue_locked(t, MatchKey{ep.comm_key, ep.peer_world, ep.tag}, false);
        }
        start_thread_locked();
    }
    wake();
}

void Engine::start(const TransferPtr& t)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        t->begin_round_locked();
        if (t->null_peer()) {
            return;
        }
        if (t->abort_owed != MPI_SUCCESS) {
            send_abort_locked(*t, t->abort_owed);
            t->abort_owed = MPI_SUCCESS;
        }
        if (auto m = matched_.find(t->id()); m != matched_.end()) {
            const Setup setup = m->second;
            matched_.erase(m);
            pair_recv_locked(t, setup);
        } else if (t->kind() == Kind::Recv && t->backend() != nullptr && !t->round_complete()) {
            send_ready_locked(*t);
        }
        if (!t->round_complete()) {
            activate_locked(t);
        }
    }
    wake();
}

void Engine::remove(const TransferPtr& t)
{
    std::lock_guard<std::mutex> lk(mu_);
    if (t->null_peer()) {
        return;
    }
    all_.erase(t->id());
    const Endpoint& ep = t->endpoint();
    const Pairing pairing = t->pairing();
    if (t->kind() == Kind::Send) {
        sends_.erase(t->id());
        if (pairing == Pairing::Unpaired) {
            pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
        }
        if (!t->ever_started() && (pairing != Pairing::Failed || t->abort_owed != MPI_SUCCESS)) {
            // Withdraw the Setup so it cannot pair with (and starve) a later receive.
            CtrlMsg m{};
            m.type = MsgType::Cancel;
            m.tag = ep.tag;
            m.comm_key = ep.comm_key;
            m.send_id = t->id();
            send_ctrl_locked(ep.peer_world, m);
        }
    } else if (auto m = matched_.find(t->id()); m != matched_.end()) {
        // Never started: its Setup goes to the next receive in line, as if it never existed.
        const Setup setup = m->second;
        matched_.erase(m);
        recvs_.erase({setup.src, setup.msg.send_id});
        const MatchKey key{ep.comm_key, ep.peer_world, ep.tag};
        TransferPtr next;
        if (pop_front(unmatched_, key, &next)) {
            match_locked(next, setup);
        } else {
            unexpected_[key].push_front(setup);
        }
    } else if (pairing == Pairing::Unpaired) {
        pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
        MatchKey key{ep.comm_key, ep.peer_world, ep.tag};
        auto it = unmatched_.find(key);
        if (it != unmatched_.end()) {
            auto& q = it->second;
            q.erase(std::remove(q.begin(), q.end(), t), q.end());
            if (q.empty()) {
                unmatched_.erase(it);
            }
        }
    } else {
        recvs_.erase({ep.peer_world, t->peer_id});
    }
    release_tags_locked(*t);
    if (t->in_active_list) {
        active_.erase(std::remove(active_.begin(), active_.end(), t), active_.end());
        t->in_active_list = false;
        active_count_.fetch_sub(1, std::memory_order_relaxed);
    }
    t->release_backend_locked();
}

bool Engine::progress(bool wait) noexcept
{
    // Called by application threads only (the progress thread uses pass()).
    // sync: seq_cst, against the progress thread's deep_sleep_ store then exchange of this (see
    // thread_main and wake()); otherwise only a hint for the progress thread to stand down.
    // Stored only when clear: a waiting loop does not write a shared line at every poll.
    if (!user_progressed_.load(std::memory_order_relaxed)) {
        user_progressed_.store(true);
    }
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    if (wait) {
        lk.lock();
    } else if (!lk.try_lock()) {
        return false;
    }
    return pass(lk, false);
}

bool Engine::progress_for(Transfer& t) noexcept
{
    constexpr unsigned kFullPassEvery = 8;
    // sync: as in progress().
    if (!user_progressed_.load(std::memory_order_relaxed)) {
        user_progressed_.store(true);
    }
    std::unique_lock<std::mutex> lk(mu_);
    if (++for_passes_ % kFullPassEvery == 0) {
        return pass(lk, true);  // also polls the control channel
    }
    if (!initialized() || ctrl_awaited_ || !outgoing_.empty() || !t.in_active_list ||
        pending_pairs_.load(std::memory_order_relaxed) > 0) {
        return pass(lk, false);
    }
    bool done = false;
    try {
        done = advance_locked(t);
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "progress failed: %s", e.what());
    }
    if (done) {
        deactivate_locked(t);  // as a full pass would
    }
    return done;
}

bool Engine::advance_locked(Transfer& t)
{
    int failed = MPI_SUCCESS;
    const bool done = t.progress_locked(&failed);
    if (failed != MPI_SUCCESS) {
        fail_pair_locked(t, failed);
        return true;
    }
    return done;
}

bool Engine::pass(std::unique_lock<std::mutex>& lk, bool all) noexcept
{
    if (!lk.owns_lock() || !initialized()) {
        return false;
    }
    if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
        dump_locked();
    }
    const int before = active_count_.load(std::memory_order_relaxed);
    const int pairs_before = pending_pairs_.load(std::memory_order_relaxed);
    try {
        progress_locked(all);
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "progress failed: %s", e.what());
    }
    return active_count_.load(std::memory_order_relaxed) != before ||
           pending_pairs_.load(std::memory_order_relaxed) != pairs_before;
}

void Engine::install_dump_signal()
{
    dump_signal_ = 0;
    const int sig = config().dump_signal;
    if (sig == 0) {
        return;
    }
    struct sigaction sa {};
    sa.sa_handler = on_dump_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old_action_) != 0) {
        MPIPCL_LOG(Warn, "MPIPCL_DUMP_SIGNAL: cannot handle signal %d", sig);
        return;
    }
    dump_signal_ = sig;
    MPIPCL_LOG(Info, "signal %d dumps the library's state", sig);
}

void Engine::restore_dump_signal() noexcept
{
    if (dump_signal_ != 0) {
        sigaction(dump_signal_, &old_action_, nullptr);
        dump_signal_ = 0;
    }
}

void Engine::dump_locked() noexcept
{
    g_dump_requested.store(false, std::memory_order_relaxed);
    std::size_t unexpected = 0;
    for (const auto& [key, q] : unexpected_) {
        unexpected += q.size();
    }
    std::size_t unmatched = 0;
    for (const auto& [key, q] : unmatched_) {
        unmatched += q.size();
    }
    MPIPCL_LOG(Error,
               "state dump: %zu transfers, %zu active (count %d), %d awaiting a pair, %zu "
               "unexpected Setups, %zu unmatched receives, %zu matched unstarted, %zu control "
               "sends in flight, control receive %s%s, progress thread %s",
               all_.size(), active_.size(), active_count_.load(std::memory_order_relaxed),
               pending_pairs_.load(std::memory_order_relaxed), unexpected, unmatched,
               matched_.size(), outgoing_.size(), ctrl_posted_ ? "posted" : "NOT posted",
               ctrl_awaited_ ? " (awaited)" : "",
               thread_running_.load(std::memory_order_relaxed) ? "running" : "off");
    for (std::size_t r = 0; r < sent_to_.size(); ++r) {
        if (sent_to_[r] != 0 || recv_from_[r] != 0) {
            MPIPCL_LOG(Error,
                       "state dump: control messages with rank %zu: %llu sent, %llu received", r,
                       static_cast<unsigned long long>(sent_to_[r]),
                       static_cast<unsigned long long>(recv_from_[r]));
        }
    }
    for (const auto& [id, t] : all_) {
        char line[768];
        t->describe_locked(line, sizeof line);
        MPIPCL_LOG(Error, "state dump: %s%s", line, t->in_active_list ? " [active list]" : "");
    }
}

void Engine::progress_locked(bool all)
{
    // The control channel costs an MPI_Test (a full MPI progress poll) per pass. An
    // application thread waiting on a paired transfer needs nothing from it — MPI moves the
    // data — so its passes poll it only every kCtrlEvery-th time (an Abort or a new Setup is
    // seen a few microseconds later); passes of the progress thread, passes while a pairing is
    // pending and passes while a transfer awaits a control message, or data that only moves
    // while this process is inside MPI (ctrl_awaited_), poll it every time.
    constexpr unsigned kCtrlEvery = 8;
    const bool poll_ctrl = all || ctrl_awaited_ ||
                           pending_pairs_.load(std::memory_order_relaxed) > 0 ||
                           ++user_passes_ % kCtrlEvery == 0;
    if (ctrl_posted_ && poll_ctrl) {
        for (int i = 0; i < 64; ++i) {
            int flag = 0;
            MPI_Status st;
            MPIPCL_CHECK_MPI(PMPI_Test(&ctrl_req_, &flag, &st));
            if (!flag) {
                break;
            }
            ctrl_posted_ = false;
            const CtrlMsg msg = ctrl_buf_;
            ++recv_from_[st.MPI_SOURCE];
            post_ctrl_recv_locked();
            handle_ctrl_locked(msg, st.MPI_SOURCE);
        }
    }
    for (std::size_t i = 0; i < outgoing_.size();) {
        int flag = 0;
        PMPI_Test(&outgoing_[i].req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            outgoing_[i] = std::move(outgoing_.back());
            outgoing_.pop_back();
        } else {
            ++i;
        }
    }
    bool awaited = false;
    for (std::size_t i = 0; i < active_.size();) {
        Transfer& t = *active_[i];
        const bool done = advance_locked(t);
        awaited = awaited || (!done && wants_every_pass(t));
        if (done) {
            active_[i]->in_active_list = false;
            active_[i] = std::move(active_.back());
            active_.pop_back();
            active_count_.fetch_sub(1, std::memory_order_relaxed);
        } else {
            ++i;
        }
    }
    ctrl_awaited_ = awaited;
}

void Engine::post_ctrl_recv_locked()
{
    if (ctrl_posted_) {
        return;
    }
    MPIPCL_CHECK_MPI(PMPI_Irecv(&ctrl_buf_, sizeof(CtrlMsg), MPI_BYTE, MPI_ANY_SOURCE, kCtrlTag,
                                comm_, &ctrl_req_));
    ctrl_posted_ = true;
}

void Engine::send_ctrl_locked(int dest, const CtrlMsg& msg)
{
    Outgoing o{std::make_unique<CtrlMsg>(msg), MPI_REQUEST_NULL};
    MPIPCL_CHECK_MPI(
        PMPI_Isend(o.msg.get(), sizeof(CtrlMsg), MPI_BYTE, dest, kCtrlTag, comm_, &o.req));
    ++sent_to_[dest];
    outgoing_.push_back(std::move(o));
}

void Engine::handle_ctrl_locked(const CtrlMsg& msg, int src)
{
    switch (msg.type) {
        case MsgType::Setup: {
            MatchKey key{msg.comm_key, src, msg.tag};
            TransferPtr recv;
            if (pop_front(unmatched_, key, &recv)) {
                match_locked(recv, Setup{msg, src});
            } else {
                unexpected_[key].push_back(Setup{msg, src});
            }
            break;
        }
        case MsgType::Reply:
            handle_reply_locked(msg);
            break;
        case MsgType::Cancel:
            handle_cancel_locked(msg, src);
            break;
        case MsgType::Ready: {
            auto it = sends_.find(msg.send_id);
            if (it != sends_.end() && it->second->peer_id == msg.recv_id) {
                it->second->peer_ready_locked(msg.extra[0]);
            }
            break;
        }
        case MsgType::Abort:
            handle_abort_locked(msg, src);
            break;
        default:
            MPIPCL_LOG(Error, "unknown control message %d from %d", static_cast<int>(msg.type),
                       src);
    }
}

void Engine::match_or_queue_locked(const TransferPtr& recv, const MatchKey& key, bool first_in_line)
{
    Setup setup{};
    if (pop_front(unexpected_, key, &setup)) {
        match_locked(recv, setup);
    } else if (first_in_line) {
        unmatched_[key].push_front(recv);
    } else {
        unmatched_[key].push_back(recv);
    }
}

void Engine::match_locked(const TransferPtr& recv, const Setup& setup)
{
    pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
    recv->peer_id = setup.msg.send_id;
    recvs_[{setup.src, setup.msg.send_id}] = recv;
    if (recv->ever_started()) {
        pair_recv_locked(recv, setup);
    } else {
        // Matched in init order, but the pairing (backend, data tags, Reply) waits for the
        // first Start: a receive freed before it ever starts then gives its Setup back to the
        // next receive in line, and the sender has sent nothing that could go astray.
        matched_[recv->id()] = setup;
    }
}

void Engine::pair_recv_locked(const TransferPtr& recv, const Setup& setup)
{
    const Endpoint& ep = recv->endpoint();
    Agreement a;
    a.send_partitions = setup.msg.partitions;
    a.send_part_bytes = setup.msg.part_bytes;
    a.send_elem_bytes = setup.msg.elem_bytes;
    a.recv_partitions = ep.partitions;
    a.recv_part_bytes = ep.part_bytes();
    a.recv_elem_bytes = ep.elem_bytes;
    a.messages = recv->options().messages > 0 ? recv->options().messages : setup.msg.messages;
    a.backend =
        backends::agree(static_cast<BackendKind>(setup.msg.backend), recv->options().backend);
    std::copy(std::begin(setup.msg.extra), std::end(setup.msg.extra), std::begin(a.peer_extra));

    CtrlMsg reply{};
    reply.type = MsgType::Reply;
    reply.send_id = setup.msg.send_id;
    reply.recv_id = recv->id();
    reply.partitions = a.recv_partitions;
    reply.part_bytes = a.recv_part_bytes;
    reply.elem_bytes = a.recv_elem_bytes;
    reply.messages = a.messages;
    reply.backend = static_cast<std::int32_t>(a.backend);

    const std::int64_t send_total = a.send_part_bytes * a.send_partitions;
    const std::int64_t recv_total = a.recv_part_bytes * a.recv_partitions;
    int err = MPI_SUCCESS;
    if (send_total != recv_total) {
        err = error_code(send_total > recv_total ? ErrId::Truncate : ErrId::SizeMismatch);
        MPIPCL_LOG(Info, "size mismatch: sender %lld bytes, receiver %lld bytes",
                   static_cast<long long>(send_total), static_cast<long long>(recv_total));
    } else {
        try {
            recv->pair_locked(a, backends::create(ep, recv->options(), &a, &tags_, comm_));
            // The factory may have settled differently (rma -> persistent fallback).
            reply.tag_base = recv->agreement().tag_base;
            reply.messages = recv->agreement().messages;
            reply.backend = static_cast<std::int32_t>(recv->agreement().backend);
            recv->backend()->reply_extra(reply.extra);
        } catch (const Error& e) {
            MPIPCL_LOG(Warn, "cannot set up the receive: %s", e.what());
            err = e.code();
        } catch (const std::bad_alloc&) {
            MPIPCL_LOG(Warn, "cannot set up the receive: out of memory");
            err = MPI_ERR_NO_MEM;
        }
    }
    if (err != MPI_SUCCESS) {
        // Not failed yet: the send may have been freed before it ever started, its Cancel on
        // the way — then this receive must pair with the next Setup as if that send never
        // existed. The sender answers the error with an Abort (it still exists: the pair
        // fails) or has already sent its Cancel (the receive unpairs); the control channel
        // is FIFO, so one of the two arrives.
        reply.error = encode_error(err);
    }
    MPIPCL_LOG(Debug, "recv %llu paired with send %llu of rank %d: tags %d.., error %d",
               static_cast<unsigned long long>(recv->id()),
               static_cast<unsigned long long>(setup.msg.send_id), setup.src, reply.tag_base, err);
    send_ctrl_locked(setup.src, reply);
    if (!recv->round_complete()) {
        if (err == MPI_SUCCESS) {
            send_ready_locked(*recv);
        }
        activate_locked(recv);
    }
}

void Engine::send_ready_locked(Transfer& recv)
{
    if (recv.backend() == nullptr || !recv.backend()->needs_peer_ready()) {
        return;
    }
    CtrlMsg m{};
    m.type = MsgType::Ready;
    m.send_id = recv.peer_id;
    m.recv_id = recv.id();
    m.extra[0] = recv.round();
    send_ctrl_locked(recv.endpoint().peer_world, m);
}

void Engine::handle_reply_locked(const CtrlMsg& msg)
{
    auto it = sends_.find(msg.send_id);
    if (it == sends_.end()) {
        return;  // freed meanwhile
    }
    TransferPtr req = it->second;
    if (req->pairing() != Pairing::Unpaired) {
        return;
    }
    pending_pairs_.fetch_sub(1, std::memory_order_relaxed);
    req->peer_id = msg.recv_id;
    MPIPCL_LOG(Debug, "send %llu paired with recv %llu: tags %d.., error %d",
               static_cast<unsigned long long>(req->id()),
               static_cast<unsigned long long>(msg.recv_id), msg.tag_base, msg.error);
    if (msg.error != 0) {
        // Confirm to the receiver, which waits for this (see pair_recv_locked).
        fail_pair_locked(*req, decode_error(msg.error));
        return;
    }
    const Endpoint& ep = req->endpoint();
    Agreement a;
    a.send_partitions = ep.partitions;
    a.send_part_bytes = ep.part_bytes();
    a.send_elem_bytes = ep.elem_bytes;
    a.recv_partitions = msg.partitions;
    a.recv_part_bytes = msg.part_bytes;
    a.recv_elem_bytes = msg.elem_bytes;
    a.messages = msg.messages;
    a.tag_base = msg.tag_base;
    a.backend = static_cast<BackendKind>(msg.backend);
    std::copy(std::begin(msg.extra), std::end(msg.extra), std::begin(a.peer_extra));
    try {
        req->pair_locked(a, backends::create(ep, req->options(), &a, &tags_, comm_));
    } catch (const Error& e) {
        // The receiver accepted and waits for data: tell it, or its Wait never returns.
        MPIPCL_LOG(Warn, "cannot set up the send: %s", e.what());
        fail_pair_locked(*req, e.code());
    } catch (const std::bad_alloc&) {
        MPIPCL_LOG(Warn, "cannot set up the send: out of memory");
        fail_pair_locked(*req, MPI_ERR_NO_MEM);
    }
    if (!req->round_complete()) {
        activate_locked(req);
    }
}

void Engine::handle_cancel_locked(const CtrlMsg& msg, int src)
{
    MatchKey key{msg.comm_key, src, msg.tag};
    auto u = unexpected_.find(key);
    if (u != unexpected_.end()) {
        auto& q = u->second;
        auto s = std::find_if(q.begin(), q.end(),
                              [&](const Setup& x) { return x.msg.send_id == msg.send_id; });
        if (s != q.end()) {
            q.erase(s);
            if (q.empty()) {
                unexpected_.erase(u);
            }
            return;
        }
    }
    auto r = recvs_.find({src, msg.send_id});
    if (r == recvs_.end()) {
        return;
    }
    // The receive was paired with a send that was freed before it ever started: unpair it
    // and give it to the next Setup, as if the send had never existed.
    TransferPtr recv = r->second;
    MPIPCL_LOG(Debug, "send %llu of rank %d cancelled: unpairing recv %llu",
               static_cast<unsigned long long>(msg.send_id), src,
               static_cast<unsigned long long>(recv->id()));
    recvs_.erase(r);
    if (matched_.erase(recv->id()) == 0) {
        release_tags_locked(*recv);
        recv->unpair_locked();
    }
    pending_pairs_.fetch_add(1, std::memory_order_relaxed);
    match_or_queue_locked(recv, key, true);
}

void Engine::fail_pair_locked(Transfer& t, int code)
{
    const bool tell = t.pairing() == Pairing::Paired || t.kind() == Kind::Send;
    t.fail_locked(code);
    if (!tell || t.peer_id == 0) {
        return;
    }
    if (t.kind() == Kind::Send && !t.ever_started()) {
        t.abort_owed = code;  // see Transfer::abort_owed
        return;
    }
    send_abort_locked(t, code);
}

void Engine::send_abort_locked(Transfer& t, int code)
{
    CtrlMsg m{};
    m.type = MsgType::Abort;
    // Ids come from each process's own counter: say which side the message is for.
    m.tag = t.kind() == Kind::Send ? kAbortToReceiver : kAbortToSender;
    m.send_id = t.kind() == Kind::Send ? t.id() : t.peer_id;
    m.recv_id = t.kind() == Kind::Send ? t.peer_id : t.id();
    m.error = encode_error(code);
    send_ctrl_locked(t.endpoint().peer_world, m);
}

void Engine::handle_abort_locked(const CtrlMsg& msg, int src)
{
    TransferPtr t;
    if (msg.tag == kAbortToSender) {
        if (auto s = sends_.find(msg.send_id); s != sends_.end()) {
            if (s->second->peer_id == msg.recv_id && s->second->endpoint().peer_world == src) {
                t = s->second;
            }
        }
    } else if (auto r = recvs_.find({src, msg.send_id}); r != recvs_.end()) {
        t = r->second;
    }
    if (!t || t->pairing() == Pairing::Failed) {
        return;  // freed meanwhile, or already failed
    }
    const int code = decode_error(msg.error);
    MPIPCL_LOG(Info, "the peer (rank %d) of request %llu failed: error %d", src,
               static_cast<unsigned long long>(t->id()), code);
    matched_.erase(t->id());  // a never-started receive: the pair is dead before it began
    t->fail_locked(code);
}

void Engine::drain_ctrl_locked()
{
    // Every control message another process sent here is received before MPI_Finalize, so
    // the MPI library never finds one unmatched (MPICH/UCX warns about those). Finalize is
    // collective: exchange how many each process sent to each other, then receive the rest.
    const int n = static_cast<int>(sent_to_.size());
    std::vector<std::uint64_t> expected(n, 0);
    if (PMPI_Alltoall(sent_to_.data(), 1, MPI_UINT64_T, expected.data(), 1, MPI_UINT64_T, comm_) !=
        MPI_SUCCESS) {
        MPIPCL_LOG(Warn, "finalize: cannot count the pending control messages");
        expected = recv_from_;
    }
    Backoff backoff(20, 1000);
    for (;;) {
        int missing = 0;
        for (int p = 0; p < n; ++p) {
            missing += recv_from_[p] < expected[p];
        }
        if (missing == 0) {
            break;
        }
        post_ctrl_recv_locked();
        int flag = 0;
        MPI_Status st;
        if (PMPI_Test(&ctrl_req_, &flag, &st) != MPI_SUCCESS) {
            break;
        }
        if (flag) {
            ++recv_from_[st.MPI_SOURCE];  // dropped: the application is finalizing
            ctrl_posted_ = false;
            backoff.reset();
        } else {
            backoff.pause();
        }
    }
    if (ctrl_posted_) {
        PMPI_Cancel(&ctrl_req_);
        PMPI_Wait(&ctrl_req_, MPI_STATUS_IGNORE);
        ctrl_posted_ = false;
    }
}

void Engine::release_tags_locked(Transfer& t)
{
    if (t.kind() == Kind::Recv && t.backend() != nullptr && t.backend()->tags_used() > 0) {
        tags_.release(t.agreement().tag_base);
    }
}

void Engine::deactivate_locked(Transfer& t)
{
    if (!t.in_active_list) {
        return;
    }
    const auto it = std::find_if(active_.begin(), active_.end(),
                                 [&t](const TransferPtr& p) { return p.get() == &t; });
    if (it != active_.end()) {
        if (it + 1 != active_.end()) {
            *it = std::move(active_.back());
        }
        active_.pop_back();
        active_count_.fetch_sub(1, std::memory_order_relaxed);
    }
    t.in_active_list = false;
}

void Engine::activate_locked(const TransferPtr& req)
{
    if (!req->in_active_list) {
        req->in_active_list = true;
        active_.push_back(req);
        active_count_.fetch_add(1, std::memory_order_relaxed);
    }
}

void Engine::start_thread_locked()
{
    if (thread_.joinable() || !thread_multiple_ || !config().progress_thread) {
        return;
    }
    thread_ = std::thread([this] { thread_main(); });
    thread_running_.store(true, std::memory_order_release);
}

bool Engine::has_work() const
{
    return active_count_.load(std::memory_order_relaxed) > 0 ||
           pending_pairs_.load(std::memory_order_relaxed) > 0;
}

void Engine::thread_main()
{
    // Yield briefly after each event (the next one often follows), then sleep up to the cap.
    // Our own thread: a 1 ns timer slack makes those short sleeps last what they say.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    Backoff busy(20, config().progress_max_sleep_us);
    // The stand-down nap doubles while the application keeps driving progress itself (each
    // wake-up costs a polling application thread its core for a moment).
    const std::int64_t stand_down_max_ns =
        std::max<std::int64_t>(kUserActiveNs, std::int64_t{config().progress_stand_down_us} * 1000);
    std::int64_t stand_down_ns = kUserActiveNs;
    const auto stood_down = [&] { stand_down_ns = std::min(stand_down_ns * 2, stand_down_max_ns); };
    for (;;) {
        if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
            std::lock_guard<std::mutex> lk(mu_);  // idle or not: the dump must not wait for work
            dump_locked();
        }
        {
            std::unique_lock<std::mutex> lk(wake_mu_);
            if (stop_) {
                return;
            }
            if (!has_work()) {
                // Idle: sleep until a request appears (bounded, so nothing is ever missed).
                // While an application thread drives progress itself (a tight loop of Start
                // and Wait), nap only kUserActiveNs and let wake() skip its notify: a futex
                // wake-up per MPI_Start would cost the application a context switch.
                // sync: seq_cst store then load, mirrored in wake(): either we see the recent
                // user progress (and nap briefly) or wake() sees deep_sleep_ (and notifies).
                deep_sleep_.store(true);
                const bool user_active = user_progressed_.exchange(false);
                if (user_active) {
                    deep_sleep_.store(false, std::memory_order_relaxed);
                }
                const auto nap = user_active ? std::chrono::nanoseconds(stand_down_ns)
                                             : std::chrono::nanoseconds(50000000);
                wake_cv_.wait_for(lk, nap, [&] { return stop_ || wake_flag_; });
                deep_sleep_.store(false, std::memory_order_relaxed);
                wake_flag_ = false;
                if (user_active) {
                    stood_down();
                } else {
                    stand_down_ns = kUserActiveNs;
                }
                busy.reset();
                continue;
            }
            wake_flag_ = false;
        }
        // While an application thread is driving progress itself (waiting in MPI_Wait*, or
        // polling MPI_Parrived/MPI_Test), stay out of MPI: two threads polling one MPI library
        // only fight over its lock (MPICH: 10x slower transfers on 2 cores).
        // sync: relaxed, a hint (the Dekker pair with wake() is in the idle branch above).
        if (user_progressed_.exchange(false, std::memory_order_relaxed)) {
            // Sleep, not yield: on a shared core every wake-up costs the polling thread.
            std::this_thread::sleep_for(std::chrono::nanoseconds(stand_down_ns));
            stood_down();
            busy.reset();
            continue;
        }
        stand_down_ns = kUserActiveNs;
        bool progressed = false;
        {
            std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
            progressed = pass(lk, true);
        }
        // Back off with the engine lock released: an application thread in MPI_Wait/MPI_Test
        // (progress_for) blocks on it, and would otherwise wait out the whole sleep.
        if (progressed) {
            busy.reset();
        } else {
            busy.pause();
        }
    }
}

void Engine::wake()
{
    if (!thread_running_.load(std::memory_order_acquire)) {
        return;
    }
    // An application thread drove progress since the progress thread last looked, and that
    // thread is not in its long wait: it looks again within kUserActiveNs by itself (see
    // thread_main). sync: seq_cst loads after the seq_cst store in progress() (Dekker).
    if (user_progressed_.load() && !deep_sleep_.load()) {
        return;
    }
    {
        std::lock_guard<std::mutex> lk(wake_mu_);
        wake_flag_ = true;
    }
    wake_cv_.notify_one();
}

}  // namespace mpipcl::progress
