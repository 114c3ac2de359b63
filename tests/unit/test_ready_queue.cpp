// SPDX-License-Identifier: BSD-3-Clause
// ReadyQueue: every pushed unit is drained exactly once, by one drainer at a time, also while
// pushers and would-be drainers race (nothing stranded, nothing twice).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/ready_queue.hpp"

using mpipcl::ReadyQueue;

namespace {
std::vector<int> take_all(ReadyQueue& q)
{
    std::vector<int> out;
    int h = -1;
    if (!q.try_begin(&h)) {
        return out;
    }
    do {
        for (; h != -1; h = q.next(h)) {
            out.push_back(h);
        }
    } while (q.next_batch(&h));
    return out;
}
}  // namespace

TEST(ReadyQueue, EmptyQueueHasNothingToDrain)
{
    ReadyQueue q(4);
    int h = 7;
    EXPECT_FALSE(q.pending());
    EXPECT_FALSE(q.try_begin(&h));
    EXPECT_TRUE(take_all(q).empty());
}

TEST(ReadyQueue, DrainsEveryPushedUnitOnce)
{
    ReadyQueue q(8);
    for (int u : {3, 0, 7, 5}) {
        q.push(u);
    }
    EXPECT_TRUE(q.pending());
    std::vector<int> got = take_all(q);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int>{0, 3, 5, 7}));
    EXPECT_FALSE(q.pending());
    EXPECT_TRUE(take_all(q).empty());
}

TEST(ReadyQueue, CountsPushesAcrossDrainsUntilReset)
{
    ReadyQueue q(8);
    EXPECT_EQ(q.pushed(), 0);
    q.push(2);
    q.push(6);
    EXPECT_EQ(q.pushed(), 2);
    EXPECT_EQ(take_all(q).size(), 2u);
    EXPECT_EQ(q.pushed(), 2);  // draining takes units, not the count
    int h = -1;
    q.push(4);
    ASSERT_TRUE(q.try_begin(&h));
    q.push(1);  // while draining
    EXPECT_EQ(q.pushed(), 4);
    while (q.next_batch(&h)) {
    }
    EXPECT_EQ(q.pushed(), 4);
    bool draining = true;
    EXPECT_EQ(q.debug_head(&draining), -1);
    EXPECT_FALSE(draining);
    q.reset();
    EXPECT_EQ(q.pushed(), 0);
}

TEST(ReadyQueue, OnlyOneDrainerAndItTakesWhatArrivesMeanwhile)
{
    ReadyQueue q(8);
    q.push(1);
    int h = -1;
    ASSERT_TRUE(q.try_begin(&h));
    EXPECT_EQ(h, 1);
    EXPECT_EQ(q.next(h), -1);
    q.push(2);  // arrives while draining: a second drainer is refused ...
    int other = -1;
    EXPECT_FALSE(q.try_begin(&other));
    // ... and the current one gets it before it may stop.
    ASSERT_TRUE(q.next_batch(&h));
    EXPECT_EQ(h, 2);
    EXPECT_FALSE(q.next_batch(&h));
    EXPECT_FALSE(q.pending());
    q.push(3);  // after the drain ended anyone may drain again
    EXPECT_EQ(take_all(q), (std::vector<int>{3}));
}

TEST(ReadyQueue, ResetStartsARound)
{
    ReadyQueue q(2);
    q.push(0);
    q.push(1);
    q.reset();
    EXPECT_FALSE(q.pending());
    q.push(1);
    EXPECT_EQ(take_all(q), (std::vector<int>{1}));
}

// Many pushers, each flushing after its push as MPI_Pready does: every unit must be drained
// exactly once per round, and none may remain queued once every pusher has returned (the
// store-buffering hazard of a two-word design would strand one).
TEST(ReadyQueue, ConcurrentPushersAndDrainersLoseNothing)
{
    constexpr int kThreads = 8;
    constexpr int kUnitsPerThread = 64;
    constexpr int kUnits = kThreads * kUnitsPerThread;
    constexpr int kRounds = 300;
    ReadyQueue q(kUnits);
    std::vector<std::atomic<int>> seen(kUnits);
    for (int round = 0; round < kRounds; ++round) {
        q.reset();
        for (auto& s : seen) {
            s.store(0, std::memory_order_relaxed);
        }
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < kUnitsPerThread; ++i) {
                    q.push(t * kUnitsPerThread + i);
                    for (int u : take_all(q)) {
                        seen[u].fetch_add(1, std::memory_order_relaxed);
                    }
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
        ASSERT_FALSE(q.pending()) << "a unit was stranded in round " << round;
        for (int u = 0; u < kUnits; ++u) {
            ASSERT_EQ(seen[u].load(), 1) << "unit " << u << " in round " << round;
        }
    }
}

// seal() (a failed RMA send stops writing): it returns only after a drain running in another
// thread is over, and afterwards nothing pushed is drained until reset().
TEST(ReadyQueue, SealWaitsForTheRunningDrainAndStopsDraining)
{
    ReadyQueue q(8);
    q.push(3);
    int h = -1;
    ASSERT_TRUE(q.try_begin(&h));  // this thread drains
    EXPECT_EQ(h, 3);
    std::atomic<bool> sealed{false};
    std::thread sealer([&] {
        q.seal();
        sealed.store(true);
    });
    q.push(5);  // pushed during the drain: the drainer takes it, not the sealer
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(sealed.load()) << "seal() returned while a drain ran";
    ASSERT_TRUE(q.next_batch(&h));
    EXPECT_EQ(h, 5);
    EXPECT_EQ(q.next(h), -1);
    EXPECT_FALSE(q.next_batch(&h));  // the drain ends; now the sealer takes over
    sealer.join();
    EXPECT_TRUE(sealed.load());
    q.push(1);
    EXPECT_TRUE(q.pending());
    EXPECT_FALSE(q.try_begin(&h)) << "a sealed queue was drained";
    q.reset();
    q.push(2);
    EXPECT_EQ(take_all(q), (std::vector<int>{2}));
}
