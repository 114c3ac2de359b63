// SPDX-License-Identifier: BSD-3-Clause
// The handle lookup behind every per-partition call, alone: a light reference (the calling
// thread's hazard cell, what MPI_Pready* and MPI_Parrived take) against a counted one (a
// sharded atomic counter, what the completion calls take), T threads entering one request as
// T Pready threads do. Local to each rank: no MPI call, so the ranks need no lockstep here.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "harness.hpp"
#include "requests/registry.hpp"

namespace mpipcl::bench {

namespace {

using requests::HandleRegistry;

/// A handle value as MPI hands them out (the registry only compares and hashes it).
MPI_Request fake_handle()
{
    MPI_Request h;
    std::memset(&h, 0, sizeof h);
    const std::uintptr_t v = 0x1230;
    std::memcpy(&h, &v, sizeof(MPI_Request) < sizeof v ? sizeof(MPI_Request) : sizeof v);
    return h;
}

/// One registry for every thread of a run (the registry never dereferences the request).
HandleRegistry& registry()
{
    static HandleRegistry* reg = [] {
        auto* r = new HandleRegistry();
        r->insert(fake_handle(), reinterpret_cast<requests::Request*>(std::uintptr_t{64}));
        return r;
    }();
    return *reg;
}

void bm_lookup(benchmark::State& state, bool light)
{
    HandleRegistry& reg = registry();
    const MPI_Request h = fake_handle();
    for (auto _ : state) {
        HandleRegistry::Ref r = light ? reg.acquire_light(h) : reg.acquire(h);
        benchmark::DoNotOptimize(r.get());
    }
}

}  // namespace

void register_lookup_benchmarks()
{
    for (const bool light : {true, false}) {
        benchmark::RegisterBenchmark(light ? "Lookup/light" : "Lookup/counted", bm_lookup, light)
            ->Threads(1)
            ->Threads(16);
    }
}

}  // namespace mpipcl::bench
