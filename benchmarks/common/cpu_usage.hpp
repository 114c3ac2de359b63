// SPDX-License-Identifier: BSD-3-Clause
// What a process and mpipcl's progress thread cost in CPU: getrusage and /proc.
#pragma once

namespace mpipcl::bench {

/// CPU consumed so far (seconds), and the progress thread's wake-ups.
struct CpuSample {
    double process = 0;  ///< user + system time of the whole process (getrusage)
    /// The thread named MPIPCL_PROGRESS_THREAD_NAME ("mpipcl-progress"): its time on a CPU
    /// (/proc/self/task/<tid>/schedstat) and its voluntary context switches (each one a sleep,
    /// ended by a wake-up). NaN while the process has no such thread.
    double progress = 0;
    double progress_wakeups = 0;
};

/// Reads the figures now (a few small /proc reads: keep it out of timed regions).
[[nodiscard]] CpuSample cpu_sample();

/// Per iteration between two samples: (to - from) / iterations, field by field.
[[nodiscard]] CpuSample cpu_per_iteration(const CpuSample& from, const CpuSample& to,
                                          int iterations);

}  // namespace mpipcl::bench
