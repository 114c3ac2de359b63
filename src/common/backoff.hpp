// SPDX-License-Identifier: BSD-3-Clause
// Back-off for our waiting loops: optionally poll for a few microseconds (the application's
// own waits, where the answer is often that close), then yield the core for a while (cheap
// when nobody else wants it, polite when someone does), then sleep in steps that grow to a
// cap. Never an unbounded busy spin.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace mpipcl {

/// One CPU pause, the spin-wait hint (no system call): the caller's next poll comes a little
/// later, and a sibling hardware thread gets the core's pipeline meanwhile.
inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

class Backoff {
   public:
    /// @p yield_us: how long to keep yielding before the first sleep; @p max_sleep_us: cap;
    /// @p poll_us: how long to poll again at once (a CPU pause, no system call) before the
    /// first yield.
    Backoff(int yield_us, int max_sleep_us, int poll_us = 0)
        : yield_us_(yield_us), max_sleep_us_(max_sleep_us), poll_us_(poll_us)
    {
    }

    /// Something happened: poll eagerly again.
    void reset()
    {
        idle_since_valid_ = false;
        sleep_us_ = 1;
        polls_ = 0;
    }

    void pause()
    {
        // Polling: a CPU pause, then the caller's next poll. The clock is read only every
        // kPollsPerClockRead-th time (a clock read costs as much as the poll itself). The pause
        // leaves the core to threads that share it, which shows in mpipcl-gbench's
        // Pready/<backend>/threads:16 (docs/benchmarks.md).
        if (polling_ && (++polls_ & (kPollsPerClockRead - 1)) != 0) {
            cpu_relax();
            return;
        }
        const auto now = Clock::now();
        if (!idle_since_valid_) {
            idle_since_ = now;
            idle_since_valid_ = true;
        }
        polling_ = now - idle_since_ < std::chrono::microseconds(poll_us_);
        if (polling_) {
            cpu_relax();
            return;
        }
        if (now - idle_since_ < std::chrono::microseconds(yield_us_)) {
            sched_yield();
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        sleep_us_ = std::min(max_sleep_us_, sleep_us_ * 2);
    }

   private:
    using Clock = std::chrono::steady_clock;
    static constexpr unsigned kPollsPerClockRead = 8;
    int yield_us_;
    int max_sleep_us_;
    int poll_us_;
    bool idle_since_valid_ = false;
    Clock::time_point idle_since_;
    int sleep_us_ = 1;
    bool polling_ = false;  ///< the last clock read found the poll phase still running
    unsigned polls_ = 0;
};

/// The application's own waits (MPI_Wait*, Pbuf_prepare): the caller asked to block until
/// data arrives, so it polls and yields the core between polls, as MPI's own MPI_Wait polls
/// (a sleep would cost >= 50 us of timer slack on Linux and hide the arrival). A yielding
/// thread gives way to every other runnable thread, so oversubscribed runs still progress.
/// The first kUserPollUs it polls without yielding: a round trip between two processes is a
/// few microseconds, and a sched_yield costs about one on a VM, so yielding at once would add
/// it to every small message's latency. After that it yields (bounded poll, never a spin).
inline constexpr int kUserPollUs = 20;
inline Backoff user_wait_backoff() { return Backoff(1 << 30, 50, kUserPollUs); }
/// The application's wait while its requests expect two or more pieces more
/// (MPIPCL_WAIT_SLEEP_AFTER_US): no single piece completes them, so after polling and yielding
/// @p yield_us it sleeps between passes (1 us doubling to 50 us, plus the thread's timer
/// slack), and the core is free for the ranks and threads that compute or copy. The pass that
/// finds a request down to its last piece hands over to user_wait_backoff().
inline Backoff user_wait_between_pieces(int yield_us)
{
    return Backoff(std::max(yield_us, kUserPollUs), 50, kUserPollUs);
}

}  // namespace mpipcl
