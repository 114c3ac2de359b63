// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --collective: the noise / early-bird pattern on a collective over R ranks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"

namespace mpipcl::bench {

/// One (mode, size) point of a collective run: the perceived times of its measured iterations,
/// or, with --repeats, the median of each repeat.
struct CollectivePoint {
    Mode mode = Mode::single;
    std::size_t bytes = 0;
    std::vector<double> perceived;  ///< seconds
    /// The slowest contributing rank's compute phase over the same compute without
    /// communication, per iteration (or per repeat, its median).
    std::vector<double> slowdown;
    /// Process CPU seconds per iteration, the median over the ranks, one per run.
    std::vector<double> cpu;
};

/// Checks the command line for a collective run (sizes a multiple of 8 * partitions, modes
/// that have a collective form). Empty when fine.
[[nodiscard]] std::string collective_usage_error(const Options& options);

/// The modes of a collective run: --modes, or every mode that has a collective form; modes
/// without one (part-native: no MPI has partitioned collectives) are recorded in info.skipped.
[[nodiscard]] std::vector<Mode> collective_modes(const Options& options, RunInfo& info);

/// Measures every (size, mode) point; @p verify_errors counts wrong result elements on this
/// rank. Collective over @p comm (any number of ranks >= 2).
[[nodiscard]] std::vector<CollectivePoint> measure_collective(const Options& options,
                                                              const std::vector<Mode>& modes,
                                                              MPI_Comm comm, long* verify_errors);

/// The table for the person who ran it (rank 0).
void print_collective_table(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                            const std::vector<CollectivePoint>& points);

/// One CSV row per (mode, size) with every parameter and statistic (rank 0).
void write_collective_csv(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                          const std::vector<CollectivePoint>& points);

}  // namespace mpipcl::bench
