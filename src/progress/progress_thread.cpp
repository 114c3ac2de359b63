// SPDX-License-Identifier: BSD-3-Clause
// The progress thread: its loop, its timers, and its wake-up.
#include "progress/progress_thread.hpp"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "common/backend.hpp"
#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/log.hpp"

namespace mpipcl::progress {

void ProgressThread::start(Work& work)
{
    if (thread_.joinable()) {
        return;
    }
    Work* w = &work;
    thread_ = std::thread([this, w] {
        t_drains = true;  // nobody looks at the arrivals between this thread's steps
        main(*w);
    });
    running_.store(true, std::memory_order_release);
}

void ProgressThread::stop()
{
    {
        std::lock_guard<std::mutex> lk(wake_mu_);
        stop_ = true;
    }
    wake_cv_.notify_all();
    if (bell_ != nullptr) {
        bell_->ring_self();
    }
    if (thread_.joinable()) {
        thread_.join();
    }
    running_.store(false, std::memory_order_release);
}

void ProgressThread::reset_stop()
{
    std::lock_guard<std::mutex> lk(wake_mu_);
    stop_ = false;
}

void ProgressThread::stood_down()
{
    stand_down_ns_ = std::min(stand_down_ns_ * 2, stand_down_max_ns_);
}

void ProgressThread::nap_locked(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d)
{
    wake_cv_.wait_for(lk, d, [&] { return stop_ || wake_flag_; });
    wake_flag_ = false;
}

bool ProgressThread::idle_wait(std::unique_lock<std::mutex>& lk)
{
    // Idle: sleep until a request appears (bounded, so nothing is ever missed). While an
    // application thread drives progress itself (a tight loop of Start and Wait), nap only
    // the stand-down time and let wake() skip its notify: a futex wake-up per MPI_Start would
    // cost the application a context switch.
    // sync: seq_cst store then load, mirrored in wake(): either we see the recent user
    // progress (and nap briefly) or wake() sees deep_sleep_ (and notifies).
    deep_sleep_.store(true);
    const bool user_active = user_progressed_.exchange(false);
    if (user_active) {
        deep_sleep_.store(false, std::memory_order_relaxed);
    }
    nap_locked(lk, std::chrono::nanoseconds(user_active ? stand_down_ns_ : kProgressIdleWaitNs));
    deep_sleep_.store(false, std::memory_order_relaxed);
    if (user_active) {
        stood_down();
    } else {
        stand_down_ns_ = kProgressStandDownFirstNs;
    }
    return !user_active;
}

void ProgressThread::quiet_wait()
{
    // On the condition variable, not a plain sleep, and marked as a deep sleep so that wake()
    // always notifies: MPI_Start, a new request or a Pready that leaves work to this thread
    // ends the nap at once.
    std::unique_lock<std::mutex> lk(wake_mu_);
    deep_sleep_.store(true);
    nap_locked(lk, std::chrono::microseconds(config().progress_quiet_us));
    deep_sleep_.store(false, std::memory_order_relaxed);
}

ProgressThread::Step ProgressThread::next_step(const Work& work)
{
    std::unique_lock<std::mutex> lk(wake_mu_);
    if (stop_) {
        return Step::Stop;
    }
    if (!work.has_work()) {
        const bool slept = idle_wait(lk);
        if (stop_) {
            return Step::Stop;
        }
        return slept ? Step::Slept : Step::StoodDown;
    }
    wake_flag_ = false;
    return Step::Pass;
}

void ProgressThread::main(Work& work)
{
    // Yield briefly after each event (the next one often follows), then sleep up to the cap.
    // Our own thread: a 1 ns timer slack makes those short sleeps last what they say.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    // Named, so that top -H, perf and mpipcl-bench (its progress-thread CPU columns) find it.
    pthread_setname_np(pthread_self(), kProgressThreadName);
    // The stand-down nap doubles while the application keeps driving progress itself (each
    // wake-up costs a polling application thread its core for a moment).
    stand_down_max_ns_ = std::max<std::int64_t>(
        kProgressStandDownFirstNs, std::int64_t{config().progress_stand_down_us} * 1000);
    stand_down_ns_ = kProgressStandDownFirstNs;
    if (bell_ != nullptr) {
        main_event(work);
        return;
    }
    Backoff busy(kProgressYieldUs, config().progress_max_sleep_us);
    // Sends to ranks of this node on MPICH: its shared-memory path needs the sender's progress
    // only now and then (a poll every 50 us took 10-30 % of a computing core).
    Backoff local_sends(0, std::max(config().progress_max_sleep_us, config().progress_poll_us));
    for (;;) {
        work.dump_if_requested();
        const Step step = next_step(work);
        if (step == Step::Stop) {
            return;
        }
        if (step == Step::StoodDown || step == Step::Slept) {
            busy.reset();
            local_sends.reset();
            // Failed transfers wait to answer peers that pair with them late: after each long
            // idle wait the control channel is read, also while the application stays out of
            // the library (blocked in a plain MPI call that waits for such a peer, say). While
            // the application drives progress, its own passes read it.
            if (step == Step::Slept && work.answers_late_peers()) {
                work.try_pass();
            }
            continue;
        }
        // While an application thread is driving progress itself (waiting in MPI_Wait*, or
        // polling MPI_Parrived/MPI_Test), stay out of MPI: two threads polling one MPI library
        // only fight over its lock (MPICH: 10x slower transfers on 2 cores).
        // sync: relaxed, a hint (the Dekker pair with wake() is in idle_wait).
        if (user_progressed_.exchange(false, std::memory_order_relaxed)) {
            stand_down_nap();
            stood_down();
            busy.reset();
            local_sends.reset();
            continue;
        }
        stand_down_ns_ = kProgressStandDownFirstNs;
        pass_then_back_off(work, busy, local_sends);
    }
}

void ProgressThread::stand_down_nap()
{
    if (!crowded_.load(std::memory_order_relaxed)) {
        // Sleep, not yield: on a shared core every wake-up costs the polling thread.
        std::this_thread::sleep_for(std::chrono::nanoseconds(stand_down_ns_));
        return;
    }
    // Crowded: a pass of this thread while the application's threads poll may lose its core
    // for tens or hundreds of milliseconds with the engine lock held, and they wait for it.
    // Not a deep sleep, and wake() counts as the application's call: only stop() ends the nap
    // early (on the condition variable). When it runs out the thread passes if the application
    // made no call into the library meanwhile.
    std::unique_lock<std::mutex> lk(wake_mu_);
    nap_locked(lk, std::chrono::nanoseconds(kProgressCrowdedStandDownNs));
}

namespace {

std::int64_t thread_cpu_ns() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

bool ProgressThread::timed_pass(Work& work)
{
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    const bool moved = work.try_pass();
    const std::int64_t wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - begin).count();
    // The thread's CPU time is a system call: it is read after a slow pass, and every
    // kProgressCpuSampleEvery-th pass so that the interval since the last reading stays
    // short. A slow pass that used less CPU than half its wall time, counting all the CPU
    // since that reading, spent most of it off its core: the node is crowded. A pass that
    // copies data for as long uses the CPU and does not count.
    if (wall >= kProgressSlowPassNs) {
        const std::int64_t cpu = thread_cpu_ns();
        if (cpu - cpu_mark_ns_ < wall / 2) {
            if (!crowded_.load(std::memory_order_relaxed)) {
                MPIPCL_LOG(Debug,
                           "progress thread: a pass took %.1f ms with at most %.2f ms on a "
                           "core; the node counts as crowded",
                           static_cast<double>(wall) / 1e6,
                           static_cast<double>(cpu - cpu_mark_ns_) / 1e6);
            }
            crowded_.store(true, std::memory_order_relaxed);
            quick_passes_ = 0;
        }
        cpu_mark_ns_ = cpu;
        passes_since_cpu_ = 0;
        return moved;
    }
    if (crowded_.load(std::memory_order_relaxed) &&
        ++quick_passes_ >= kProgressCrowdedForgetPasses) {
        crowded_.store(false, std::memory_order_relaxed);
        MPIPCL_LOG(Debug, "progress thread: %u quick passes; the node no longer counts as crowded",
                   quick_passes_);
    }
    if (++passes_since_cpu_ >= kProgressCpuSampleEvery) {
        cpu_mark_ns_ = thread_cpu_ns();
        passes_since_cpu_ = 0;
    }
    return moved;
}

void ProgressThread::pass_then_back_off(Work& work, Backoff& busy, Backoff& local_sends)
{
    // try_pass() releases the engine lock before the back-off below: an application thread
    // in MPI_Wait/MPI_Test (progress_for) blocks on it, and would otherwise wait out the
    // whole sleep.
    // A pass that found only sends whose receivers move the data (Work::quiet) leaves the
    // thread nothing to do but notice their completion: it looks again only after a long
    // nap, and the cores stay with the processes that copy (a partitioned bcast's root on
    // a node with more ranks than cores).
    if (timed_pass(work)) {
        busy.reset();
        local_sends.reset();
    } else if (config().progress_quiet_us > 0 && work.quiet()) {
        quiet_wait();
    } else if (work.local_sends_only()) {
        local_sends.pause();
    } else {
        busy.pause();
    }
}

bool ProgressThread::stopping()
{
    std::lock_guard<std::mutex> lk(wake_mu_);
    return stop_;
}

void ProgressThread::idle_on_bell(Work& work, std::uint32_t seen)
{
    bell_->sleep(seen, kProgressIdleWaitNs);
    // As in main(): failed transfers wait to answer peers that pair with them late.
    if (bell_->rings() == seen && work.answers_late_peers()) {
        work.try_pass();
    }
}

void ProgressThread::main_event(Work& work)
{
    using Clock = std::chrono::steady_clock;
    const std::int64_t min_ns = std::int64_t{std::max(1, config().progress_max_sleep_us)} * 1000;
    const std::int64_t max_ns = std::max(min_ns, std::int64_t{config().progress_poll_us} * 1000);
    const std::int64_t quiet_ns = std::int64_t{config().progress_quiet_us} * 1000;
    // No yields: on a core that computes, a yield hands the core over only for a moment and
    // is back at once, and on an idle one it spins.
    Backoff busy(0, config().progress_max_sleep_us);
    std::int64_t interval = min_ns;
    auto last_event = Clock::now();
    for (;;) {
        work.dump_if_requested();
        if (stopping()) {
            return;
        }
        // Read before the pass: a ring after this read ends the sleep below at once.
        const std::uint32_t seen = bell_->rings();
        if (!work.has_work()) {
            idle_on_bell(work, seen);
            last_event = Clock::now();
            continue;
        }
        // An application thread drives progress itself: stay out of MPI, as in main().
        // sync: relaxed, a hint.
        if (user_progressed_.exchange(false, std::memory_order_relaxed) &&
            stand_down_event(work, seen)) {
            continue;
        }
        stand_down_ns_ = kProgressStandDownFirstNs;
        const auto now = Clock::now();
        if (work.try_pass()) {
            last_event = now;
            interval = min_ns;
            busy.reset();
            continue;
        }
        if (now - last_event < std::chrono::nanoseconds(kEventBurstNs)) {
            busy.pause();  // the burst after an event: the next one often follows
            continue;
        }
        const bool quiet = quiet_ns > 0 && (work.quiet() || work.rung_for_all());
        bell_->sleep(seen, quiet ? quiet_ns : interval);
        if (bell_->rings() != seen) {
            last_event = Clock::now();  // rung: something to look at, a burst follows
            interval = min_ns;
            busy.reset();
        } else if (!quiet && !work.wants_polling()) {
            interval = std::min(max_ns, interval * 2);
        }
    }
}

bool ProgressThread::stand_down_event(Work& work, std::uint32_t seen)
{
    // - Event mode, while an application thread waits in MPI_Wait*: deaf to the bell. A ring
    //   wakes the waiter itself, and a thread woken with it would only take the engine lock
    //   from the waiter's pass (and a core: on Open MPI, 4 MiB, --compute work, ~45 us a
    //   round); what a ring announced for another request waits for the waiter's full pass
    //   (every eighth) or the end of the stand-down, as in the thread mode. The last waiter's
    //   leaving ends the stand-down with one pass (wait_ends).
    // - Otherwise (the application polls MPI_Parrived or MPI_Test) on the bell, and a ring
    //   gets one pass: the application's passes may be for its own request only
    //   (progress_for), and what the ring announced may be another's; in the offload mode
    //   only this thread issues what MPI_Pready* queued.
    // sync: relaxed, a hint (stand_down_deaf re-checks it).
    if (!offload_ && waits_.load(std::memory_order_relaxed) > 0) {
        if (stand_down_deaf(stand_down_ns_)) {
            work.try_pass();  // the last waiter left
        } else {
            stood_down();
        }
        return true;
    }
    bell_->sleep(seen, stand_down_ns_);
    if (bell_->rings() == seen) {
        stood_down();
        return true;
    }
    return false;  // rung: one pass
}

bool ProgressThread::stand_down_deaf(std::int64_t ns) noexcept
{
    const std::uint32_t w = wait_word_.load();
    // sync: seq_cst store then load, against wait_ends' decrement then deaf_ load (Dekker):
    // either this sees no waiter left, or wait_ends sees deaf_ and wakes the sleep below.
    deaf_.store(true);
    if (waits_.load() > 0) {
        futex_wait(&wait_word_, w, ns);
    }
    deaf_.store(false);
    return wait_word_.load() != w;
}

void ProgressThread::wake() noexcept
{
    if (!running_.load(std::memory_order_acquire)) {
        return;
    }
    if (bell_ != nullptr) {
        bell_->ring_self();
        return;
    }
    // On a crowded node the application's every call into the library counts as driving
    // progress: the thread stays out of MPI while the application comes back every iteration.
    // sync: relaxed, a hint.
    if (crowded_.load(std::memory_order_relaxed)) {
        note_user_progress();
    }
    // An application thread drove progress since the thread last looked, and the thread is
    // neither in its long wait nor in a quiet nap: it looks again within the stand-down time
    // by itself (see main).
    // sync: seq_cst loads after the seq_cst store in note_user_progress() (Dekker).
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
