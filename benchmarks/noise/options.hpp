// SPDX-License-Identifier: BSD-3-Clause
// Command-line options of mpipcl-bench: the modes, sizes and noise model of one run.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "compute.hpp"

namespace mpipcl::bench {

/// How the sender moves its buffer (the paper's single-send, multi-send, and partitioned).
enum class Mode {
    single,
    multi,
    part_persistent,
    part_rma,
    part_auto,  ///< mpipcl_backend=auto: what a user gets by default
    part_native,
};

/// Which experiment: sender-perceived bandwidth (send), receiver early notification (recv), or
/// a pipeline of per-partition replies (pipeline: the receiver's thread t answers data
/// partition t with reply partition t, which sender thread t polls; the ICPP'22 overhead and
/// early_bird programs).
enum class Side {
    send,
    recv,
    pipeline,
};

/// --collective: which collective the run measures (none: the point-to-point sides). From
/// gather on, block-wise: every rank sends one block (gather, allgather) or one per rank or
/// neighbour (alltoall, neighbor: MPI_Neighbor_alltoall on a periodic cartesian grid).
enum class CollectiveKind {
    none,
    bcast,
    reduce,
    allreduce,
    gather,
    allgather,
    alltoall,
    neighbor,
};

/// Every side, in the order the driver runs and reports them.
inline constexpr Side kAllSides[] = {Side::send, Side::recv, Side::pipeline};

/// Every mode, in the order the driver runs and reports them.
inline constexpr Mode kAllModes[] = {Mode::single,   Mode::multi,     Mode::part_persistent,
                                     Mode::part_rma, Mode::part_auto, Mode::part_native};

[[nodiscard]] const char* mode_name(Mode mode);
[[nodiscard]] const char* side_name(Side side);
/// The --collective name of @p kind ("none" for none).
[[nodiscard]] const char* collective_name(CollectiveKind kind);
/// The "mpipcl_backend" info value of a partitioned mode; empty for single and multi.
[[nodiscard]] std::string backend_of(Mode mode);

struct Options {
    std::vector<Mode> modes{std::begin(kAllModes), std::end(kAllModes)};
    bool modes_given = false;  ///< --modes was passed: report unsupported ones as skipped
    std::vector<std::size_t> sizes{64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
    int partitions = 16;  ///< send partitions = receive partitions
    /// --threads: compute threads per computing rank; partition p belongs to thread p % T.
    /// 0 (the default): one per partition.
    int threads = 0;
    /// --compute: how the threads compute (sleep, spin, work).
    ComputeKind compute = ComputeKind::sleep;
    /// --compute work: arithmetic units per millisecond, calibrated at start (main; not an
    /// option).
    double work_units_per_ms = 0;
    double compute_ms = 10.0;
    double noise_pct = 4.0;
    std::vector<Side> sides{Side::send, Side::recv};
    /// Pipeline side: bytes of each reply partition (the ICPP'22 programs send 1).
    int reply_bytes = 1;
    int iterations = 20;
    int warmup = 2;
    /// Repeats of every point, modes interleaved round-robin (rotated per repeat); the
    /// reported sample of a point is then its repeat medians.
    int repeats = 1;
    unsigned seed = 1;  ///< picks the laggard thread of each iteration
    bool verify = false;
    std::string csv;
    std::string plot;
    /// --write-tuning FILE: measure part-persistent against part-rma (send side, 3 repeats
    /// unless given) and write the tuning file of mpipcl_backend=auto to FILE (tune.hpp). Not
    /// "--tune": Open MPI's mpirun takes that flag from anywhere on its command line.
    std::string tune;
    /// --collective: measure this collective over every rank instead of the point-to-point
    /// sides (collective.hpp).
    CollectiveKind collective = CollectiveKind::none;
    bool sides_given = false;
    bool repeats_given = false;
    bool help = false;

    /// The compute threads T of a computing rank (--threads, or one per partition).
    [[nodiscard]] int compute_threads() const
    {
        return threads > 0 && threads < partitions ? threads : partitions;
    }

    /// The compute phase of one iteration on a computing rank.
    [[nodiscard]] ComputePlan compute_plan() const
    {
        return ComputePlan(compute, compute_ms, compute_ms * noise_pct / 100.0, partitions,
                           compute_threads(), work_units_per_ms);
    }

    /// The laggard's extra compute time d = C * N / 100, in seconds.
    [[nodiscard]] double laggard_delay() const { return compute_ms * noise_pct / 100.0 / 1e3; }
};

/// The parsed options, or a message saying what is wrong with the command line.
struct ParsedOptions {
    Options options;
    std::string error;  ///< non-empty: the command line is invalid
};

/// Parses argv identically on every rank (no MPI calls).
[[nodiscard]] ParsedOptions parse_options(int argc, char** argv);

/// The --help text.
[[nodiscard]] std::string usage();

}  // namespace mpipcl::bench
