// SPDX-License-Identifier: BSD-3-Clause
// Maps user MPI_Request handles to our requests. Lookups are lock-free (open addressing over
// atomics); inserts and erases take a mutex. The empty-registry check is one relaxed load.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "requests/request.hpp"

namespace mpipcl::requests {

class HandleRegistry {
   public:
    static HandleRegistry& instance();

    /// No partitioned request exists: wrappers go straight to PMPI.
    bool empty() const noexcept { return live_.load(std::memory_order_relaxed) == 0; }
    /// Lock-free. The pointer stays valid until the request is freed by the user.
    Request* find(MPI_Request h) const noexcept;
    std::shared_ptr<Request> shared(MPI_Request h) const;
    void insert(MPI_Request h, std::shared_ptr<Request> req);
    /// Removes @p h (before the handle is given back to MPI: MPI reuses values at once).
    std::shared_ptr<Request> erase(MPI_Request h);
    /// Calls @p fn on every live request (MPI_Finalize).
    void for_each(const std::function<void(Request&)>& fn);

   private:
    struct Slot {
        std::atomic<std::uintptr_t> key{0};
        std::atomic<Request*> value{nullptr};
    };
    struct Table {
        explicit Table(std::size_t cap) : mask(cap - 1), slots(new Slot[cap]) {}
        std::size_t mask;
        std::unique_ptr<Slot[]> slots;
    };
    static constexpr std::uintptr_t kEmpty = 0;
    static constexpr std::uintptr_t kTomb = 1;

    static std::uintptr_t key_of(MPI_Request h) noexcept;
    static std::size_t hash(std::uintptr_t k) noexcept;
    void put_locked(Table& t, std::uintptr_t k, Request* r);
    void grow_locked();

    std::atomic<Table*> table_{nullptr};
    /// All generations, kept for late readers; tables only double, so this is < 2x the current.
    std::vector<std::unique_ptr<Table>> tables_;
    /// Longest probe any insert used: a lookup that misses stops there (erased slots become
    /// tombstones that later inserts reuse, so chains stay short without rebuilding).
    std::atomic<std::size_t> max_probe_{0};
    std::unordered_map<std::uintptr_t, std::shared_ptr<Request>> owners_;
    std::atomic<int> live_{0};
    mutable std::mutex mu_;
};

}  // namespace mpipcl::requests
