// SPDX-License-Identifier: BSD-3-Clause
// ReadyCounter: one bit per partition per unit; duplicates, unit completion (also for units
// of more than 64 partitions), resets between rounds, and racing markers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "common/ready_counter.hpp"

using mpipcl::Marked;
using mpipcl::ReadyCounter;
using mpipcl::ReadyQueue;

namespace {
/// Units of the given sizes, as part_begin.
std::vector<int> units_of(const std::vector<int>& sizes)
{
    std::vector<int> begin{0};
    for (int s : sizes) {
        begin.push_back(begin.back() + s);
    }
    return begin;
}

/// Marks every partition in @p order; returns the units in completion order and checks that
/// each completes exactly at its last partition.
std::vector<int> mark_all(ReadyCounter& c, const std::vector<int>& begin,
                          const std::vector<int>& order)
{
    std::vector<int> left(begin.size() - 1);
    for (std::size_t u = 0; u + 1 < begin.size(); ++u) {
        left[u] = begin[u + 1] - begin[u];
    }
    std::vector<int> completed;
    for (int p : order) {
        int u = -1;
        const ReadyCounter::Mark m = c.mark(p, &u);
        EXPECT_GE(p, begin[u]);
        EXPECT_LT(p, begin[u + 1]);
        EXPECT_NE(m, ReadyCounter::Mark::Duplicate) << "partition " << p;
        --left[u];
        EXPECT_EQ(m == ReadyCounter::Mark::Completed, left[u] == 0) << "partition " << p;
        if (m == ReadyCounter::Mark::Completed) {
            completed.push_back(u);
        }
    }
    return completed;
}
}  // namespace

/// Unit layouts: sizes around the 64-bit word boundaries, single partitions and a big unit
/// (tabled), and units of one power-of-two length, more than 256 of them too (computed).
namespace {
std::vector<std::vector<int>> layouts(const std::vector<int>& tabled)
{
    return {units_of(tabled),
            units_of(std::vector<int>(300, 1)),
            units_of({2, 2, 2, 2, 2}),
            units_of({64, 64, 64, 64}),
            units_of({128, 128, 128}),
            units_of(std::vector<int>(260, 4)),
            units_of({1})};
}
}  // namespace

TEST(ReadyCounter, CompletesEachUnitAtItsLastPartitionInAnyOrder)
{
    for (const std::vector<int>& begin : layouts({1, 63, 64, 65, 128, 129, 3, 1000})) {
        ReadyCounter c;
        c.init(begin);
        std::vector<int> order(begin.back());
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(7);
        for (int round = 0; round < 20; ++round) {
            if (round > 0) {
                std::shuffle(order.begin(), order.end(), rng);
            }
            std::vector<int> done = mark_all(c, begin, order);
            std::sort(done.begin(), done.end());
            std::vector<int> all(begin.size() - 1);
            std::iota(all.begin(), all.end(), 0);
            EXPECT_EQ(done, all) << "round " << round;
            c.reset();
        }
    }
}

TEST(ReadyCounter, ReportsADuplicateWithoutCountingIt)
{
    const std::vector<int> begin = units_of({2, 130});
    ReadyCounter c;
    c.init(begin);
    int u = -1;
    EXPECT_EQ(c.mark(0, &u), ReadyCounter::Mark::Counted);
    EXPECT_EQ(c.mark(0, &u), ReadyCounter::Mark::Duplicate);
    EXPECT_EQ(c.mark(1, &u), ReadyCounter::Mark::Completed);
    EXPECT_EQ(c.mark(1, &u), ReadyCounter::Mark::Duplicate);
    for (int p = 2; p < 131; ++p) {
        EXPECT_EQ(c.mark(p, &u), ReadyCounter::Mark::Counted);
        EXPECT_EQ(c.mark(p, &u), ReadyCounter::Mark::Duplicate);
    }
    EXPECT_EQ(c.mark(131, &u), ReadyCounter::Mark::Completed);
    EXPECT_EQ(u, 1);
    c.reset();
    EXPECT_EQ(c.mark(0, &u), ReadyCounter::Mark::Counted) << "reset clears the round";
}

TEST(ReadyCounter, MarkAndQueuePushesTheCompletedUnit)
{
    const std::vector<int> begin = units_of({2, 1});
    ReadyCounter c;
    c.init(begin);
    ReadyQueue q(2);
    EXPECT_EQ(c.mark_and_queue(2, q), Marked::Queued);
    EXPECT_EQ(c.mark_and_queue(0, q), Marked::Counted);
    EXPECT_EQ(c.mark_and_queue(0, q), Marked::Duplicate);
    EXPECT_EQ(c.mark_and_queue(1, q), Marked::Queued);
    int h = -1;
    ASSERT_TRUE(q.try_begin(&h));
    std::vector<int> got;
    do {
        for (; h != -1; h = q.next(h)) {
            got.push_back(h);
        }
    } while (q.next_batch(&h));
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int>{0, 1}));
}

// Threads mark disjoint partitions of shared units (and each one a duplicate of its own):
// every unit completes exactly once per round and every duplicate is caught.
TEST(ReadyCounter, RacingMarkersCompleteEachUnitOnce)
{
    const std::vector<int> begin = units_of({16, 200, 7, 64, 1});
    ReadyCounter c;
    c.init(begin);
    constexpr int kThreads = 4;
    for (int round = 0; round < 200; ++round) {
        std::atomic<int> completions{0};
        std::atomic<int> duplicates{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < kThreads; ++t) {
            ts.emplace_back([&, t] {
                int u = -1;
                for (int p = t; p < begin.back(); p += kThreads) {
                    if (c.mark(p, &u) == ReadyCounter::Mark::Completed) {
                        completions.fetch_add(1);
                    }
                }
                if (c.mark(t, &u) == ReadyCounter::Mark::Duplicate) {
                    duplicates.fetch_add(1);
                }
            });
        }
        for (auto& th : ts) {
            th.join();
        }
        ASSERT_EQ(completions.load(), static_cast<int>(begin.size()) - 1) << "round " << round;
        ASSERT_EQ(duplicates.load(), kThreads) << "round " << round;
        c.reset();
    }
}

namespace {
/// Every unit queued on @p q, sorted (drains the queue).
std::vector<int> drain(ReadyQueue& q)
{
    std::vector<int> got;
    int h = -1;
    if (q.try_begin(&h)) {
        do {
            for (; h != -1; h = q.next(h)) {
                got.push_back(h);
            }
        } while (q.next_batch(&h));
    }
    std::sort(got.begin(), got.end());
    return got;
}
}  // namespace

// MPI_Pready_range marks a word at a time: random ranges (across word and unit boundaries, in
// units of 1 to 1000 partitions) complete each unit exactly when its last partition is marked,
// whether by a range or by a single mark.
TEST(ReadyCounter, RangesCompleteEachUnitOnceAcrossWordsAndUnits)
{
    for (const std::vector<int>& begin : layouts({1, 63, 64, 65, 128, 129, 3, 1000, 7})) {
        const int parts = begin.back();
        ReadyCounter c;
        c.init(begin);
        ReadyQueue q(static_cast<int>(begin.size()) - 1);
        std::mt19937 rng(11);
        for (int round = 0; round < 300; ++round) {
            c.reset();
            q.reset();
            std::vector<char> marked(parts, 0);
            std::vector<int> expect;
            int p = 0;
            while (p < parts) {
                const int len = 1 + static_cast<int>(rng() % (round % 3 == 0 ? 300 : 70));
                const int hi = std::min(parts - 1, p + len - 1);
                bool pushed = false;
                if (len == 1 && rng() % 2 == 0) {
                    pushed = c.mark_and_queue(p, q) == Marked::Queued;
                } else {
                    EXPECT_FALSE(c.mark_range_and_queue(p, hi, q, &pushed)) << "no duplicate";
                }
                bool completes = false;
                for (int k = p; k <= hi; ++k) {
                    marked[k] = 1;
                }
                for (std::size_t u = 0; u + 1 < begin.size(); ++u) {
                    const bool all =
                        std::all_of(marked.begin() + begin[u], marked.begin() + begin[u + 1],
                                    [](char m) { return m != 0; });
                    const bool touched = begin[u] <= hi && begin[u + 1] > p;
                    if (all && touched) {
                        expect.push_back(static_cast<int>(u));
                        completes = true;
                    }
                }
                EXPECT_EQ(pushed, completes) << "round " << round << " range " << p << ".." << hi;
                p = hi + 1;
            }
            std::sort(expect.begin(), expect.end());
            EXPECT_EQ(drain(q), expect) << "round " << round;
        }
    }
}

// A range that overlaps marked partitions reports the duplicate, marks the rest all the same,
// and still completes the unit it filled.
TEST(ReadyCounter, RangeOverADuplicateMarksTheRest)
{
    const std::vector<int> begin = units_of({4, 130});
    ReadyCounter c;
    c.init(begin);
    ReadyQueue q(2);
    int u = -1;
    EXPECT_EQ(c.mark(2, &u), ReadyCounter::Mark::Counted);
    bool pushed = false;
    EXPECT_TRUE(c.mark_range_and_queue(0, 3, q, &pushed));
    EXPECT_TRUE(pushed) << "unit 0 is complete";
    EXPECT_EQ(c.mark(0, &u), ReadyCounter::Mark::Duplicate);
    EXPECT_EQ(c.mark(70, &u), ReadyCounter::Mark::Counted);
    EXPECT_TRUE(c.mark_range_and_queue(4, 133, q, &pushed));
    EXPECT_TRUE(pushed) << "unit 1 is complete";
    EXPECT_EQ(drain(q), (std::vector<int>{0, 1}));
    EXPECT_FALSE(c.mark_range_and_queue(4, 133, q, &pushed) && pushed) << "nothing new";
}

// Threads mark interleaved ranges of shared multi-word units concurrently.
TEST(ReadyCounter, RacingRangesCompleteEachUnitOnce)
{
    const std::vector<int> begin = units_of({300, 64, 129, 5});
    ReadyCounter c;
    c.init(begin);
    constexpr int kThreads = 4;
    constexpr int kChunk = 23;
    for (int round = 0; round < 200; ++round) {
        c.reset();
        std::atomic<int> duplicates{0};
        std::vector<std::thread> ts;
        ReadyQueue q(static_cast<int>(begin.size()) - 1);
        for (int t = 0; t < kThreads; ++t) {
            ts.emplace_back([&, t] {
                for (int lo = t * kChunk; lo < begin.back(); lo += kThreads * kChunk) {
                    bool pushed = false;
                    if (c.mark_range_and_queue(lo, std::min(begin.back(), lo + kChunk) - 1, q,
                                               &pushed)) {
                        duplicates.fetch_add(1);
                    }
                }
            });
        }
        for (auto& th : ts) {
            th.join();
        }
        EXPECT_EQ(duplicates.load(), 0);
        EXPECT_EQ(drain(q), (std::vector<int>{0, 1, 2, 3})) << "round " << round;
    }
}
