// SPDX-License-Identifier: BSD-3-Clause
// Handle registry.
#include "requests/registry.hpp"

#include <cstring>

namespace mpipcl::requests {

HandleRegistry& HandleRegistry::instance()
{
    static HandleRegistry* reg = new HandleRegistry();  // outlives static destructors
    return *reg;
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

Request* HandleRegistry::find(MPI_Request h) const noexcept
{
    // sync: acquire pairs with the release publication of a table and of its slots.
    const Table* t = table_.load(std::memory_order_acquire);
    if (t == nullptr) {
        return nullptr;
    }
    const std::uintptr_t k = key_of(h);
    const std::size_t limit = max_probe_.load(std::memory_order_acquire);
    for (std::size_t i = hash(k) & t->mask, n = 0; n <= limit; i = (i + 1) & t->mask, ++n) {
        const std::uintptr_t s = t->slots[i].key.load(std::memory_order_acquire);
        if (s == k) {
            return t->slots[i].value.load(std::memory_order_acquire);
        }
        if (s == kEmpty) {
            return nullptr;
        }
    }
    return nullptr;
}

std::shared_ptr<Request> HandleRegistry::shared(MPI_Request h) const
{
    std::lock_guard<std::mutex> lk(mu_);
    auto it = owners_.find(key_of(h));
    return it == owners_.end() ? nullptr : it->second;
}

void HandleRegistry::put_locked(Table& t, std::uintptr_t k, Request* r)
{
    for (std::size_t i = hash(k) & t.mask, n = 0;; i = (i + 1) & t.mask, ++n) {
        const std::uintptr_t s = t.slots[i].key.load(std::memory_order_relaxed);
        if (s == kEmpty || s == kTomb) {
            if (n > max_probe_.load(std::memory_order_relaxed)) {
                max_probe_.store(n, std::memory_order_release);
            }
            t.slots[i].value.store(r, std::memory_order_relaxed);
            // sync: release makes the value visible before the key that readers match on.
            t.slots[i].key.store(k, std::memory_order_release);
            return;
        }
    }
}

void HandleRegistry::grow_locked()
{
    std::size_t cap = 16;
    while (cap < 4 * (owners_.size() + 1)) {
        cap *= 2;
    }
    auto t = std::make_unique<Table>(cap);
    for (const auto& [k, r] : owners_) {
        put_locked(*t, k, r.get());
    }
    table_.store(t.get(), std::memory_order_release);
    tables_.push_back(std::move(t));
}

void HandleRegistry::insert(MPI_Request h, std::shared_ptr<Request> req)
{
    std::lock_guard<std::mutex> lk(mu_);
    const std::uintptr_t k = key_of(h);
    Request* raw = req.get();
    owners_[k] = std::move(req);
    Table* t = table_.load(std::memory_order_relaxed);
    if (t == nullptr || 2 * owners_.size() > t->mask + 1) {
        grow_locked();  // copies the new entry too
    } else {
        put_locked(*t, k, raw);
    }
    live_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<Request> HandleRegistry::erase(MPI_Request h)
{
    std::lock_guard<std::mutex> lk(mu_);
    const std::uintptr_t k = key_of(h);
    auto it = owners_.find(k);
    if (it == owners_.end()) {
        return nullptr;
    }
    auto req = std::move(it->second);
    owners_.erase(it);
    // Tombstone the key in every generation so no late reader of an old table finds it.
    const std::size_t limit = max_probe_.load(std::memory_order_relaxed);
    for (auto& t : tables_) {
        for (std::size_t i = hash(k) & t->mask, n = 0; n <= limit; i = (i + 1) & t->mask, ++n) {
            const std::uintptr_t s = t->slots[i].key.load(std::memory_order_relaxed);
            if (s == k) {
                t->slots[i].key.store(kTomb, std::memory_order_release);
                break;
            }
            if (s == kEmpty) {
                break;
            }
        }
    }
    live_.fetch_sub(1, std::memory_order_relaxed);
    return req;
}

void HandleRegistry::for_each(const std::function<void(Request&)>& fn)
{
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [k, r] : owners_) {
        fn(*r);
    }
}

}  // namespace mpipcl::requests
