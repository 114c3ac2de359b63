// SPDX-License-Identifier: BSD-3-Clause
// What the micro-benchmarks share with their MPI main: the communicator and the timing rule.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <string>
#include <vector>

namespace mpipcl::bench {

/// The two ranks the micro-benchmarks run on; set up by main before registration.
struct Harness {
    MPI_Comm comm = MPI_COMM_NULL;  ///< duplicate of MPI_COMM_WORLD, MPI_ERRORS_RETURN
    int rank = 0;
};

[[nodiscard]] const Harness& harness();

/**
 * Reports this iteration's time as the slowest rank's (MPI_Allreduce MAX). Every rank then
 * hands Google Benchmark the same time and so takes the same iteration-count decisions, which
 * keeps the ranks in lockstep. Returns that time. Collective.
 */
double set_iteration_time(benchmark::State& state, double seconds);

/// Registers every micro-benchmark for the given "mpipcl_backend" values (already probed).
/// @p fixed_pready_rounds: the Pready benchmarks run a fixed number of rounds (the command
/// line did not set --benchmark_min_time): their timed window is a few microseconds of a round
/// that may take a millisecond, so a time-based run could take minutes.
void register_benchmarks(const std::vector<std::string>& backends, bool fixed_pready_rounds);
/// Registers Lookup/{light,counted}: the handle registry's two kinds of reference, without MPI.
void register_lookup_benchmarks();

}  // namespace mpipcl::bench
