// SPDX-License-Identifier: BSD-3-Clause
// Output of mpipcl-bench: derived metrics, the stdout table, the CSV file and the gnuplot plot.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "options.hpp"
#include "stats.hpp"
#include "sweep.hpp"
#include "text.hpp"

namespace mpipcl::bench {

/// What the run was made with, printed next to every result.
struct RunInfo {
    std::string mpi_library;                            ///< first line of MPI_Get_library_version
    std::string mpipcl_version;                         ///< MPIPCL_VERSION
    std::vector<std::pair<Mode, std::string>> skipped;  ///< requested but unsupported, with why
};

/// The figures reported for one point (times in microseconds, bandwidths in MiB/s).
struct Metrics {
    Stats perceived_us;
    Stats perceived_bw;
    Stats extra_us;
    Stats comm_us;
    Stats late_us;
    Stats moved;               ///< share of the units arrived before the laggard's compute ended
    Stats round_trip_us;       ///< pipeline: union of the per-partition round trips per round
    Stats part_round_trip_us;  ///< pipeline: median per-partition round trip per round
    Stats inside;              ///< pipeline: share of the round trip inside the compute phase
    Stats early_replies;       ///< pipeline: replies that arrived before the last data partition
    Stats slowdown;            ///< sender's compute phase / the same compute without communication
    /// Per iteration, median over repeats: CPU milliseconds of the process and of its progress
    /// thread, and the progress thread's wake-ups, on the sender and on the receiver.
    double send_cpu_ms = NAN;
    double send_progress_ms = NAN;
    double send_wakeups = NAN;
    double recv_cpu_ms = NAN;
    double recv_progress_ms = NAN;
    double recv_wakeups = NAN;
    double latency_us = 0;   ///< L
    double one_send_bw = 0;  ///< one send of S
    double stream_bw = 0;    ///< P MPI_Isends of S/P
    double send_bw = 0;      ///< B: the faster of the two above
    double part_bw = 0;      ///< B_part: one send of S/P
    double ideal_us = 0;     ///< T* = L + max(S/(P*B_part), S/B - d)
    double efficiency = 0;   ///< T* / median perceived time
};

[[nodiscard]] Metrics derive(const PointResult& point, const Options& options);

/**
 * The ideal bound's head start: how much of a plain send of all S bytes (@p send_time = S/B)
 * can happen before the compute ends, given when each partition is handed over (the compute
 * plan: T threads, one laggard partition), the median over the laggard's position. With one
 * thread per partition it is d, the laggard's delay: T* = L + max(S/(P*B_part), S/B - d).
 */
[[nodiscard]] double ideal_head_start(const Options& options, double send_time);

/// Pipeline side: the median round trip of @p point over that of single at the same size (the
/// ICPP'22 overhead: one MPI_Send of the whole buffer and one reply, after the threads joined);
/// NaN for other sides or without a single point.
[[nodiscard]] double overhead(const std::vector<PointResult>& points, const PointResult& point,
                              const Options& options);

/// The repeats of one point (same mode, side, size) as one point whose samples are the
/// repeats' medians (perceived, comm, late, extra, moved and the pipeline figures; verify
/// errors summed). One repeat: itself.
[[nodiscard]] PointResult combine_repeats(const std::vector<PointResult>& repeats);

/// One partitioned mode at one (size, side) against the P plain MPI_Isends ("multi").
struct Ratio {
    std::size_t bytes = 0;
    Side side = Side::send;
    Mode mode = Mode::part_persistent;
    double to_multi = NAN;        ///< median perceived time / multi's (< 1: partitioned is faster)
    double efficiency = NAN;      ///< T* / median perceived time
    double extra_to_multi = NAN;  ///< recv side: median extra compute time / multi's
    bool best = false;  ///< the lowest to_multi among the forced part modes (not part-auto)
};

/// Every part-* point that has a multi point of the same size and side, in point order.
[[nodiscard]] std::vector<Ratio> ratios(const std::vector<PointResult>& points,
                                        const Options& options);

/// The summary lines: per (size, side), each part mode's ratio to multi and efficiency, the
/// best forced part mode and, with part-auto, auto's perceived time over the best's.
void print_summary(std::FILE* out, std::vector<Ratio> ratios);

/// "64 KiB", "1 MiB", "1000 B".
[[nodiscard]] std::string format_size(std::size_t bytes);

/// One line for stderr after a point finished.
[[nodiscard]] std::string progress_line(const PointResult& point, const Options& options, int done,
                                        int total);

void print_table(std::FILE* out, const Options& options, const RunInfo& info,
                 const std::vector<PointResult>& points);

/// The CSV: a header row, then one row per point with every parameter and statistic.
void write_csv(std::FILE* out, const Options& options, const RunInfo& info,
               const std::vector<PointResult>& points);

/**
 * Writes a gnuplot script beside png_path (".png" replaced by ".gp") and runs gnuplot on it:
 * perceived bandwidth against total size, one line per mode, plus the ideal S/T*; with recv-side
 * points a second panel shows communication and extra compute time. Beside it, "-ratio.png"
 * (perceived time over multi's) and "-cost.png" (compute slowdown and the CPU per iteration of
 * sender and receiver). A missing gnuplot or a failed run only prints a warning. Spawns a
 * process: call after MPI_Finalize.
 */
void write_plot(const std::string& png_path, const Options& options, const RunInfo& info,
                const std::vector<PointResult>& points);

}  // namespace mpipcl::bench
