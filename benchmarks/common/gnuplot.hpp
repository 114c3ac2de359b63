// SPDX-License-Identifier: BSD-3-Clause
// Running gnuplot on a script the benchmarks wrote.
#pragma once

#include <string>

namespace mpipcl::bench {

/// Runs "gnuplot script_path" and waits for it. A missing gnuplot or a failed run prints a
/// warning on stderr (prefixed "@p program: warning:") and nothing else. Spawns a process:
/// call after MPI_Finalize.
void run_gnuplot(const std::string& script_path, const char* program);

}  // namespace mpipcl::bench
