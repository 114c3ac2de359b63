// SPDX-License-Identifier: BSD-3-Clause
// ReadyQueue: the lock-free hand-off from MPI_Pready threads to the one thread that issues the
// MPI work (persistent starts, RMA Puts). Used by both backends' send paths.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace mpipcl {

/// A Treiber stack of unit indices plus a "draining" bit, both in ONE atomic word.
///
/// Why one word: a stack head and a drainer's flag in two atomics would form a
/// store-buffering pattern (pusher: push, then check the flag; drainer: clear the flag, then
/// check the head) that release/acquire does not order, so a unit could be stranded until the
/// next progress pass. With one word every push and every drainer transition is a
/// read-modify-write of the same location: they are totally ordered (modification order), so
/// either the drainer's final CAS sees the push (and takes it), or the push comes later and the
/// pusher's own next try_begin() sees the drain ended (coherence). No fence argument needed.
///
/// Each unit is pushed at most once between two reset() calls (callers count partitions down
/// and push a unit when its count reaches zero). The word's upper bits count the pushes since
/// the last reset (pushed()): a send path whose units are single partitions learns from it,
/// without a read-modify-write of its own, whether every partition of the round is ready.
class ReadyQueue {
   public:
    ReadyQueue() = default;
    explicit ReadyQueue(int units) { resize(units); }

    void resize(int units) { next_ = std::make_unique<std::atomic<int>[]>(units > 0 ? units : 1); }

    /// Empties the queue. No concurrent pusher or drainer (a new round begins).
    void reset() noexcept { word_.store(0, std::memory_order_relaxed); }

    /// Lock-free, any thread: unit @p u is ready.
    void push(int u) noexcept
    {
        std::uint64_t w = word_.load(std::memory_order_relaxed);
        std::uint64_t desired = 0;
        do {
            next_[u].store(head_of(w), std::memory_order_relaxed);
            desired = ((w & ~kHeadMask) + kCountOne) | static_cast<std::uint64_t>(u + 1);
            // sync: seq_cst (a release suffices for the queue itself: it publishes next_[u] and
            // the partition data to the drainer's acquiring CAS); seq_cst also orders the push
            // before a gate check the caller makes next (RMA: has the receiver started?),
            // against the gate-opener's store then try_begin (Dekker).
        } while (!word_.compare_exchange_weak(w, desired, std::memory_order_seq_cst,
                                              std::memory_order_relaxed));
    }

    /// True when units are queued (a hint; seq_cst, see push).
    bool pending() const noexcept { return head_of(word_.load()) != -1; }

    /// Becomes the one drainer and takes every queued unit (a list: *head, next(*head), ...
    /// down to -1). False when nothing is queued or another thread is draining: that thread
    /// takes what is queued before it stops (see next_batch).
    bool try_begin(int* head) noexcept
    {
        std::uint64_t w = word_.load();
        do {
            if ((w & kDraining) != 0 || head_of(w) == -1) {
                return false;
            }
            // sync: seq_cst acquires the pushers' data (and see push for the gate).
        } while (!word_.compare_exchange_weak(w, (w & kCountMask) | kDraining));
        *head = head_of(w);
        return true;
    }

    /// The drainer is done with its list: takes what was pushed meanwhile (true, still
    /// draining) or ends the drain (false).
    bool next_batch(int* head) noexcept
    {
        std::uint64_t w = word_.load();
        for (;;) {
            const std::uint64_t desired = (w & kCountMask) | (head_of(w) == -1 ? 0 : kDraining);
            if (word_.compare_exchange_weak(w, desired)) {
                *head = head_of(w);
                return *head != -1;
            }
        }
    }

    /// Ends draining until the next reset(): waits until a drain that runs in another thread
    /// is over (its drainer takes what was pushed meanwhile, see next_batch), then becomes
    /// the drainer for good, dropping what is queued. Later pushes stay queued and no
    /// try_begin succeeds. Not for a drainer itself (it would wait for its own drain).
    void seal() noexcept
    {
        std::uint64_t w = word_.load();
        for (;;) {
            if ((w & kDraining) != 0) {
                std::this_thread::yield();  // a drain runs for microseconds to milliseconds
                w = word_.load();
            } else if (word_.compare_exchange_weak(w, (w & kCountMask) | kDraining)) {
                return;  // sync: seq_cst, after every Put of the drain that ended before
            }
        }
    }

    /// Units pushed since the last reset (seq_cst, see push).
    int pushed() const noexcept { return static_cast<int>(word_.load() >> kCountShift); }

    /// Diagnostics (MPIPCL_DUMP_SIGNAL): the head unit (-1 = none) and whether a drain runs.
    int debug_head(bool* draining) const noexcept
    {
        const std::uint64_t w = word_.load(std::memory_order_relaxed);
        *draining = (w & kDraining) != 0;
        return head_of(w);
    }

    /// The unit after @p u in a list taken by try_begin/next_batch (drainer only).
    int next(int u) const noexcept { return next_[u].load(std::memory_order_relaxed); }

   private:
    static constexpr std::uint64_t kHeadMask = 0xffffffffu;
    static constexpr std::uint64_t kDraining = std::uint64_t{1} << 32;
    static constexpr int kCountShift = 33;
    static constexpr std::uint64_t kCountOne = std::uint64_t{1} << kCountShift;
    static constexpr std::uint64_t kCountMask = ~(kCountOne - 1);
    static int head_of(std::uint64_t w) noexcept { return static_cast<int>(w & 0xffffffffu) - 1; }

    std::atomic<std::uint64_t> word_{0};
    std::unique_ptr<std::atomic<int>[]> next_;
};

}  // namespace mpipcl
