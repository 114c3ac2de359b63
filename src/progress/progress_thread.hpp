// SPDX-License-Identifier: BSD-3-Clause
// The optional progress thread (MPI_THREAD_MULTIPLE and MPIPCL_PROGRESS_THREAD=1): it makes
// the engine's passes while requests are active or pairing, stands down while an application
// thread drives progress itself, and sleeps on a condition variable when idle (with one pass
// per long idle wait while failed transfers wait to answer late peers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "common/backoff.hpp"
#include "common/futex.hpp"
#include "progress/doorbell.hpp"

namespace mpipcl::progress {

class ProgressThread {
   public:
    /// What the thread drives (the engine).
    class Work {
       public:
        /// A request is active or pairing (lock-free).
        virtual bool has_work() const noexcept = 0;
        /// One full pass unless another thread is in one (try-lock); the engine lock is
        /// released on return. True if something happened.
        virtual bool try_pass() noexcept = 0;
        /// The last full pass found nothing this thread could move or notice soon enough to
        /// matter: every active request is a started send whose receiver moves the data
        /// (Engine's quiet state). Lock-free.
        virtual bool quiet() const noexcept = 0;
        /// The last full pass found only sends to ranks on this node running, on an MPI whose
        /// shared-memory sends need this process's progress (MPICH): the thread mode polls them
        /// at an interval that doubles up to MPIPCL_PROGRESS_POLL_US. Lock-free.
        virtual bool local_sends_only() const noexcept = 0;
        /// Event and offload modes: the last full pass found every running transfer's peer on
        /// this node's doorbells, on an MPI whose receiver there copies the data (nothing this
        /// thread must poll for: the peers ring it). Lock-free.
        virtual bool rung_for_all() const noexcept = 0;
        /// A running transfer moves only while this process is inside MPI (an RMA target on
        /// MPICH) or waits for a control message: the event mode polls it at its shortest
        /// interval. Lock-free.
        virtual bool wants_polling() const noexcept = 0;
        /// Failed transfers are kept whose peers may pair with them later and then wait for
        /// this process's answer, however long it stays out of the library (lock-free).
        virtual bool answers_late_peers() const noexcept = 0;
        /// Logs the state if MPIPCL_DUMP_SIGNAL asked for it (idle or not).
        virtual void dump_if_requested() noexcept = 0;

       protected:
        ~Work() = default;
    };

    /// Event and offload modes, before the first start(): the thread sleeps on @p bell
    /// (main_event) and wake() rings it. @p offload: the application's MPI_Pready* only
    /// queues, so the thread listens to the bell even while an application thread drives
    /// progress.
    void use_doorbell(Doorbells* bell, bool offload) noexcept
    {
        bell_ = bell;
        offload_ = offload;
    }
    /// Starts the thread on @p work unless it runs (caller holds the engine lock).
    void start(Work& work);
    /// Stops and joins the thread; then running() is false.
    void stop();
    /// MPI_Init*: allows a later start().
    void reset_stop();
    /// The thread runs.
    bool running() const { return running_.load(std::memory_order_acquire); }
    /// Thread mode: the thread counts the node as crowded (timed_pass): while an application
    /// thread keeps calling into the library, it stays out of MPI (stand_down_nap).
    bool crowded() const noexcept { return crowded_.load(std::memory_order_relaxed); }
    /// Work was queued: the thread looks soon (a notify only when it is in its long idle wait;
    /// while requests are active it passes every few tens of microseconds).
    void wake() noexcept;
    /// An application thread drives progress itself (every progress call): the thread stands
    /// down. A flag rather than a timestamp: no clock read in the application's wait loops.
    void note_user_progress() noexcept
    {
        // sync: seq_cst, against the thread's deep_sleep_ store then exchange of this (see
        // idle_wait and wake()); otherwise only a hint for the thread to stand down. Stored
        // only when clear: a waiting loop does not write a shared line at every poll.
        if (!user_progressed_.load(std::memory_order_relaxed)) {
            user_progressed_.store(true);
        }
    }

    /// Event and offload modes: an application thread enters (leaves) a sleeping MPI_Wait*.
    /// While one waits, the event mode's thread stands down deaf to the doorbell
    /// (stand_down_event; the offload mode's stays on it); when the last one
    /// leaves, the thread's stand-down ends and it makes one pass: what the waiter's MPI calls
    /// left for later (a rendezvous acknowledgement the peer's send waits for) moves then,
    /// not at the application's next MPI call.
    void wait_begins() noexcept { waits_.fetch_add(1); }
    void wait_ends() noexcept
    {
        // sync: seq_cst, against stand_down_deaf's deaf_ store then waits_ load (Dekker).
        if (waits_.fetch_sub(1) == 1) {
            wait_word_.fetch_add(1);
            if (deaf_.load()) {
                futex_wake(&wait_word_);
            }
        }
    }

   private:
    void main(Work& work);
    /// main_event while an application thread drives progress: stands down (true), or a ring
    /// calls for one pass (false).
    bool stand_down_event(Work& work, std::uint32_t seen);
    /// Event mode, while an application thread waits (wait_begins): sleeps @p ns unless the
    /// last waiter leaves first (then true).
    bool stand_down_deaf(std::int64_t ns) noexcept;
    /// The loop of the event and offload modes: after an event (a pass that changed something,
    /// or a ring) it polls for kEventBurstNs (sleeps growing from 1 us, no yields), then sleeps
    /// on its doorbell: up to the quiet nap when Work::quiet or Work::rung_for_all, else for an
    /// interval that doubles from MPIPCL_PROGRESS_MAX_SLEEP_US up to MPIPCL_PROGRESS_POLL_US
    /// while passes find nothing.
    void main_event(Work& work);
    /// main_event with no work: sleeps on the doorbell up to the idle bound (one pass after it
    /// while failed transfers wait to answer late peers).
    void idle_on_bell(Work& work, std::uint32_t seen);
    bool stopping();
    /// No work: waits until woken or stopped, or until the nap or the idle bound passed. True
    /// for the long wait, false for a stand-down nap (an application thread drives progress).
    bool idle_wait(std::unique_lock<std::mutex>& lk);
    /// Waits on the condition variable (@p lk holds wake_mu_) up to @p d, until stopped or
    /// woken; consumes the wake flag.
    void nap_locked(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d);
    enum class Step : std::uint8_t { Stop, StoodDown, Slept, Pass };
    /// Stop when asked to; with no work, the idle wait (StoodDown or Slept, as idle_wait);
    /// else clears the wake flag (Pass).
    Step next_step(const Work& work);
    /// Work that needs nothing from this thread (Work::quiet): naps MPIPCL_PROGRESS_QUIET_US
    /// unless woken or stopped.
    void quiet_wait();
    /// Thread mode: one pass, then the back-off that fits what it found (@p local_sends while
    /// only sends to this node's ranks run, else @p busy).
    void pass_then_back_off(Work& work, Backoff& busy, Backoff& local_sends);
    /// The nap while an application thread drives progress doubles, up to the stand-down cap.
    void stood_down();
    /// Thread mode, while an application thread drives progress: naps the stand-down time
    /// (kProgressCrowdedStandDownNs on a crowded node, on the condition variable so that
    /// stop() ends it).
    void stand_down_nap();
    /// Thread mode: Work::try_pass, timed: a pass that lasts kProgressSlowPassNs, most of it
    /// off this thread's core, marks the node as crowded; kProgressCrowdedForgetPasses
    /// quicker ones in a row clear the mark.
    bool timed_pass(Work& work);

    std::thread thread_;
    Doorbells* bell_ = nullptr;  ///< event and offload modes (use_doorbell)
    bool offload_ = false;       ///< offload mode (use_doorbell)
    std::atomic<int> waits_{0};  ///< application threads in a sleeping MPI_Wait* (event mode)
    std::atomic<std::uint32_t> wait_word_{0};  ///< futex word: bumped when the last one leaves
    std::atomic<bool> deaf_{false};            ///< the thread sleeps in stand_down_deaf
    /// An application thread called progress() since the thread last looked (it clears the
    /// flag when it looks); while it finds the flag set it stands down, napping
    /// kProgressStandDownFirstNs between looks at first, doubling up to
    /// MPIPCL_PROGRESS_STAND_DOWN_US. Every wake-up takes a core from a polling or computing
    /// thread for a moment, which shows in mpipcl-gbench's Pready/<backend>/threads:16
    /// (docs/benchmarks.md).
    std::atomic<bool> user_progressed_{false};
    std::atomic<bool> running_{false};
    /// The thread is in (or about to enter) its long idle wait or a quiet nap: wake() must
    /// notify.
    std::atomic<bool> deep_sleep_{false};
    std::mutex wake_mu_;
    std::condition_variable wake_cv_;
    bool stop_ = false;       // guarded by wake_mu_
    bool wake_flag_ = false;  // guarded by wake_mu_
    // The thread's own (main() only).
    std::int64_t stand_down_ns_ = 0;
    std::int64_t stand_down_max_ns_ = 0;
    /// Thread mode: a pass of this thread lasted kProgressSlowPassNs (timed_pass), and since
    /// then fewer than kProgressCrowdedForgetPasses quicker ones followed in a row.
    /// Written by the thread only; read by wake() (relaxed, a hint).
    std::atomic<bool> crowded_{false};
    unsigned quick_passes_ = 0;      ///< quicker passes in a row while crowded_
    std::int64_t cpu_mark_ns_ = 0;   ///< the thread's CPU time at the last reading (timed_pass)
    unsigned passes_since_cpu_ = 0;  ///< passes since that reading
};

}  // namespace mpipcl::progress
