// SPDX-License-Identifier: BSD-3-Clause
// Handle registry and the per-request reference count behind the lifetime rule.
#include "requests/registry.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "common/backoff.hpp"

namespace mpipcl::requests {

namespace {
/// Asymmetric fences for the light references (the pattern of Linux's sys_membarrier and
/// folly's asymmetric_thread_fence_light/heavy). A reader publishes its hazard cell, then
/// checks `closing`; close() sets `closing`, then scans the cells: a store-buffering pair
/// that needs a full fence on both sides. The reader's side is only a compiler barrier when
/// close() can make every running thread of the process execute a full fence (membarrier,
/// private expedited); without it both sides use real fences.
bool register_membarrier() noexcept
{
    const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
}  // namespace

const bool HandleRegistry::light_fence_ = register_membarrier();

namespace {
inline void fence_heavy() noexcept
{
    if (!HandleRegistry::light_fence_ ||
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
    }
}
}  // namespace

std::uint64_t HandleRegistry::next_id() noexcept
{
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

HandleRegistry::Ref& HandleRegistry::Ref::operator=(Ref&& o) noexcept
{
    if (this != &o) {
        reset();
        slot_ = o.slot_;
        req_ = o.req_;
        shard_ = o.shard_;
        hazard_ = o.hazard_;
        o.slot_ = nullptr;
        o.req_ = nullptr;
    }
    return *this;
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

namespace {
/// Every hazard cell ever made (pushed at the front, never removed).
std::atomic<HandleRegistry::Hazard*>* hazard_list_head()
{
    static auto* head = new std::atomic<HandleRegistry::Hazard*>(nullptr);
    return head;
}
/// Gives the thread's cell back when the thread exits.
struct HazardOwner {
    HandleRegistry::Hazard* cell = nullptr;
    ~HazardOwner();
};
thread_local HazardOwner t_hazard_owner;
}  // namespace

HazardOwner::~HazardOwner()
{
    if (cell != nullptr) {
        HandleRegistry::t_hazard_ = nullptr;
        // sync: release: the cell's last use happens before its next owner's claim.
        cell->owned.store(false, std::memory_order_release);
    }
}

HandleRegistry::Hazard* HandleRegistry::claim_hazard() noexcept
{
    std::atomic<Hazard*>* head = hazard_list_head();
    Hazard* h = nullptr;
    // sync: acquire pairs with the release push below (the cell's next link).
    for (Hazard* c = head->load(std::memory_order_acquire); c != nullptr; c = c->next) {
        bool expected = false;
        // sync: acquire pairs with the release in ~HazardOwner.
        if (!c->owned.load(std::memory_order_relaxed) &&
            c->owned.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
            h = c;
            break;
        }
    }
    if (h == nullptr) {
        h = new (std::nothrow) Hazard;
        if (h == nullptr) {
            return nullptr;  // the caller counts instead
        }
        h->owned.store(true, std::memory_order_relaxed);
        Hazard* first = head->load(std::memory_order_relaxed);
        do {
            h->next = first;
            // sync: seq_cst (see hazard_holds): a closer that scans after its heavy fence
            // finds every cell whose holder could have missed `closing`.
        } while (!head->compare_exchange_weak(first, h));
    }
    t_hazard_owner.cell = h;  // first use constructs it: its destructor runs at thread exit
    t_hazard_ = h;
    return h;
}

bool HandleRegistry::hazard_holds(const Slot* s, const Hazard* except) noexcept
{
    // sync: acquire: a cell seen cleared carries its holder's release (Ref::reset), so all
    // the holder did inside the request happens before the caller goes on.
    for (const Hazard* c = hazard_list_head()->load(std::memory_order_acquire); c != nullptr;
         c = c->next) {
        if (c != except && c->slot.load(std::memory_order_acquire) == s) {
            return true;
        }
    }
    return false;
}

void HandleRegistry::wait_others(const Ref& ref) noexcept
{
    const std::uint32_t own = ref.hazard_ == nullptr ? 1 : 0;
    Backoff b(20, 100);
    while (ref.slot_->held() > own || hazard_holds(ref.slot_, ref.hazard_)) {
        b.pause();
    }
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

HandleRegistry::Ref HandleRegistry::acquire_light_slow(Hazard* hz, std::uintptr_t k,
                                                       bool* closing) const noexcept
{
    if (closing != nullptr) {
        *closing = false;
    }
    Slot* s = find_slot(k);
    if (s == nullptr) {
        return {};
    }
    // sync: publish the cell, fence, then read `closing`: with close()'s store of `closing`,
    // heavy fence and scan of the cells, either close() sees the cell and waits, or we see
    // `closing` and back off (fence_light/fence_heavy above). The slot is type-stable; the
    // acquire loads of `closing` and `key` order the load of `req` after insert()'s stores
    // when the slot was reopened for a new request meanwhile.
    hz->slot.store(s, std::memory_order_relaxed);
    fence_light();
    const bool is_closing = s->closing.load(std::memory_order_acquire);
    if (is_closing || s->key.load(std::memory_order_acquire) != k) {
        hz->slot.store(nullptr, std::memory_order_relaxed);
        if (closing != nullptr) {
            *closing = is_closing;
        }
        return {};
    }
    hz->last_key = k;
    hz->last_slot = s;
    hz->last_registry = id_;
    return Ref(s, s->req.load(std::memory_order_acquire), hz);
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
    // sync: every thread that published a light reference before our store of `closing` is
    // visible to the scan in wait_others after this (see acquire_light).
    fence_heavy();
    wait_others(ref);
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
    // No heavy fence (this runs at every MPI_Start): a light reference of the previous round
    // was taken by a Pready whose partition the round needed to complete, so its cell store is
    // sequenced before its partition count (a release read-modify-write), which the completion
    // the caller observed acquired; the scan therefore sees the cell or its clearing. Pready
    // calls that did not count (errors) and Parrived calls racing a restart are erroneous.
    wait_others(ref);
}

}  // namespace mpipcl::requests
