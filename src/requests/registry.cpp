// SPDX-License-Identifier: BSD-3-Clause
// Handle registry and the per-request reference count behind the lifetime rule.
#include "requests/registry.hpp"

#include <cstring>

#include "common/backoff.hpp"

namespace mpipcl::requests {

HandleRegistry& HandleRegistry::instance()
{
    static HandleRegistry* reg = new HandleRegistry();  // outlives static destructors
    return *reg;
}

HandleRegistry::Ref& HandleRegistry::Ref::operator=(Ref&& o) noexcept
{
    if (this != &o) {
        reset();
        slot_ = o.slot_;
        req_ = o.req_;
        shard_ = o.shard_;
        o.slot_ = nullptr;
        o.req_ = nullptr;
    }
    return *this;
}

void HandleRegistry::Ref::reset() noexcept
{
    if (slot_ != nullptr) {
        // sync: release: everything this holder did inside the request happens before the
        // closer's (or starter's) acquire load that sees the count drop.
        slot_->shards[shard_].refs.fetch_sub(1, std::memory_order_release);
        slot_ = nullptr;
    }
    req_ = nullptr;
}

namespace {
// Constant-initialised (no TLS guard) and initial-exec (one %fs-relative load, no
// __tls_get_addr call): this is read on every MPI_Pready.
thread_local int t_shard __attribute__((tls_model("initial-exec"))) = -1;
}  // namespace

int HandleRegistry::my_shard() noexcept
{
    if (t_shard < 0) [[unlikely]] {
        static std::atomic<int> next{0};
        t_shard = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    }
    return t_shard;
}

std::uint32_t HandleRegistry::Slot::held() const noexcept
{
    std::uint32_t n = 0;
    for (const Shard& sh : shards) {
        // sync: seq_cst, see acquire(); also acquires the holders' releases.
        n += sh.refs.load();
    }
    return n;
}

std::uintptr_t HandleRegistry::key_of(MPI_Request h) noexcept
{
    std::uintptr_t k = 0;
    static_assert(sizeof(MPI_Request) <= sizeof(k), "MPI_Request wider than a pointer");
    std::memcpy(&k, &h, sizeof(MPI_Request));
    return k;
}

std::size_t HandleRegistry::hash(std::uintptr_t k) noexcept
{
    std::uint64_t x = k;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
}

HandleRegistry::Slot* HandleRegistry::find_slot(std::uintptr_t k) const noexcept
{
    // sync: acquire pairs with the release publication of a table and of its entries.
    const Table* t = table_.load(std::memory_order_acquire);
    if (t == nullptr) {
        return nullptr;
    }
    const std::size_t limit = max_probe_.load(std::memory_order_acquire);
    for (std::size_t i = hash(k) & t->mask, n = 0; n <= limit; i = (i + 1) & t->mask, ++n) {
        const std::uintptr_t s = t->entries[i].key.load(std::memory_order_acquire);
        if (s == k) {
            return t->entries[i].slot.load(std::memory_order_acquire);
        }
        if (s == kEmpty) {
            return nullptr;
        }
    }
    return nullptr;
}

HandleRegistry::Ref HandleRegistry::acquire(MPI_Request h, bool* closing) const noexcept
{
    if (closing != nullptr) {
        *closing = false;
    }
    const std::uintptr_t k = key_of(h);
    Slot* s = find_slot(k);
    if (s == nullptr) {
        return {};
    }
    // sync: seq_cst increment, then seq_cst load of `closing` (close() stores it seq_cst, then
    // sums the counters seq_cst): a Dekker pair, so either close() sees our reference and
    // waits for it, or we see `closing` and back off. The slot is type-stable, so touching it
    // is safe even when it was closed and reused meanwhile; the key check catches that.
    const int shard = my_shard();
    s->shards[shard].refs.fetch_add(1);
    const bool is_closing = s->closing.load();
    if (is_closing || s->key.load() != k) {
        s->shards[shard].refs.fetch_sub(1, std::memory_order_release);
        if (closing != nullptr) {
            *closing = is_closing;
        }
        return {};
    }
    return Ref(s, s->req.load(std::memory_order_acquire), shard);
}

void HandleRegistry::put_locked(Table& t, std::uintptr_t k, Slot* s)
{
    for (std::size_t i = hash(k) & t.mask, n = 0;; i = (i + 1) & t.mask, ++n) {
        const std::uintptr_t e = t.entries[i].key.load(std::memory_order_relaxed);
        if (e == kEmpty || e == kTomb) {
            if (n > max_probe_.load(std::memory_order_relaxed)) {
                max_probe_.store(n, std::memory_order_release);
            }
            t.entries[i].slot.store(s, std::memory_order_relaxed);
            // sync: release makes the slot visible before the key that readers match on.
            t.entries[i].key.store(k, std::memory_order_release);
            return;
        }
    }
}

void HandleRegistry::grow_locked()
{
    std::size_t cap = 16;
    while (cap < 4 * (entries_ + 1)) {
        cap *= 2;
    }
    auto t = std::make_unique<Table>(cap);
    if (const Table* old = table_.load(std::memory_order_relaxed)) {
        for (std::size_t i = 0; i <= old->mask; ++i) {
            const std::uintptr_t k = old->entries[i].key.load(std::memory_order_relaxed);
            if (k != kEmpty && k != kTomb) {
                put_locked(*t, k, old->entries[i].slot.load(std::memory_order_relaxed));
            }
        }
    }
    table_.store(t.get(), std::memory_order_release);
    tables_.push_back(std::move(t));
}

void HandleRegistry::insert(MPI_Request h, Request* req)
{
    std::lock_guard<std::mutex> lk(mu_);
    const std::uintptr_t k = key_of(h);
    Slot* s = nullptr;
    if (!free_.empty()) {
        s = free_.back();
        free_.pop_back();
        // Late readers of the slot's previous life may still be backing off (a count with
        // `closing` set): let them leave before reopening it.
        Backoff b(20, 100);
        while (s->held() != 0) {
            b.pause();
        }
    } else {
        s = &slots_.emplace_back();
    }
    s->req.store(req, std::memory_order_relaxed);
    s->key.store(k, std::memory_order_release);
    s->closing.store(false);
    Table* t = table_.load(std::memory_order_relaxed);
    if (t == nullptr || 2 * (entries_ + 1) > t->mask + 1) {
        ++entries_;
        grow_locked();  // copies the old entries; the new one follows
        put_locked(*table_.load(std::memory_order_relaxed), k, s);
    } else {
        ++entries_;
        put_locked(*t, k, s);
    }
    live_.fetch_add(1, std::memory_order_relaxed);
}

void HandleRegistry::erase_locked(std::uintptr_t k)
{
    // Tombstone the key in every generation so no late reader of an old table finds it.
    const std::size_t limit = max_probe_.load(std::memory_order_relaxed);
    for (auto& t : tables_) {
        for (std::size_t i = hash(k) & t->mask, n = 0; n <= limit; i = (i + 1) & t->mask, ++n) {
            const std::uintptr_t e = t->entries[i].key.load(std::memory_order_relaxed);
            if (e == k) {
                t->entries[i].key.store(kTomb, std::memory_order_release);
                break;
            }
            if (e == kEmpty) {
                break;
            }
        }
    }
}

bool HandleRegistry::close(Ref& ref) noexcept
{
    Slot* s = ref.slot_;
    // sync: seq_cst, see acquire(); exactly one closer wins.
    if (s->closing.exchange(true)) {
        return false;
    }
    Backoff b(20, 100);
    while (s->held() > 1) {
        b.pause();
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        const std::uintptr_t k = s->key.load(std::memory_order_relaxed);
        erase_locked(k);
        --entries_;
        s->key.store(0);
        s->req.store(nullptr, std::memory_order_relaxed);
        free_.push_back(s);
        live_.fetch_sub(1, std::memory_order_relaxed);
    }
    ref.reset();  // our own count; `closing` stays set until insert() reopens the slot
    return true;
}

void HandleRegistry::wait_sole(const Ref& ref) noexcept
{
    Backoff b(20, 100);
    while (ref.slot_->held() > 1) {
        b.pause();
    }
}

}  // namespace mpipcl::requests
