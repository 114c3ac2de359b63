// SPDX-License-Identifier: BSD-3-Clause
// MPI main of mpipcl-gbench: rank 0 reports, the other rank runs the same benchmarks silently.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <mpipcl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness.hpp"
#include "mpi_util.hpp"

using namespace mpipcl::bench;

namespace {

Harness the_harness;

/// Swallows everything: ranks other than 0 must run the benchmarks but not print them.
class NullReporter final : public benchmark::BenchmarkReporter {
   public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

/// --help: Google Benchmark prints this and then exits, so finalize MPI first.
void print_help_and_finalize()
{
    if (the_harness.rank == 0) {
        benchmark::PrintDefaultHelp();
    }
    MPI_Finalize();
}

/// Backends to measure: persistent and rma (mpipcl), and the MPI's own calls where it has
/// them; a backend that fails its probe is announced and left out. Collective.
std::vector<std::string> usable_backends()
{
    std::vector<std::string> candidates{"persistent", "rma"};
#if MPIPCL_MPI_HAS_PARTITIONED  // the MPI declares and defines the MPI-4.0 calls
    candidates.emplace_back("native");
#endif
    std::vector<std::string> backends;
    for (const auto& backend : candidates) {
        const Probe probe = probe_backend(the_harness.comm, backend, 1);
        if (probe.supported) {
            backends.push_back(backend);
        } else if (the_harness.rank == 0) {
            std::fprintf(stderr, "mpipcl-gbench: skipping backend %s: %s\n", backend.c_str(),
                         probe.reason.c_str());
        }
    }
    return backends;
}

}  // namespace

namespace mpipcl::bench {

const Harness& harness() { return the_harness; }

double set_iteration_time(benchmark::State& state, double seconds)
{
    double slowest = 0;
    check(MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, the_harness.comm),
          "MPI_Allreduce");
    state.SetIterationTime(slowest);
    return slowest;
}

}  // namespace mpipcl::bench

int main(int argc, char** argv)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &the_harness.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || provided < MPI_THREAD_MULTIPLE) {
        if (the_harness.rank == 0) {
            std::fprintf(stderr, "mpipcl-gbench: needs exactly 2 ranks and MPI_THREAD_MULTIPLE\n");
        }
        MPI_Finalize();
        return 2;
    }
    check(MPI_Comm_dup(MPI_COMM_WORLD, &the_harness.comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(the_harness.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");

    // Only rank 0 writes --benchmark_out; the other rank must not even open (truncate) it.
    std::vector<char*> args(argv, argv + argc);
    if (the_harness.rank != 0) {
        args.erase(std::remove_if(
                       args.begin() + 1, args.end(),
                       [](const char* a) { return std::strncmp(a, "--benchmark_out", 15) == 0; }),
                   args.end());
    }
    // Before Initialize, which removes the flags it recognised from args.
    const bool min_time_given = std::any_of(args.begin() + 1, args.end(), [](const char* a) {
        return std::strncmp(a, "--benchmark_min_time", 20) == 0;
    });
    int arg_count = static_cast<int>(args.size());
    benchmark::Initialize(&arg_count, args.data(), print_help_and_finalize);
    if (benchmark::ReportUnrecognizedArguments(arg_count, args.data())) {
        MPI_Finalize();
        return 2;
    }

    register_benchmarks(usable_backends(), !min_time_given);
    register_lookup_benchmarks();
    if (the_harness.rank == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        NullReporter null;
        benchmark::RunSpecifiedBenchmarks(&null);
    }
    benchmark::Shutdown();
    MPI_Comm_free(&the_harness.comm);
    MPI_Finalize();
    return 0;
}
