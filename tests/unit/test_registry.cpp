// SPDX-License-Identifier: BSD-3-Clause
// Handle registry: lookups, erasure, growth, tombstone reuse, and lock-free readers racing a writer.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "requests/registry.hpp"

using mpipcl::requests::HandleRegistry;
using mpipcl::requests::Request;

namespace {

/// A handle value as MPI would hand it out (never 0 or 1, which the table reserves).
MPI_Request handle(std::uintptr_t v)
{
    MPI_Request h;
    std::memset(&h, 0, sizeof h);
    v = (v + 2) * 16;
    std::memcpy(&h, &v, sizeof(MPI_Request) < sizeof v ? sizeof(MPI_Request) : sizeof v);
    return h;
}

/// The registry never dereferences requests: fake, non-owning pointers are enough (the
/// aliasing constructor with no owner never touches the pointee).
std::shared_ptr<Request> fake(std::uintptr_t v)
{
    return std::shared_ptr<Request>(std::shared_ptr<Request>(),
                                    reinterpret_cast<Request*>((v + 1) * 64));
}

}  // namespace

TEST(Registry, InsertFindErase)
{
    HandleRegistry reg;
    EXPECT_TRUE(reg.empty());
    EXPECT_EQ(reg.find(handle(1)), nullptr);
    reg.insert(handle(1), fake(1));
    EXPECT_FALSE(reg.empty());
    EXPECT_EQ(reg.find(handle(1)), fake(1).get());
    EXPECT_EQ(reg.find(handle(2)), nullptr);
    EXPECT_EQ(reg.erase(handle(1)).get(), fake(1).get());
    EXPECT_EQ(reg.find(handle(1)), nullptr);
    EXPECT_TRUE(reg.empty());
    EXPECT_EQ(reg.erase(handle(1)), nullptr);
}

TEST(Registry, GrowsAndReusesErasedSlots)
{
    HandleRegistry reg;
    constexpr int kLive = 5000;
    for (int i = 0; i < kLive; ++i) {
        reg.insert(handle(i), fake(i));
    }
    for (int i = 0; i < kLive; ++i) {
        ASSERT_EQ(reg.find(handle(i)), fake(i).get()) << i;
    }
    // Churn: many insert/erase cycles with a small live set must keep every lookup right.
    for (int i = 0; i < kLive; ++i) {
        reg.erase(handle(i));
    }
    for (int round = 0; round < 200000; ++round) {
        const int v = kLive + round;
        reg.insert(handle(v), fake(v));
        ASSERT_EQ(reg.find(handle(v)), fake(v).get());
        if (round > 3) {
            ASSERT_EQ(reg.erase(handle(v - 3)).get(), fake(v - 3).get());
            ASSERT_EQ(reg.find(handle(v - 3)), nullptr);
        }
    }
    EXPECT_EQ(reg.find(handle(0)), nullptr);
}

TEST(Registry, ReadersNeverSeeAWrongValueWhileAWriterChurns)
{
    HandleRegistry reg;
    constexpr int kStable = 64;
    for (int i = 0; i < kStable; ++i) {
        reg.insert(handle(i), fake(i));
    }
    std::atomic<bool> stop{false};
    std::atomic<long> errors{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t) {
        readers.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < kStable; ++i) {
                    if (reg.find(handle(i)) != fake(i).get()) {
                        errors.fetch_add(1);
                    }
                }
            }
        });
    }
    for (int v = 1000; v < 60000; ++v) {  // forces several table generations
        reg.insert(handle(v), fake(v));
        if (v % 3 == 0) {
            reg.erase(handle(v - 1));
        }
    }
    stop = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(errors.load(), 0);
}
