// SPDX-License-Identifier: BSD-3-Clause
// Maps user MPI_Request handles to our requests and counts who is inside each one.
// Lookups are lock-free (open addressing over atomics); inserts and closes take a mutex. The
// empty-registry check is one relaxed load. Two kinds of reference: counted (a sharded atomic
// counter, for the completion calls) and light (a per-thread hazard cell, no atomic
// read-modify-write, for the per-partition calls MPI_Pready* and MPI_Parrived).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "common/assert.hpp"

namespace mpipcl::requests {

class Request;

class HandleRegistry {
    struct Slot;

   public:
    /// Internal (light references): one per thread that ever took one; never freed, reused
    /// after the thread exits. `slot` is the slot the thread is inside (or null).
    struct alignas(64) Hazard {
        std::atomic<const Slot*> slot{nullptr};
        std::atomic<bool> owned{false};
        Hazard* next = nullptr;
        /// The owner's last lookup (handle key -> slot), read and written by the owner only: a
        /// thread calling MPI_Pready in a loop skips the hash probe. Only a hint: the slot's own
        /// key is checked after the cell is published, as for a looked-up slot.
        std::uintptr_t last_key = 0;
        Slot* last_slot = nullptr;
        std::uint64_t last_registry = 0;  ///< id_ of the registry last_slot belongs to
    };
    /// Internal: this thread's hazard cell once it took one (constant-initialised, initial-exec:
    /// one %fs-relative load, no __tls_get_addr call on the MPI_Pready path).
    static inline thread_local Hazard* t_hazard_ __attribute__((tls_model("initial-exec"))) =
        nullptr;
    /// Internal: close() can make every running thread execute a full fence (membarrier,
    /// private expedited), so a reader's side of the hand-off is a compiler barrier.
    static const bool light_fence_;

    /// A counted reference on a live request: while any Ref is held the request is neither
    /// freed nor restarted (MPI_Request_free and MPI_Start wait for the others to let go).
    /// Move-only; empty when the handle is not ours.
    class Ref {
       public:
        Ref() = default;
        Ref(Ref&& o) noexcept : slot_(o.slot_), req_(o.req_), shard_(o.shard_), hazard_(o.hazard_)
        {
            o.slot_ = nullptr;
            o.req_ = nullptr;
        }
        Ref& operator=(Ref&& o) noexcept;
        Ref(const Ref&) = delete;
        Ref& operator=(const Ref&) = delete;
        ~Ref() { reset(); }
        explicit operator bool() const noexcept { return req_ != nullptr; }
        Request* get() const noexcept { return req_; }
        Request* operator->() const noexcept { return req_; }
        Request& operator*() const noexcept { return *req_; }
        void reset() noexcept;

       private:
        friend class HandleRegistry;
        Ref(Slot* s, Request* r, int shard) : slot_(s), req_(r), shard_(shard) {}
        Ref(Slot* s, Request* r, Hazard* h) : slot_(s), req_(r), hazard_(h) {}
        Slot* slot_ = nullptr;
        Request* req_ = nullptr;
        int shard_ = 0;
        Hazard* hazard_ = nullptr;  ///< a light reference: this thread's hazard cell
    };

    /// Inline: read on every MPI_Pready and MPI_Parrived.
    static HandleRegistry& instance()
    {
        static HandleRegistry* reg = new HandleRegistry();  // outlives static destructors
        return *reg;
    }

    /// No partitioned request exists: wrappers go straight to PMPI.
    bool empty() const noexcept { return live_.load(std::memory_order_relaxed) == 0; }
    /// Lock-free. An empty Ref when @p h is not a live request of ours; *closing (if given) is
    /// then true when @p h is ours but being freed right now.
    Ref acquire(MPI_Request h, bool* closing = nullptr) const noexcept;
    /// As acquire(), for calls that hold the reference briefly in the calling thread
    /// (MPI_Pready*, MPI_Parrived): publishes the slot in this thread's hazard cell instead of
    /// counting, so the hot path has no atomic read-modify-write. The Ref must be released by
    /// the thread that acquired it. Falls back to a counted reference when this thread already
    /// holds a light one.
    Ref acquire_light(MPI_Request h, bool* closing = nullptr) const noexcept;
    /// Registers @p req (owned by the caller) under @p h. Throws std::bad_alloc.
    void insert(MPI_Request h, Request* req);
    /// MPI_Request_free: stops new acquires of @p ref's request, waits (with back-off, no lock
    /// held) until @p ref is the only reference left, then removes its handle (before the handle
    /// goes back to MPI, which reuses values at once). @p ref is empty afterwards and the
    /// request is the caller's to destroy. False when another thread is already freeing it.
    bool close(Ref& ref) noexcept;
    /// MPI_Start: waits (with back-off) until @p ref is the only reference to its request, so
    /// no thread of the previous round is still inside it.
    static void wait_sole(const Ref& ref) noexcept;
    /// Number of live requests.
    int size() const noexcept { return live_.load(std::memory_order_relaxed); }

   private:
    static constexpr int kShards = 8;
    /// One reference counter on its own cache line: threads entering the same request
    /// (16 MPI_Pready threads) count on different lines.
    struct alignas(64) Shard {
        std::atomic<std::uint32_t> refs{0};
    };
    /// Type-stable: slots are never freed, only reused, so a reader that found one may always
    /// touch its counters, then checks it is still the request it looked up.
    struct Slot {
        Shard shards[kShards];               ///< references held, summed over the shards
        std::atomic<bool> closing{true};     ///< freeing (or free): no new references
        std::atomic<std::uintptr_t> key{0};  ///< handle it belongs to (0 = none)
        std::atomic<Request*> req{nullptr};
        std::uint32_t held() const noexcept;
    };
    struct Entry {
        std::atomic<std::uintptr_t> key{0};
        std::atomic<Slot*> slot{nullptr};
    };
    struct Table {
        explicit Table(std::size_t cap) : mask(cap - 1), entries(new Entry[cap]) {}
        std::size_t mask;
        std::unique_ptr<Entry[]> entries;
    };
    static int my_shard() noexcept;
    static Hazard* my_hazard() noexcept
    {
        Hazard* h = t_hazard_;
        return h != nullptr ? h : claim_hazard();
    }
    /// First light reference of this thread: claims a free cell or makes one (null when out
    /// of memory: the caller counts instead).
    static Hazard* claim_hazard() noexcept;
    /// Asymmetric fences for the light references (the pattern of Linux's sys_membarrier and
    /// folly's asymmetric_thread_fence_light/heavy): the reader's half.
    static void fence_light() noexcept
    {
        if (light_fence_) [[likely]] {
            std::atomic_signal_fence(std::memory_order_seq_cst);
        } else {
            std::atomic_thread_fence(std::memory_order_seq_cst);
        }
    }
    /// acquire_light() without the per-thread hint (first lookup, or the hint went stale).
    Ref acquire_light_slow(Hazard* hz, std::uintptr_t k, bool* closing) const noexcept;
    /// Some thread other than @p except's owner holds a light reference on @p s.
    static bool hazard_holds(const Slot* s, const Hazard* except) noexcept;
    /// Waits (back-off) until @p ref's counted and light references are the only ones left.
    static void wait_others(const Ref& ref) noexcept;
    static constexpr std::uintptr_t kEmpty = 0;
    static constexpr std::uintptr_t kTomb = 1;

    static std::uintptr_t key_of(MPI_Request h) noexcept
    {
        std::uintptr_t k = 0;
        static_assert(sizeof(MPI_Request) <= sizeof(k), "MPI_Request wider than a pointer");
        std::memcpy(&k, &h, sizeof(MPI_Request));
        return k;
    }
    static std::size_t hash(std::uintptr_t k) noexcept;
    Slot* find_slot(std::uintptr_t k) const noexcept;
    void put_locked(Table& t, std::uintptr_t k, Slot* s);
    void grow_locked();
    void erase_locked(std::uintptr_t k);

    /// Unique per registry ever made (never 0): a thread's hint names the registry its slot
    /// belongs to (the unit tests make many; a slot of a destroyed one must never be used).
    const std::uint64_t id_ = next_id();
    static std::uint64_t next_id() noexcept;
    std::atomic<Table*> table_{nullptr};
    /// All generations, kept for late readers; tables only double, so this is < 2x the current.
    std::vector<std::unique_ptr<Table>> tables_;
    /// Longest probe any insert used: a lookup that misses stops there (erased entries become
    /// tombstones that later inserts reuse, so chains stay short without rebuilding).
    std::atomic<std::size_t> max_probe_{0};
    std::deque<Slot> slots_;   ///< every slot ever made (stable addresses)
    std::vector<Slot*> free_;  ///< closed slots, reused by insert
    std::size_t entries_ = 0;  ///< live handles in the table
    std::atomic<int> live_{0};
    mutable std::mutex mu_;
};

// Inline: MPI_Pready and MPI_Parrived run it once per partition.
[[gnu::always_inline]] inline HandleRegistry::Ref HandleRegistry::acquire_light(
    MPI_Request h, bool* closing) const noexcept
{
    Hazard* hz = my_hazard();
    if (hz == nullptr || hz->slot.load(std::memory_order_relaxed) != nullptr) [[unlikely]] {
        return acquire(h, closing);  // no cell, or this thread already holds a light one
    }
    const std::uintptr_t k = key_of(h);
    if (hz->last_key == k && hz->last_registry == id_) [[likely]] {
        // The hinted slot, validated exactly as a looked-up one (see acquire_light_slow): slots
        // are type-stable, and a slot whose key is k and not closing is k's live slot (a
        // handle has one live slot; close() clears the key before MPI can reuse the handle).
        Slot* s = hz->last_slot;
        hz->slot.store(s, std::memory_order_relaxed);
        fence_light();
        if (!s->closing.load(std::memory_order_acquire) &&
            s->key.load(std::memory_order_acquire) == k) [[likely]] {
            if (closing != nullptr) {
                *closing = false;
            }
            return Ref(s, s->req.load(std::memory_order_acquire), hz);
        }
        hz->slot.store(nullptr, std::memory_order_relaxed);
    }
    return acquire_light_slow(hz, k, closing);
}

inline void HandleRegistry::Ref::reset() noexcept
{
    if (slot_ != nullptr) {
        // sync: release: everything this holder did inside the request happens before the
        // closer's (or starter's) acquire load that sees the count (or the cell) drop.
        if (hazard_ != nullptr) {
            MPIPCL_ASSERT(hazard_ == t_hazard_,
                          "a light reference is released by the thread that took it");
            hazard_->slot.store(nullptr, std::memory_order_release);
            hazard_ = nullptr;
        } else {
            slot_->shards[shard_].refs.fetch_sub(1, std::memory_order_release);
        }
        slot_ = nullptr;
    }
    req_ = nullptr;
}

}  // namespace mpipcl::requests
