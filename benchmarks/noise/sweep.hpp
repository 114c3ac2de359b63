// SPDX-License-Identifier: BSD-3-Clause
// The measurement loop of mpipcl-bench: plain-send baselines and the noisy-compute iterations.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "crew.hpp"
#include "options.hpp"
#include "transfer.hpp"

namespace mpipcl::bench {

/// Plain MPI_Send figures of one size S with P partitions, measured right before its points.
/// Every time is the fastest of the repetitions, until a 1-byte ack arrived (s).
struct Baseline {
    double latency = 0;         ///< L: half the fastest round trip of a 1-byte ping-pong
    double send_time = 0;       ///< one send of S (MPI_Isend + MPI_Waitall)
    double stream_time = 0;     ///< P back-to-back MPI_Isends of S/P (receives pre-posted)
    double part_send_time = 0;  ///< one send of S/P: the laggard's partition alone
    double clock_offset = 0;    ///< receiver clock minus sender clock

    /// B: the best plain bandwidth for all S bytes, as one message or as P messages of S/P
    /// (bytes/s, ack latency removed). A partitioned transfer may do either, so the ideal
    /// bound takes the faster: at 16-64 MiB one large MPI_Send is slower than 1-4 MiB pieces.
    [[nodiscard]] double bandwidth(std::size_t bytes) const
    {
        return static_cast<double>(bytes) / (std::min(send_time, stream_time) - latency);
    }

    /// B_part: plain bandwidth of one message of S/P bytes (bytes/s, ack latency removed).
    [[nodiscard]] double part_bandwidth(std::size_t part_bytes) const
    {
        return static_cast<double>(part_bytes) / (part_send_time - latency);
    }
};

/// The samples of one (mode, side, size) point; complete on rank 0.
struct PointResult {
    Mode mode = Mode::single;
    Side side = Side::send;
    std::size_t bytes = 0;
    Baseline baseline;
    std::vector<double> perceived;  ///< ack arrival - end of the laggard's compute (s)
    std::vector<double> comm;       ///< receiver's Wait return - end of the laggard's compute (s)
    std::vector<double> late;       ///< last thread's hand-over - end of the laggard's compute (s)
    std::vector<double> extra;      ///< receiver's Wait return - first arrival (s); recv side only
    /// Share of the units (0..1) the receiver saw before the laggard's compute ended; recv
    /// side only (moved_share).
    std::vector<double> moved;
    long verify_errors = 0;  ///< iterations with wrong data (both ranks know it)
    /// 1: the vectors hold one sample per iteration; R > 1: one median per repeat
    /// (combine_repeats).
    int repeats = 1;
};

/// The share (0..1) of @p units arrivals that came before the end of the laggard's compute:
/// arrival - clock_offset < compute_end. Arrivals are on the receiver's clock, compute_end on
/// the sender's, clock_offset = receiver clock minus sender clock.
[[nodiscard]] inline double moved_share(const double* arrivals, std::size_t units,
                                        double clock_offset, double compute_end)
{
    if (units == 0) {
        return NAN;
    }
    const auto early = std::count_if(arrivals, arrivals + units, [&](double arrival) {
        return arrival - clock_offset < compute_end;
    });
    return static_cast<double>(early) / static_cast<double>(units);
}

/// Runs the points of one configuration between rank 0 (sender) and rank 1 (receiver).
class Sweep {
   public:
    /// comm: exactly two ranks, MPI_ERRORS_RETURN. Collective.
    Sweep(const Options& options, MPI_Comm comm);

    /// L, the plain send times and the clock offset for this size. Collective.
    [[nodiscard]] Baseline measure_baseline(std::size_t bytes);

    /// Warm-up plus measured iterations of one point. Collective.
    [[nodiscard]] PointResult run_point(Mode mode, Side side, std::size_t bytes,
                                        const Baseline& baseline);

   private:
    /// Fastest time, over the baseline repetitions, to move bytes as pieces equal MPI_Isends
    /// into pre-posted receives, until the receiver's 1-byte ack arrived (sender; 0 on the
    /// receiver). Collective.
    [[nodiscard]] double fastest_send(std::size_t bytes, int pieces);

    struct Iteration {
        double compute_end = 0;  ///< sender clock: the scheduled end of the laggard's compute
        double last_ready = 0;   ///< sender clock: the last hand-over of any thread
        double ack = 0;          ///< sender clock
        double first = 0;        ///< receiver clock
        double done = 0;         ///< receiver clock
        /// Receiver clock, recv side: when each unit was first seen, in order of arrival.
        std::vector<double> arrivals;
    };

    void sender_iteration(Transfer& transfer, std::size_t bytes, int round, int laggard,
                          Iteration& out);
    /// Returns the first wrong byte under --verify, else npos.
    std::size_t receiver_iteration(Transfer& transfer, Side side, std::size_t bytes, int round,
                                   Iteration& out);

    const Options& options_;
    MPI_Comm comm_;
    int rank_ = 0;
    std::vector<unsigned char> buffer_;
    std::vector<double> ready_stamps_;
    std::unique_ptr<Crew> crew_;  ///< sender threads, rank 0 only
};

/// Every (size, mode, side) point of @p options: per size the baseline, then options.repeats
/// repeats of every mode, interleaved round-robin (each repeat starts one mode later), each
/// point's repeats combined (combine_repeats). Adds the points' verify errors to
/// *verify_errors; prints a progress line per point on rank 0's stderr. Collective.
[[nodiscard]] std::vector<PointResult> measure(const Options& options,
                                               const std::vector<Mode>& modes, MPI_Comm comm,
                                               long* verify_errors);

}  // namespace mpipcl::bench
