// SPDX-License-Identifier: BSD-3-Clause
// The measurement loop of mpipcl-bench: plain-send baselines and the noisy-compute iterations.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "compute.hpp"
#include "cpu_usage.hpp"
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
    /// Pipeline side, per iteration (PipelineRound): the round trip (s), the median
    /// per-partition round trip (s), the share of the round trip inside the compute phase, and
    /// the reply partitions that arrived before the last data partition was ready.
    std::vector<double> round_trip;
    std::vector<double> part_round_trip;
    std::vector<double> inside;
    std::vector<double> early_replies;
    /// Per iteration: the sender's compute phase (its start to the last partition's compute
    /// end, hand-overs included) over the same phase without communication (compute_reference).
    std::vector<double> slowdown;
    /// Per run (one value; one per repeat once combined), per measured iteration: CPU seconds
    /// of the whole process, of its progress thread, and that thread's wake-ups, on the
    /// sender (rank 0) and on the receiver (rank 1). NaN without a progress thread.
    std::vector<double> send_cpu, send_progress_cpu, send_wakeups;
    std::vector<double> recv_cpu, recv_progress_cpu, recv_wakeups;
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

/// One pipeline round on the sender's clock (seconds), as the ICPP'22 overhead and early_bird
/// programs define it: thread t's interval runs from its MPI_Pready's return to the arrival of
/// its reply partition.
struct PipelineRound {
    /// The length of the union of the T intervals: the time some partition's round trip was
    /// under way (the numerator of the ICPP'22 overhead).
    double round_trip = NAN;
    double part_round_trip = NAN;  ///< the median over t of one interval's length
    /// The share of round_trip before @p compute_end, the end of the compute phase (the
    /// ICPP'22 early_bird, as a share).
    double inside = NAN;
    /// Reply partitions that arrived before the last thread began its MPI_Pready, i.e. while
    /// some data partition was not ready yet (at most T - 1 with one laggard).
    double early_replies = NAN;
};

/// The round of T threads: thread t began MPI_Pready at @p ready[t], it returned at
/// @p handed[t], and thread t saw its reply arrive at @p replies[t].
[[nodiscard]] inline PipelineRound pipeline_round(const std::vector<double>& ready,
                                                  const std::vector<double>& handed,
                                                  const std::vector<double>& replies,
                                                  double compute_end)
{
    PipelineRound r;
    const std::size_t n = handed.size();
    if (n == 0) {
        return r;
    }
    std::vector<std::pair<double, double>> spans(n);
    std::vector<double> lengths(n);
    for (std::size_t t = 0; t < n; ++t) {
        spans[t] = {handed[t], std::max(handed[t], replies[t])};
        lengths[t] = spans[t].second - spans[t].first;
    }
    std::sort(spans.begin(), spans.end());
    double total = 0;
    double before = 0;
    const auto add = [&](double lo, double hi) {
        total += hi - lo;
        before += std::max(0.0, std::min(hi, compute_end) - lo);
    };
    double lo = spans[0].first;
    double hi = spans[0].second;
    for (std::size_t t = 1; t < n; ++t) {
        if (spans[t].first > hi) {
            add(lo, hi);
            lo = spans[t].first;
        }
        hi = std::max(hi, spans[t].second);
    }
    add(lo, hi);
    std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(n / 2),
                     lengths.end());
    const double upper = lengths[n / 2];
    const double lower =
        n % 2 == 1 ? upper : *std::max_element(lengths.begin(), lengths.begin() + n / 2);
    const double last_ready = *std::max_element(ready.begin(), ready.end());
    r.round_trip = total;
    r.part_round_trip = (lower + upper) / 2;
    r.inside = total > 0 ? before / total : 0.0;
    r.early_replies = static_cast<double>(std::count_if(
        replies.begin(), replies.end(), [&](double reply) { return reply < last_ready; }));
    return r;
}

/// Runs the points of one configuration between rank 0 (sender) and rank 1 (receiver).
class Sweep {
   public:
    /// comm: exactly two ranks, MPI_ERRORS_RETURN. Collective.
    Sweep(const Options& options, MPI_Comm comm);

    /// L, the plain send times and the clock offset for this size. Collective.
    [[nodiscard]] Baseline measure_baseline(std::size_t bytes);

    /// Warm-up plus measured iterations of one point; @p reference is the compute phase
    /// without communication (compute_reference; seconds, sender). Collective.
    [[nodiscard]] PointResult run_point(Mode mode, Side side, std::size_t bytes,
                                        const Baseline& baseline, double reference);

    /// The sender's compute phase with no communication at all, the same iterations and
    /// laggards as a point: the median phase (s) on the sender, 0 on the receiver, which sleeps
    /// meanwhile. Collective.
    [[nodiscard]] double compute_reference();

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
        /// Receiver clock, recv and pipeline sides: when each unit was first seen, in order of
        /// arrival.
        std::vector<double> arrivals;
        PipelineRound pipeline;  ///< pipeline side (sender)
        double phase = 0;        ///< sender: the compute phase, start to the last compute end
    };

    /// Sender: thread @p thread's share of one iteration that began at @p start: compute
    /// each of its partitions, stamp it in ready_stamps_, then hand_over(p).
    template <class HandOver>
    void compute_share(int thread, ComputePlan::Clock::time_point start, int laggard,
                       HandOver&& hand_over)
    {
        plan_.run_share(thread, start, laggard, [&](int p) {
            ready_stamps_[static_cast<std::size_t>(p)] = now_seconds();
            hand_over(p);
        });
    }
    /// The end of the compute phase that began at @p start: the scheduled end of sleep and
    /// spin, the last compute end stamped (work); sets out.compute_end, last_ready and phase.
    void end_of_compute(ComputePlan::Clock::time_point start, int laggard, Iteration& out) const;
    [[nodiscard]] static double now_seconds();
    /// Under --verify, fills the send partitions of compute thread @p thread for @p round.
    void fill_share(int thread, std::size_t part, int round);

    void sender_iteration(Transfer& transfer, std::size_t bytes, int round, int laggard,
                          Iteration& out);
    /// Returns the first wrong byte under --verify, else npos.
    std::size_t receiver_iteration(Transfer& transfer, Side side, std::size_t bytes, int round,
                                   Iteration& out);
    /// Pipeline side, sender: data leaves through @p data, the replies come back through
    /// @p reply. Returns whether a reply byte was wrong (--verify).
    bool pipeline_sender(Transfer& data, Transfer& reply, std::size_t bytes, int round, int laggard,
                         Iteration& out);
    /// Pipeline side, receiver: thread t polls data part t, then hands over reply part t.
    /// Returns the first wrong data byte under --verify, else npos.
    std::size_t pipeline_receiver(Transfer& data, Transfer& reply, std::size_t bytes, int round,
                                  Iteration& out);
    /// Under --verify, the first byte of buffer_[0, bytes) that is not pattern(round), else
    /// npos.
    [[nodiscard]] std::size_t first_mismatch(std::size_t bytes, int round) const;

    const Options& options_;
    ComputePlan plan_;
    MPI_Comm comm_;
    int rank_ = 0;
    std::vector<unsigned char> buffer_;
    std::vector<unsigned char> reply_buffer_;  ///< pipeline side: T replies of reply_bytes
    std::vector<double> ready_stamps_;         ///< sender: each thread's MPI_Pready call
    std::vector<double> handed_stamps_;        ///< sender, pipeline: each MPI_Pready's return
    std::vector<double> reply_stamps_;         ///< sender, pipeline: each thread's reply arrival
    std::vector<double> part_stamps_;          ///< receiver, pipeline: each thread's data arrival
    /// The compute threads on rank 0; with the pipeline side also the receiver's threads on
    /// rank 1 (as many).
    std::unique_ptr<Crew> crew_;
};

/// Every (size, mode, side) point of @p options: per size the baseline, then options.repeats
/// repeats of every mode, interleaved round-robin (each repeat starts one mode later), each
/// point's repeats combined (combine_repeats). Adds the points' verify errors to
/// *verify_errors; prints a progress line per point on rank 0's stderr. Collective.
[[nodiscard]] std::vector<PointResult> measure(const Options& options,
                                               const std::vector<Mode>& modes, MPI_Comm comm,
                                               long* verify_errors);

}  // namespace mpipcl::bench
