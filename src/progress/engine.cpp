// SPDX-License-Identifier: BSD-3-Clause
// The engine's life cycle, its progress passes and what the progress thread calls.
#include "progress/engine.hpp"

#include <algorithm>

#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/traffic.hpp"
#include "progress/backends.hpp"
#include "progress/comm_info.hpp"
#include "progress/data_drain.hpp"
#include "progress/dump_signal.hpp"

namespace mpipcl::progress {

namespace {

/// Marks the engine lock's holder as in a progress pass for its scope (Engine::passing_).
class PassingMark {
   public:
    explicit PassingMark(std::atomic<bool>& flag) noexcept : flag_(flag)
    {
        // sync: relaxed both ways, a hint for MPI_Parrived's pollers (Engine::parrived_missed).
        flag_.store(true, std::memory_order_relaxed);
    }
    ~PassingMark() { flag_.store(false, std::memory_order_relaxed); }
    PassingMark(const PassingMark&) = delete;
    PassingMark& operator=(const PassingMark&) = delete;

   private:
    std::atomic<bool>& flag_;
};

}  // namespace

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
    comm_info_init(comm_);
    node_ = node_of_world(rank_);
    int size = 1;
    PMPI_Comm_size(comm_, &size);
    ctrl_.init(comm_, size);
    data_traffic().init(size);
    handshake_.init(comm_);
    backends::init(comm_);  // collective, like the dup above: every process is in MPI_Init*
    init_progress_mode();
    thread_.reset_stop();
    dump_signal_.install(config().dump_signal);
    initialized_.store(true, std::memory_order_release);
    MPIPCL_LOG(Debug, "engine up: thread level %d, tag ub %d", provided, flag ? *tag_ub : -1);
}

void Engine::init_progress_mode()
{
    // From the configuration alone, never the thread level: the segment is collective.
    const ProgressMode mode = config().progress;
    bells_on_ = mode == ProgressMode::Event || mode == ProgressMode::Offload;
    offload_ = mode == ProgressMode::Offload;
    if (bells_on_) {
        bells_.init(comm_);
        thread_.use_doorbell(&bells_, offload_);
        ctrl_.use_doorbells(&bells_);
    }
}

void Engine::finalize()
{
    if (!initialized()) {
        return;
    }
    thread_.stop();
    std::lock_guard<std::mutex> lk(mu_);
    answer_until_all_finalize_locked();
    ctrl_.drain();
    active_.clear();
    tasks_.clear();
    tasks_count_.store(0, std::memory_order_relaxed);
    handshake_.finalize();  // every backend: no receive of ours is posted any more
    drain_data_messages(comm_);
    backends::finalize();
    if (bells_on_) {
        ctrl_.use_doorbells(nullptr);
        thread_.use_doorbell(nullptr, false);
        bells_.finalize();
        bells_on_ = false;
    }
    PMPI_Comm_free(&comm_);
    comm_info_finalize();
    dump_signal_.restore();
    initialized_.store(false, std::memory_order_release);
}

void Engine::answer_until_all_finalize_locked() noexcept
{
    // A peer's round may still wait for an answer from here: a failed transfer kept for late
    // peers (Handshake::remove) gives it its error, and only then can that peer finalize. So
    // the control channel is served until every process is in MPI_Finalize.
    MPI_Request all_in = MPI_REQUEST_NULL;
    if (PMPI_Ibarrier(comm_, &all_in) != MPI_SUCCESS) {
        MPIPCL_LOG(Warn, "finalize: cannot wait for the other processes to finalize");
        return;
    }
    Backoff backoff(kFinalizeDrainYieldUs, kFinalizeDrainMaxSleepUs);
    bool warned = false;
    for (;;) {
        int flag = 0;
        if (PMPI_Test(&all_in, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag != 0) {
            return;
        }
        bool handled = false;  // a peer that needs several answers in a row gets them quickly
        try {
            ctrl_.receive([this, &handled](const CtrlMsg& msg, int src) {
                handled = true;
                handshake_.handle(msg, src);
            });
            ctrl_.complete_sends();
        } catch (const std::exception& e) {
            if (!warned) {
                MPIPCL_LOG(Warn, "finalize: a control message failed: %s", e.what());
                warned = true;
            }
        }
        if (handled) {
            backoff.reset();
        } else {
            backoff.pause();
        }
    }
}

void Engine::add(const TransferPtr& t)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        handshake_.add(t);
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
        handshake_.start(t);
        if (!t->round_complete()) {
            active_.add(t);
        }
    }
    wake();
}

void Engine::remove(const TransferPtr& t)
{
    std::lock_guard<std::mutex> lk(mu_);
    remove_locked(t);
}

void Engine::remove_locked(const TransferPtr& t)
{
    if (t->null_peer()) {
        return;
    }
    handshake_.remove(t);
    active_.remove(*t);
    t->release_backend_locked();
}

void Engine::keep_until_exit(std::unique_ptr<char[]>& buf) noexcept
{
    std::lock_guard<std::mutex> lk(kept_mu_);
    try {
        kept_.push_back(std::move(buf));  // moved from only once there is room
    } catch (...) {
        (void)buf.release();  // leaked rather than freed under MPI
    }
}

void Engine::start_task(const std::shared_ptr<Task>& task)
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (std::find(tasks_.begin(), tasks_.end(), task) == tasks_.end()) {
            tasks_.push_back(task);
            tasks_count_.store(static_cast<int>(tasks_.size()), std::memory_order_relaxed);
        }
        start_thread_locked();
    }
    wake();
}

void Engine::remove_task(const Task& task)
{
    std::lock_guard<std::mutex> lk(mu_);
    tasks_.erase(std::remove_if(tasks_.begin(), tasks_.end(),
                                [&](const std::shared_ptr<Task>& t) { return t.get() == &task; }),
                 tasks_.end());
    tasks_count_.store(static_cast<int>(tasks_.size()), std::memory_order_relaxed);
}

void Engine::advance_tasks_locked() noexcept
{
    // After the transfers: the partitions their pass saw arrive move on in the same pass.
    tasks_.erase(std::remove_if(tasks_.begin(), tasks_.end(),
                                [](const std::shared_ptr<Task>& t) { return t->advance_locked(); }),
                 tasks_.end());
    tasks_count_.store(static_cast<int>(tasks_.size()), std::memory_order_relaxed);
}

bool Engine::progress(bool wait) noexcept
{
    // Called by application threads only (the progress thread uses pass()).
    thread_.note_user_progress();
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    if (wait) {
        lk.lock();
    } else if (!lk.try_lock()) {
        return false;
    }
    return pass(lk, false);
}

bool Engine::push() noexcept
{
    thread_.note_user_progress();
    return try_pass();
}

bool Engine::progress_for(Transfer& t, bool wait_for_lock) noexcept
{
    constexpr unsigned kFullPassEvery = 8;
    thread_.note_user_progress();
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    if (wait_for_lock) {
        lk.lock();
    } else if (!lk.try_lock()) {
        return false;  // the wait loop looks again soon (a full pass advances t meanwhile)
    }
    if (++for_passes_ % kFullPassEvery == 0) {
        return pass(lk, true);  // also polls the control channel
    }
    if (!initialized() || ctrl_awaited_ || ctrl_.sends_in_flight() != 0 || !t.in_active_list() ||
        handshake_.pending() > 0) {
        return pass(lk, false);
    }
    const PassingMark mark(passing_);
    bool done = false;
    try {
        done = advance_locked(t);
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "progress failed: %s", e.what());
    }
    if (!done && t.wants_every_pass()) {  // as a full pass would note it (progress_locked)
        ctrl_awaited_ = true;
        wants_polling_.store(true, std::memory_order_relaxed);
    }
    if (done) {
        active_.remove(t);  // as a full pass would
        if (bells_on_) {
            note_completion();
        }
    }
    return done;
}

void Engine::await_ring(std::uint32_t seen) noexcept
{
    // A transfer that wants every pass (Transfer::wants_every_pass) moves only while this
    // process calls MPI, whatever its peer rings.
    const bool rung = (rung_for_all_.load(std::memory_order_relaxed) || quiet()) &&
                      !wants_polling_.load(std::memory_order_relaxed);
    bells_.sleep(seen, rung ? kAwaitCompletionNs
                            : std::int64_t{std::max(1, config().progress_max_sleep_us)} * 1000);
}

bool Engine::advance_locked(Transfer& t)
{
    if (bells_on_ && units_queued(t)) {
        // This pass issues them: the peer looks now (an RMA flush on MPICH waits for the
        // target to enter MPI).
        ring_peer(t);
    }
    int failed = MPI_SUCCESS;
    bool done = t.progress_locked(&failed);
    if (failed != MPI_SUCCESS) {
        handshake_.fail_pair(t, failed);
        done = t.round_complete();  // not while a receive awaits its sender (fail_pair)
    }
    if (done) {
        ring_peer(t);  // its thread sees its own side through
    }
    return done;
}

bool Engine::pass(std::unique_lock<std::mutex>& lk, bool all) noexcept
{
    if (!lk.owns_lock() || !initialized()) {
        return false;
    }
    const PassingMark mark(passing_);
    if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
        dump_locked();
    }
    const int before = active_.count();
    const int pairs_before = handshake_.pending();
    const int tasks_before = tasks_count_.load(std::memory_order_relaxed);
    bool local_sends = false;
    try {
        local_sends = progress_locked(all);
    } catch (const std::exception& e) {
        MPIPCL_LOG(Error, "progress failed: %s", e.what());
    }
    advance_tasks_locked();
    if (all) {  // only a full pass sees the control channel
        const bool settled = tasks_wait_locked() && ctrl_.sends_in_flight() == 0;
        // On an MPI whose receiver copies, such sends need nothing but their completion.
        quiet_.store(kOnNodeReceiverCopies && local_sends && settled, std::memory_order_relaxed);
        local_sends_only_.store(local_sends && settled, std::memory_order_relaxed);
        rung_for_all_.store(rung_ && settled, std::memory_order_relaxed);
    }
    const bool changed = active_.count() != before || handshake_.pending() != pairs_before ||
                         tasks_count_.load(std::memory_order_relaxed) != tasks_before;
    if (changed && bells_on_) {
        note_completion();
    }
    return changed;
}

bool Engine::try_pass() noexcept
{
    std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
    return pass(lk, true);
}

void Engine::dump_if_requested() noexcept
{
    if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
        std::lock_guard<std::mutex> lk(mu_);  // idle or not: the dump must not wait for work
        dump_locked();
    }
}

void Engine::dump_locked() noexcept
{
    g_dump_requested.store(false, std::memory_order_relaxed);
    MPIPCL_LOG(Error,
               "state dump: %zu transfers, %zu active (count %d), %d awaiting a pair, %zu "
               "unexpected Setups, %zu unmatched receives, %zu matched unstarted, %zu control "
               "sends in flight, control receive %s%s, progress thread %s%s",
               handshake_.transfers().size(), active_.size(), active_.count(), handshake_.pending(),
               handshake_.matcher().unexpected_count(), handshake_.matcher().waiting_count(),
               handshake_.matcher().held_count(), ctrl_.sends_in_flight(),
               ctrl_.posted() ? "posted" : "NOT posted", ctrl_awaited_ ? " (awaited)" : "",
               thread_.running() ? "running" : "off",
               handshake_.keeps_failed() ? ", failed transfers kept for late peers" : "");
    ctrl_.dump();
    for (const auto& [id, t] : handshake_.transfers()) {
        char line[768];
        t->describe_locked(line, sizeof line);
        MPIPCL_LOG(Error, "state dump: %s%s", line, t->in_active_list() ? " [active list]" : "");
    }
}

bool Engine::local_send_locked(const Transfer& t) const noexcept
{
    // Handed over: no unit waits for this thread to start it (an rma sender's Puts do).
    if (t.kind() != Kind::Send || t.backend() == nullptr || !t.backend()->sends_handed_over()) {
        return false;
    }
    return !off_node(t);
}

bool Engine::off_node(const Transfer& t) const noexcept
{
    const int peer_node = node_of_world(t.endpoint().peer_world);
    return peer_node < 0 || peer_node != node_;
}

bool Engine::tasks_wait_locked() const noexcept
{
    return std::all_of(tasks_.begin(), tasks_.end(),
                       [](const std::shared_ptr<Task>& t) { return t->waits_on_transfers(); });
}

bool Engine::progress_locked(bool all)
{
    // The control channel costs an MPI_Test (a full MPI progress poll) per pass. An
    // application thread waiting on a paired transfer needs nothing from it — MPI moves the
    // data — so its passes poll it only every kCtrlEvery-th time (an Abort or a new Setup is
    // seen a few microseconds later); passes of the progress thread, passes while a pairing is
    // pending and passes while a transfer awaits a control message, or data that only moves
    // while this process is inside MPI (ctrl_awaited_), poll it every time.
    constexpr unsigned kCtrlEvery = 8;
    const bool poll_ctrl =
        all || ctrl_awaited_ || handshake_.pending() > 0 || ++user_passes_ % kCtrlEvery == 0;
    if (poll_ctrl) {
        ctrl_.receive([this](const CtrlMsg& msg, int src) { handshake_.handle(msg, src); });
    }
    ctrl_.complete_sends();
    bool awaited = false;
    bool local_sends = all && handshake_.pending() == 0;  // only a full pass records it
    bool rung = local_sends;
    active_.advance_all([&](Transfer& t) {
        const bool done = advance_locked(t);
        awaited = awaited || (!done && t.wants_every_pass());
        rung = rung && (done || rung_for_locked(t));
        local_sends = local_sends && (done || local_send_locked(t));
        return done;
    });
    ctrl_awaited_ = awaited;
    wants_polling_.store(awaited, std::memory_order_relaxed);
    rung_ = rung && !awaited;
    return local_sends && !awaited;
}

void Engine::start_thread_locked()
{
    if (!thread_multiple_ || !config().progress_thread) {
        return;
    }
    thread_.start(*this);
}

bool Engine::has_work() const noexcept
{
    return active_.count() > 0 || handshake_.pending() > 0 ||
           tasks_count_.load(std::memory_order_relaxed) > 0;
}

}  // namespace mpipcl::progress
