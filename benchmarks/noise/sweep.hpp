// SPDX-License-Identifier: BSD-3-Clause
// The measurement loop of mpipcl-bench: plain-send baselines and the noisy-compute iterations.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "crew.hpp"
#include "options.hpp"
#include "transfer.hpp"

namespace mpipcl::bench {

/// Plain MPI_Send figures of one size, measured right before that size's points.
struct Baseline {
    double latency = 0;       ///< L: half the fastest round trip of a 1-byte ping-pong (s)
    double send_time = 0;     ///< fastest MPI_Send(size) until its 1-byte ack arrived (s)
    double clock_offset = 0;  ///< receiver clock minus sender clock (s)

    /// B: plain MPI_Send bandwidth at this size (bytes/s), ack latency removed.
    [[nodiscard]] double bandwidth(std::size_t bytes) const
    {
        return static_cast<double>(bytes) / (send_time - latency);
    }
};

/// The samples of one (mode, side, size) point; complete on rank 0.
struct PointResult {
    Mode mode = Mode::single;
    Side side = Side::send;
    std::size_t bytes = 0;
    Baseline baseline;
    std::vector<double> perceived;  ///< ack arrival - last thread's hand-over (s)
    std::vector<double> comm;       ///< receiver's Wait return - last hand-over (s)
    std::vector<double> extra;      ///< receiver's Wait return - first arrival (s); recv side only
    long verify_errors = 0;         ///< iterations with wrong data (both ranks know it)
};

/// Runs the points of one configuration between rank 0 (sender) and rank 1 (receiver).
class Sweep {
   public:
    /// comm: exactly two ranks, MPI_ERRORS_RETURN. Collective.
    Sweep(const Options& options, MPI_Comm comm);

    /// L, B and the clock offset for this size. Collective.
    [[nodiscard]] Baseline measure_baseline(std::size_t bytes);

    /// Warm-up plus measured iterations of one point. Collective.
    [[nodiscard]] PointResult run_point(Mode mode, Side side, std::size_t bytes,
                                        const Baseline& baseline);

   private:
    struct Iteration {
        double last_ready = 0;  ///< sender clock
        double ack = 0;         ///< sender clock
        double first = 0;       ///< receiver clock
        double done = 0;        ///< receiver clock
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

}  // namespace mpipcl::bench
