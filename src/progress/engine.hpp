// SPDX-License-Identifier: BSD-3-Clause
// The progress engine: the private communicator, the engine lock, the progress passes over the
// running transfers (ActiveList) and the control channel (ControlChannel), the pairing protocol
// (Handshake, matching with Matcher), and the optional ProgressThread.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "progress/control_channel.hpp"
#include "progress/doorbell.hpp"
#include "progress/dump_signal.hpp"
#include "progress/handshake.hpp"
#include "progress/progress_thread.hpp"
#include "progress/protocol.hpp"
#include "progress/tags.hpp"
#include "progress/task.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::progress {

class Engine final : private ProgressThread::Work {
   public:
    /// Inline: read on every MPI_Pready and MPI_Parrived.
    static Engine& instance()
    {
        static Engine* engine = new Engine();  // never destroyed: may be used until process exit
        return *engine;
    }

    /// In MPI_Init*: private communicator, error codes, configuration, backend resources.
    void init();
    /// In MPI_Finalize, before PMPI_Finalize (collective): stops the thread, receives every
    /// control message still addressed to this process, frees every internal MPI object (also
    /// those of requests the application never freed).
    void finalize();
    bool initialized() const { return initialized_.load(std::memory_order_acquire); }
    /// MPI calls from threads other than the user's calling thread are allowed.
    bool thread_multiple() const { return thread_multiple_; }
    /// The library's private duplicate of MPI_COMM_WORLD (MPI_ERRORS_RETURN).
    MPI_Comm private_comm() const { return comm_; }

    /// New transfer with a real peer: sends its Setup or queues it for matching.
    void add(const std::shared_ptr<Transfer>& t);
    /// MPI_Start (the request is inactive and nobody else is inside it).
    void start(const std::shared_ptr<Transfer>& t);
    /// MPI_Request_free (inactive, nobody else inside): withdraws it from matching, releases
    /// its backend and data tags.
    void remove(const std::shared_ptr<Transfer>& t);
    /// Keeps @p buf until the process exits: a library buffer that an MPI send of a failed
    /// round may still read. A started send cannot be withdrawn, and a peer that never
    /// received it takes it in MPI_Finalize (the finalize drain), so it lives past that.
    /// Takes @p buf (out of memory: leaks it).
    void keep_until_exit(std::unique_ptr<char[]>& buf) noexcept;
    /// A round of @p task begins (its transfers are started): every progress pass advances it
    /// until it reports done.
    void start_task(const std::shared_ptr<Task>& task);
    /// MPI_Request_free of the task's owner: no pass advances it any more.
    void remove_task(const Task& task);
    /// Engine lock held (a task's pass): fails @p t's pair with @p code as a backend failure
    /// does, telling the peer (at once if paired, else when it answers).
    void abort_locked(Transfer& t, int code) { handshake_.abort(t, code); }

    /// One bounded pass from an application thread. @p wait: take the engine lock even when
    /// another thread holds it (MPI_Test/Wait must see every completed transfer); otherwise
    /// return at once when another thread is in a pass. Returns true if something happened.
    /// Never throws.
    bool progress(bool wait = false) noexcept;
    /// A full pass from an application thread (its MPI calls move every transfer of this
    /// process, also sends whose round is not all started yet), unless another thread is in
    /// one. Returns true if something happened. Never throws.
    bool push() noexcept;
    /// A completion call's pass for one transfer (MPI_Wait/Test on it): advances @p t alone,
    /// so a waiting thread's poll costs one MPI test, not one per active transfer. Every
    /// kFullPassEvery-th call, and whenever a pairing is pending, a transfer awaits a control
    /// message or control sends are in flight, it is a full pass. @p wait_for_lock (MPI_Test*,
    /// and a wait that may sleep on the doorbell next): waits for the engine lock, so that one
    /// MPI_Test sees a round whose data is there as complete; otherwise (a wait loop that
    /// polls again soon) returns at once while another thread is in a pass, rather than sleep
    /// on the lock and pay a wake-up after it.
    /// Returns true if something happened. Never throws.
    bool progress_for(Transfer& t, bool wait_for_lock = true) noexcept;
    /// MPI_Parrived found its partition not arrived (an application thread). In offload mode it
    /// rings the progress thread instead; otherwise it drives progress,
    /// so that a loop of Parrived calls terminates without a progress thread, except while
    /// another thread (the progress thread, or an application thread) is in a pass: then the
    /// call costs one atomic load, and that pass publishes what it finds through the backends'
    /// arrival flags, which the caller's next poll reads. After kParrivedEagerMisses misses in
    /// a row by this thread it backs off (config.hpp): a CPU pause per miss, progress every
    /// kParrivedDriveEvery-th miss, a yield of the core every kParrivedYieldEvery-th.
    [[gnu::always_inline]] void parrived_missed() noexcept
    {
        const unsigned misses = ++t_parrived_misses_;
        if (misses > kParrivedEagerMisses) {
            cpu_relax();
            if ((misses & (kParrivedYieldEvery - 1)) == 0) {
                sched_yield();
            }
            if ((misses & (kParrivedDriveEvery - 1)) != 0) {
                return;
            }
        }
        if (offloads_ready()) {
            wake();  // offload mode: only the progress thread calls MPI; it looks now
            return;
        }
        // sync: relaxed, a hint: a pass that ends just after this load is missed for one poll.
        if (!passing_.load(std::memory_order_relaxed)) {
            progress();
        }
    }
    /// MPI_Parrived found its partition arrived: this thread's next miss is eager again.
    [[gnu::always_inline]] static void parrived_hit() noexcept
    {
        if (t_parrived_misses_ != 0) {
            t_parrived_misses_ = 0;
        }
    }
    std::uint64_t next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
    /// The progress thread runs (MPI_THREAD_MULTIPLE and MPIPCL_PROGRESS_THREAD=1).
    bool progress_thread_running() const { return thread_.running(); }
    /// The progress thread counts the node as crowded (ProgressThread::crowded).
    bool progress_thread_crowded() const noexcept { return thread_.crowded(); }
    /// No progress thread drives this process's transfers now: the caller mode, or the thread
    /// mode's thread on a crowded node, which stands down while the application calls in.
    bool caller_drives() const noexcept { return !thread_.running() || thread_.crowded(); }
    /// @p t's peer runs on another node (or its node is unknown).
    bool off_node(const Transfer& t) const noexcept;
    /// Work was queued for the progress thread: it looks soon (a notify only when it is in its
    /// long idle wait; while requests are active it passes every few tens of microseconds).
    void nudge() noexcept { wake(); }

    // The event and offload modes (docs/design.md, "Progress modes").

    /// MPI_Pready* only queues; the progress thread issues the MPI calls (offload mode, with
    /// the thread running).
    bool offloads_ready() const noexcept { return offload_ && thread_.running(); }
    /// MPI_Wait* on a partitioned request sleeps on the doorbell between its passes (event
    /// and offload modes, with the thread running).
    bool waits_sleep() const noexcept { return bells_on_ && thread_.running(); }
    /// An application thread enters (leaves) a sleeping MPI_Wait* (ProgressThread::wait_begins).
    void wait_begins() noexcept { thread_.wait_begins(); }
    void wait_ends() noexcept { thread_.wait_ends(); }
    /// A sleeping MPI_Wait* polls for kEventBurstNs after each ring (event mode; offload waits
    /// sleep throughout).
    bool waits_poll_after_rings() const noexcept { return !offload_; }
    /// An application thread's MPI_Pready* issued @p t's units itself: rings the receiver's
    /// doorbell (its thread lands them) and, unless the receiver copies the data on this node,
    /// this process's (its thread sees the sends through).
    void issued(const Transfer& t) noexcept
    {
        if (bells_on_) {
            const int peer = t.endpoint().peer_world;
            bells_.ring(peer);
            if (!(kOnNodeReceiverCopies && bells_.reaches(peer))) {
                wake();
            }
        }
    }
    /// This process's doorbell count: read it before the pass that found the request
    /// incomplete, then await_ring.
    std::uint32_t rings() const noexcept { return bells_.rings(); }
    /// A waiting MPI_Wait*: sleeps on this process's doorbell until it rings after @p seen was
    /// read (a peer moved something, or a pass completed something) or the bound passes:
    /// kAwaitCompletionNs while every running transfer's peer rings (Work::rung_for_all) or
    /// the quiet state holds, and no transfer wants polling (Transfer::wants_every_pass), else
    /// MPIPCL_PROGRESS_MAX_SLEEP_US. The caller then makes its own pass: one wake-up between a
    /// peer's data and the waiter, not two (peer to progress thread to waiter).
    void await_ring(std::uint32_t seen) noexcept;

   private:
    using TransferPtr = std::shared_ptr<Transfer>;
    Engine() = default;

    // ProgressThread::Work (the progress thread's calls).
    bool has_work() const noexcept override;
    bool try_pass() noexcept override;
    bool quiet() const noexcept override { return quiet_.load(std::memory_order_relaxed); }
    bool local_sends_only() const noexcept override
    {
        return local_sends_only_.load(std::memory_order_relaxed);
    }
    bool rung_for_all() const noexcept override
    {
        return rung_for_all_.load(std::memory_order_relaxed);
    }
    bool wants_polling() const noexcept override
    {
        return wants_polling_.load(std::memory_order_relaxed);
    }
    bool answers_late_peers() const noexcept override { return handshake_.keeps_failed(); }
    void dump_if_requested() noexcept override;

    /// @p all: also poll the control channel (see progress_locked).
    bool pass(std::unique_lock<std::mutex>& lk, bool all) noexcept;
    /// Logs the engine's and every transfer's state (MPIPCL_DUMP_SIGNAL).
    void dump_locked() noexcept;
    /// MPI_Finalize: answers control messages until every process has entered it.
    void answer_until_all_finalize_locked() noexcept;
    /// Returns whether every running transfer left is a send to this node (local_send_locked);
    /// a full pass (@p all) records rung_for_all_.
    bool progress_locked(bool all);
    /// Running transfer @p t's peer rings this process whenever it moves something
    /// (Engine::rung_for_all).
    bool rung_for_locked(const Transfer& t) const noexcept
    {
        return kOnNodeReceiverCopies && bells_on_ && bells_.reaches(t.endpoint().peer_world);
    }
    /// Running transfer @p t is a send with no unit waiting to be started
    /// (Backend::sends_handed_over; a Pready starts its own units, so also before the first
    /// Pready) to a peer on this node. On an MPI whose receiver there copies the data
    /// (kOnNodeReceiverCopies) it needs nothing more from this process but the notice that it
    /// completed (Work::quiet); elsewhere its sends need this process's progress only now and
    /// then (Work::local_sends_only).
    bool local_send_locked(const Transfer& t) const noexcept;
    /// Every running task waits on its transfers (Task::waits_on_transfers).
    bool tasks_wait_locked() const noexcept;
    /// Advances every running task; takes those that are done off the list.
    void advance_tasks_locked() noexcept;
    /// Advances running transfer @p t; a backend failure fails the pair (and tells the peer).
    /// True once its round is complete (or failed). With doorbells it rings the peer before
    /// issuing queued units and when the round ends.
    bool advance_locked(Transfer& t);
    void remove_locked(const TransferPtr& t);
    void start_thread_locked();
    /// MPI_Init*: the doorbells and sleeping waits of the event and offload modes (collective).
    void init_progress_mode();
    void wake() noexcept { thread_.wake(); }
    /// A pass completed (or failed) something: rings this process's doorbell, which wakes the
    /// sleeping waiters (waits_sleep).
    void note_completion() noexcept { bells_.ring_self(); }
    static bool units_queued(const Transfer& t) noexcept
    {
        return t.backend() != nullptr && t.backend()->units_queued();
    }
    /// Transfer @p t's round completed in a pass, or the pass issued its queued units: its
    /// peer's thread looks (it lands the data, or sees its side through).
    void ring_peer(const Transfer& t) noexcept
    {
        if (bells_on_) {
            bells_.ring(t.endpoint().peer_world);
        }
    }

    /// A thread holds the engine lock for a pass (parrived_missed reads it lock-free).
    std::atomic<bool> passing_{false};
    /// The last full pass found every running transfer a local send (local_send_locked) on an
    /// MPI whose receiver copies (kOnNodeReceiverCopies), every task waiting on them, no pairing
    /// pending and no control message to send: the progress thread naps
    /// (ProgressThread::Work::quiet).
    std::atomic<bool> quiet_{false};
    /// The last full pass found only sends to this node's ranks running, every task waiting
    /// on them, nothing else to do (ProgressThread::Work::local_sends_only).
    std::atomic<bool> local_sends_only_{false};
    /// The last full pass found every running transfer rung for (ProgressThread::Work).
    std::atomic<bool> rung_for_all_{false};
    /// ctrl_awaited_ for lock-free readers (ProgressThread::Work::wants_polling).
    std::atomic<bool> wants_polling_{false};
    /// This thread's MPI_Parrived misses in a row (parrived_missed / parrived_hit).
    static inline thread_local unsigned t_parrived_misses_
        __attribute__((tls_model("initial-exec"))) = 0;

    std::atomic<bool> initialized_{false};
    bool thread_multiple_ = false;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int node_ = -1;  ///< this process's node (progress::node_of_world)
    std::atomic<std::uint64_t> next_id_{1};

    std::mutex kept_mu_;
    std::vector<std::unique_ptr<char[]>> kept_;  ///< keep_until_exit's buffers, never freed
    std::mutex mu_;  // the progress-queue lock: guards the members from here to handshake_
    /// An active transfer waits for a control message (an RMA sender for its Ready), or for
    /// data that moves only while this process is inside MPI (an RMA receiver, a windowed
    /// receiver whose last pass moved something: Backend::wants_mpi_progress): poll the
    /// control channel on every pass.
    bool ctrl_awaited_ = false;
    /// The last progress_locked found every running transfer rung for (rung_for_locked).
    bool rung_ = false;
    unsigned user_passes_ = 0;
    unsigned for_passes_ = 0;  ///< progress_for() calls (a full pass every kFullPassEvery-th)
    ControlChannel ctrl_;
    ActiveList active_;
    /// Running tasks; tasks_count_ mirrors tasks_.size() for lock-free readers (has_work).
    std::vector<std::shared_ptr<Task>> tasks_;
    std::atomic<int> tasks_count_{0};
    TagAllocator tags_;
    Handshake handshake_{ctrl_, active_, tags_};

    // Not guarded by mu_: set at init/finalize, and the thread's own synchronization.
    DumpSignal dump_signal_;
    bool bells_on_ = false;  ///< event or offload mode: doorbells and sleeping waits
    bool offload_ = false;   ///< offload mode
    Doorbells bells_;
    ProgressThread thread_;
};

/// A Pready call queued backend work on @p t (MPI_THREAD_MULTIPLE): issues it from this thread,
/// or, when the backend's work is long and a progress thread runs, leaves it to that thread.
/// Returns whether this thread should then push (Engine::push): a send to another node moves
/// only while this process is inside MPI, and no progress thread drives it now (the caller
/// mode, or the crowded thread standing down), so the Pready caller's pass moves what the
/// earlier Preadys started.
[[nodiscard]] inline bool issue_queued_work(Transfer& t) noexcept
{
    Engine& engine = Engine::instance();
    // On a crowded node the thread stays out while the application calls in (docs/design.md,
    // "Progress modes"): the Pready caller issues the work itself, as in the caller mode.
    if ((t.flush_in_background() || engine.offloads_ready()) && engine.progress_thread_running() &&
        !engine.progress_thread_crowded()) {
        engine.nudge();
        return false;
    }
    t.flush();
    engine.issued(t);
    return engine.caller_drives() && engine.off_node(t);
}

/// issue_queued_work on every transfer of @p transfers (shared pointers): whether any asks for
/// a push (one push then moves them all).
template <class Transfers>
[[nodiscard]] bool issue_queued_all(const Transfers& transfers) noexcept
{
    bool push = false;
    for (const auto& t : transfers) {
        push = issue_queued_work(*t) || push;
    }
    return push;
}

/// issue_queued_work, then the push it asks for.
inline void issue_queued(Transfer& t) noexcept
{
    if (issue_queued_work(t)) {
        Engine::instance().push();
    }
}

}  // namespace mpipcl::progress
