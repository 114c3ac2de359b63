// SPDX-License-Identifier: BSD-3-Clause
// The progress thread's rule for a crowded node (thread mode), on a real thread: a pass that
// lasts kProgressSlowPassNs mostly off the thread's core marks the node as crowded, one that
// computes as long does not; while crowded, the thread makes no pass as long as the
// application keeps calling in (wake(), as MPI_Start does), looks again once it stops, and
// kProgressCrowdedForgetPasses quick passes clear the mark. stop() ends the long nap.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include "common/config.hpp"
#include "progress/progress_thread.hpp"

namespace {

using mpipcl::progress::ProgressThread;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::int64_t thread_cpu_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::int64_t since_ns(Clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}

/// What the thread drives: always work; the next slow_left passes last kSlowNs, sleeping or
/// computing; every pass reports @c moved.
class TestWork final : public ProgressThread::Work {
   public:
    static constexpr std::int64_t kSlowNs = 2 * mpipcl::kProgressSlowPassNs;
    enum class Slow { Sleeps, Computes };

    Slow slow = Slow::Sleeps;
    std::atomic<int> slow_left{0};
    std::atomic<bool> moved{false};
    std::atomic<long> passes{0};
    /// The last computing slow pass kept its core for more than half its wall time (by a
    /// margin: under 1.8x its CPU time), so that the rule must not count it.
    std::atomic<bool> kept_core{false};

    bool has_work() const noexcept override { return true; }
    bool try_pass() noexcept override
    {
        if (slow_left.load() > 0) {
            if (slow == Slow::Sleeps) {
                std::this_thread::sleep_for(std::chrono::nanoseconds(kSlowNs));
            } else {
                const auto begin = Clock::now();
                const std::int64_t cpu0 = thread_cpu_ns();
                while (thread_cpu_ns() - cpu0 < kSlowNs) {
                }
                kept_core.store(since_ns(begin) * 5 < (thread_cpu_ns() - cpu0) * 9);
            }
            slow_left.fetch_sub(1);
        }
        passes.fetch_add(1);
        return moved.load();
    }
    bool quiet() const noexcept override { return false; }
    bool local_sends_only() const noexcept override { return false; }
    bool rung_for_all() const noexcept override { return false; }
    bool wants_polling() const noexcept override { return false; }
    bool answers_late_peers() const noexcept override { return false; }
    void dump_if_requested() noexcept override {}
};

/// A thread and what it drives; the thread is stopped (joined) before either goes, also when
/// an assertion returns early.
struct Running {
    TestWork work;
    ProgressThread thread;
    Running() = default;
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    ~Running() { thread.stop(); }
};

/// Waits up to @p limit for @p cond.
template <class F>
bool eventually(F cond, std::chrono::milliseconds limit)
{
    const auto end = Clock::now() + limit;
    while (!cond()) {
        if (Clock::now() > end) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

/// Starts @p thread on @p work and makes it count the node as crowded (one pass that sleeps).
void make_crowded(ProgressThread& thread, TestWork& work)
{
    work.slow = TestWork::Slow::Sleeps;
    work.slow_left.store(1);
    thread.start(work);
    ASSERT_TRUE(eventually([&] { return work.slow_left.load() == 0 && work.passes > 1; }, 5s));
    ASSERT_TRUE(thread.crowded());
}

/// Passes the thread makes in @p span while the application calls in every 5 ms.
long passes_while_calling(ProgressThread& thread, TestWork& work, std::chrono::milliseconds span)
{
    // The first call stands the thread down at its next look.
    thread.wake();
    std::this_thread::sleep_for(20ms);
    const long before = work.passes.load();
    const auto end = Clock::now() + span;
    while (Clock::now() < end) {
        thread.wake();
        std::this_thread::sleep_for(5ms);
    }
    return work.passes.load() - before;
}

TEST(ProgressCrowded, PassOffItsCoreMarksTheNode)
{
    Running setup;
    ProgressThread& thread = setup.thread;
    TestWork& work = setup.work;
    make_crowded(thread, work);
    thread.stop();
}

TEST(ProgressCrowded, PassThatComputesDoesNotMarkTheNode)
{
    // A pass that computes for as long keeps its core unless the machine is loaded: tried
    // (for up to 4 s) until one did.
    bool judged = false;
    for (int attempt = 0; attempt < 40 && !judged; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * (attempt % 2)));
        Running setup;
        ProgressThread& thread = setup.thread;
        TestWork& work = setup.work;
        work.slow = TestWork::Slow::Computes;
        work.slow_left.store(1);
        thread.start(work);
        ASSERT_TRUE(eventually([&] { return work.slow_left.load() == 0 && work.passes > 1; }, 5s));
        thread.stop();
        if (work.kept_core.load()) {
            EXPECT_FALSE(thread.crowded());
            judged = true;
        }
    }
    EXPECT_TRUE(judged) << "every computing pass lost its core (machine loaded)";
}

TEST(ProgressCrowded, NoPassWhileTheApplicationCallsIn)
{
    Running setup;
    ProgressThread& thread = setup.thread;
    TestWork& work = setup.work;
    make_crowded(thread, work);
    // Several of the thread's long naps: it keeps finding the application's calls.
    const long crowded_passes = passes_while_calling(thread, work, 400ms);
    EXPECT_LT(crowded_passes, 20);
    // Once the calls stop it looks again within a nap.
    const long before = work.passes.load();
    EXPECT_TRUE(eventually([&] { return work.passes.load() > before + 10; }, 2s));
    EXPECT_TRUE(thread.crowded());
    thread.stop();
}

TEST(ProgressCrowded, UncrowdedThreadKeepsPassing)
{
    // The control: the same calls do not stand an uncrowded thread down (MPI_Start's wake()
    // is not the application driving progress).
    Running setup;
    ProgressThread& thread = setup.thread;
    TestWork& work = setup.work;
    thread.start(work);
    const long passes = passes_while_calling(thread, work, 400ms);
    EXPECT_GT(passes, 100);
    EXPECT_FALSE(thread.crowded());
    thread.stop();
}

TEST(ProgressCrowded, QuickPassesClearTheMark)
{
    Running setup;
    ProgressThread& thread = setup.thread;
    TestWork& work = setup.work;
    make_crowded(thread, work);
    const long before = work.passes.load();
    work.moved.store(true);  // no back-off between passes
    EXPECT_TRUE(eventually([&] { return !thread.crowded(); }, 20s));
    EXPECT_GE(work.passes.load() - before, long{mpipcl::kProgressCrowdedForgetPasses});
    thread.stop();
}

TEST(ProgressCrowded, StopEndsTheLongNap)
{
    std::int64_t quickest = INT64_MAX;
    for (int i = 0; i < 3; ++i) {
        Running setup;
        ProgressThread& thread = setup.thread;
        TestWork& work = setup.work;
        make_crowded(thread, work);
        thread.wake();  // the application calls in: the thread takes its long nap
        std::this_thread::sleep_for(5ms);
        const auto begin = Clock::now();
        thread.stop();
        quickest = std::min(quickest, since_ns(begin));
    }
    EXPECT_LT(quickest, mpipcl::kProgressCrowdedStandDownNs / 2);
}

}  // namespace
