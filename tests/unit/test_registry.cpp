// SPDX-License-Identifier: BSD-3-Clause
// Handle registry: lookups, closing, growth, slot reuse, lock-free readers racing a writer,
// and the reference count behind the lifetime rule (close and wait_sole wait for holders).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
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

/// The registry never dereferences requests: fake pointers are enough.
Request* fake(std::uintptr_t v) { return reinterpret_cast<Request*>((v + 1) * 64); }

Request* find(const HandleRegistry& reg, MPI_Request h) { return reg.acquire(h).get(); }

bool erase(HandleRegistry& reg, MPI_Request h)
{
    HandleRegistry::Ref r = reg.acquire(h);
    return r && reg.close(r);
}

}  // namespace

TEST(Registry, InsertFindClose)
{
    HandleRegistry reg;
    EXPECT_TRUE(reg.empty());
    EXPECT_EQ(find(reg, handle(1)), nullptr);
    reg.insert(handle(1), fake(1));
    EXPECT_FALSE(reg.empty());
    EXPECT_EQ(find(reg, handle(1)), fake(1));
    EXPECT_EQ(find(reg, handle(2)), nullptr);
    EXPECT_TRUE(erase(reg, handle(1)));
    EXPECT_EQ(find(reg, handle(1)), nullptr);
    EXPECT_TRUE(reg.empty());
    EXPECT_FALSE(erase(reg, handle(1)));
}

TEST(Registry, GrowsAndReusesClosedSlots)
{
    HandleRegistry reg;
    constexpr int kLive = 5000;
    for (int i = 0; i < kLive; ++i) {
        reg.insert(handle(i), fake(i));
    }
    for (int i = 0; i < kLive; ++i) {
        ASSERT_EQ(find(reg, handle(i)), fake(i)) << i;
    }
    for (int i = 0; i < kLive; ++i) {
        ASSERT_TRUE(erase(reg, handle(i)));
    }
    // Churn: many insert/close cycles with a small live set keep every lookup right.
    for (int round = 0; round < 200000; ++round) {
        const int v = kLive + round;
        reg.insert(handle(v), fake(v));
        ASSERT_EQ(find(reg, handle(v)), fake(v));
        if (round > 3) {
            ASSERT_TRUE(erase(reg, handle(v - 3)));
            ASSERT_EQ(find(reg, handle(v - 3)), nullptr);
        }
    }
    EXPECT_EQ(find(reg, handle(0)), nullptr);
    EXPECT_EQ(reg.size(), 4);
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
                    if (find(reg, handle(i)) != fake(i)) {
                        errors.fetch_add(1);
                    }
                }
            }
        });
    }
    for (int v = 1000; v < 60000; ++v) {  // forces several table generations and slot reuse
        reg.insert(handle(v), fake(v));
        if (v % 3 == 0) {
            erase(reg, handle(v - 1));
        }
    }
    stop = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(errors.load(), 0);
}

TEST(Registry, CloseWaitsForEveryOtherHolder)
{
    HandleRegistry reg;
    reg.insert(handle(7), fake(7));
    std::atomic<bool> released{false};
    std::atomic<bool> holding{false};
    std::thread holder([&] {
        HandleRegistry::Ref r = reg.acquire(handle(7));
        ASSERT_TRUE(r);
        holding = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        released = true;
    });
    while (!holding) {
        std::this_thread::yield();
    }
    HandleRegistry::Ref mine = reg.acquire(handle(7));
    ASSERT_TRUE(mine);
    ASSERT_TRUE(reg.close(mine));
    EXPECT_TRUE(released.load()) << "close returned while another thread held a reference";
    EXPECT_FALSE(mine);
    holder.join();
    // A closed request cannot be acquired, and a second close of a stale ref is refused.
    EXPECT_FALSE(reg.acquire(handle(7)));
}

TEST(Registry, AcquireDuringCloseReportsClosing)
{
    HandleRegistry reg;
    reg.insert(handle(3), fake(3));
    HandleRegistry::Ref other = reg.acquire(handle(3));
    std::thread closer([&] {
        HandleRegistry::Ref r = reg.acquire(handle(3));
        reg.close(r);  // waits for `other`
    });
    bool closing = false;
    for (int i = 0; i < 100000 && !closing; ++i) {
        HandleRegistry::Ref r = reg.acquire(handle(3), &closing);
        EXPECT_TRUE(closing || r.get() == fake(3));
        std::this_thread::yield();
    }
    EXPECT_TRUE(closing);
    other.reset();
    closer.join();
    EXPECT_FALSE(reg.acquire(handle(3), &closing));
    EXPECT_FALSE(closing);
}

TEST(Registry, WaitSoleWaitsForTheOthers)
{
    HandleRegistry reg;
    reg.insert(handle(9), fake(9));
    HandleRegistry::Ref mine = reg.acquire(handle(9));
    std::atomic<bool> released{false};
    HandleRegistry::Ref other = reg.acquire(handle(9));
    std::thread t([&, o = std::move(other)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        released = true;
        o.reset();
    });
    HandleRegistry::wait_sole(mine);
    EXPECT_TRUE(released.load());
    t.join();
}

// ---- light references (per-thread hazard cells: MPI_Pready*, MPI_Parrived) ----

TEST(Registry, LightReferenceFindsAndReleases)
{
    HandleRegistry reg;
    reg.insert(handle(5), fake(5));
    {
        HandleRegistry::Ref a = reg.acquire_light(handle(5));
        ASSERT_TRUE(a);
        EXPECT_EQ(a.get(), fake(5));
        // A second light reference in the same thread falls back to a counted one.
        HandleRegistry::Ref b = reg.acquire_light(handle(5));
        ASSERT_TRUE(b);
        EXPECT_EQ(b.get(), fake(5));
    }
    EXPECT_FALSE(reg.acquire_light(handle(6)));
    EXPECT_TRUE(erase(reg, handle(5)));
    bool closing = true;
    EXPECT_FALSE(reg.acquire_light(handle(5), &closing));
    EXPECT_FALSE(closing);
}

TEST(Registry, CloseWaitsForALightHolder)
{
    HandleRegistry reg;
    reg.insert(handle(7), fake(7));
    std::atomic<bool> released{false};
    std::atomic<bool> holding{false};
    std::thread holder([&] {
        HandleRegistry::Ref r = reg.acquire_light(handle(7));
        ASSERT_TRUE(r);
        holding = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        released = true;
    });
    while (!holding) {
        std::this_thread::yield();
    }
    HandleRegistry::Ref mine = reg.acquire(handle(7));
    ASSERT_TRUE(reg.close(mine));
    EXPECT_TRUE(released.load()) << "close returned while a light reference was held";
    holder.join();
}

TEST(Registry, WaitSoleWaitsForALightHolder)
{
    HandleRegistry reg;
    reg.insert(handle(9), fake(9));
    HandleRegistry::Ref mine = reg.acquire(handle(9));
    std::atomic<bool> released{false};
    std::atomic<bool> holding{false};
    std::thread t([&] {
        HandleRegistry::Ref r = reg.acquire_light(handle(9));
        ASSERT_TRUE(r);
        holding = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        released = true;
    });
    while (!holding) {
        std::this_thread::yield();
    }
    HandleRegistry::wait_sole(mine);
    EXPECT_TRUE(released.load());
    t.join();
}

// Readers take light references on a few handles while the owner closes and re-inserts them
// (same handle values, a new request each time, as MPI reuses handle values): no reader may
// still hold a request the owner has declared freed.
TEST(Registry, LightReadersNeverHoldAClosedRequest)
{
    HandleRegistry reg;
    constexpr int kHandles = 4;
    constexpr int kGenerations = 1000;
    // gen_alive[g]: request generation g is live (set before insert, cleared after close).
    std::vector<std::atomic<int>> gen_alive(kHandles * (kGenerations + 1));
    std::vector<int> current(kHandles);
    auto req_of = [](int g) { return fake(static_cast<std::uintptr_t>(g)); };
    auto gen_of = [](Request* r) {
        return static_cast<int>(reinterpret_cast<std::uintptr_t>(r) / 64 - 1);
    };
    for (int i = 0; i < kHandles; ++i) {
        current[i] = i;
        gen_alive[i] = 1;
        reg.insert(handle(i), req_of(i));
    }
    std::atomic<bool> stop{false};
    std::atomic<long> errors{0};
    std::atomic<long> held{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t) {
        readers.emplace_back([&, t] {
            for (unsigned n = t; !stop.load(std::memory_order_relaxed); ++n) {
                HandleRegistry::Ref r = reg.acquire_light(handle(n % kHandles));
                if (!r) {
                    continue;
                }
                const int g = gen_of(r.get());
                for (int k = 0; k < 8; ++k) {  // stay inside a little
                    if (gen_alive[g].load() != 1) {
                        errors.fetch_add(1);
                    }
                }
                held.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    // Churn only while the readers run (on a loaded machine they may not get a core at once):
    // every 50 generations, wait (up to 1 s) until they took new references.
    const auto readers_moved = [&held](long since) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (held.load() <= since && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
        }
        return held.load();
    };
    long seen = 0;
    int next_gen = kHandles;
    for (int round = 0; round < kGenerations; ++round) {
        if (round % 50 == 0) {
            seen = readers_moved(seen);
        }
        const int i = round % kHandles;
        HandleRegistry::Ref mine = reg.acquire(handle(i));
        ASSERT_TRUE(mine);
        ASSERT_TRUE(reg.close(mine));
        gen_alive[current[i]] = 0;  // "freed": no reader may be inside it any more
        current[i] = next_gen++;
        gen_alive[current[i]] = 1;
        reg.insert(handle(i), req_of(current[i]));
    }
    stop = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(errors.load(), 0);
    EXPECT_GT(held.load(), 0);
}

TEST(Registry, LightLookupHintFollowsTheHandle)
{
    // A thread's light lookups remember its last handle's slot. The hint must never outlive
    // what it names: the handle freed and reused for a request in another slot, or the slot
    // reused for another handle.
    HandleRegistry reg;
    reg.insert(handle(1), fake(1));
    EXPECT_EQ(reg.acquire_light(handle(1)).get(), fake(1));  // now the hint
    EXPECT_EQ(reg.acquire_light(handle(1)).get(), fake(1));  // through the hint
    ASSERT_TRUE(erase(reg, handle(1)));
    EXPECT_FALSE(reg.acquire_light(handle(1)));
    // The freed slot goes to handle 2; handle 1 comes back in a new slot.
    reg.insert(handle(2), fake(2));
    reg.insert(handle(1), fake(11));
    EXPECT_EQ(reg.acquire_light(handle(1)).get(), fake(11));
    EXPECT_EQ(reg.acquire_light(handle(2)).get(), fake(2));
    EXPECT_EQ(reg.acquire_light(handle(1)).get(), fake(11));
    ASSERT_TRUE(erase(reg, handle(1)));
    bool closing = true;
    EXPECT_FALSE(reg.acquire_light(handle(1), &closing));
    EXPECT_FALSE(closing);
    EXPECT_EQ(reg.acquire_light(handle(2)).get(), fake(2));
}

TEST(Registry, LightLookupHintIsPerRegistry)
{
    // The same handle value in two registries: the hint left by one must not answer for the
    // other, nor survive the registry it came from.
    auto first = std::make_unique<HandleRegistry>();
    first->insert(handle(3), fake(3));
    EXPECT_EQ(first->acquire_light(handle(3)).get(), fake(3));
    HandleRegistry second;
    EXPECT_FALSE(second.acquire_light(handle(3)));
    second.insert(handle(3), fake(33));
    EXPECT_EQ(second.acquire_light(handle(3)).get(), fake(33));
    EXPECT_EQ(first->acquire_light(handle(3)).get(), fake(3));
    first.reset();
    EXPECT_EQ(second.acquire_light(handle(3)).get(), fake(33));
}
