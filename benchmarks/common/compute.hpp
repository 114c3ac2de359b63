// SPDX-License-Identifier: BSD-3-Clause
// The compute phase of the benchmarks: T threads compute P partitions (sleep, spin or a fixed
// amount of calibrated arithmetic), one laggard partition longer, handing each partition over
// as soon as it is computed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mpipcl::bench {

/// How a thread "computes" (BENCHMARK.md, "When the cores compute").
enum class ComputeKind {
    sleep,  ///< sleep until the deadline: idle cores, the data path alone
    spin,   ///< busy until the deadline, as the ICPP'22 programs do
    work,   ///< a fixed amount of arithmetic: CPU taken by anyone else lengthens it
};

[[nodiscard]] const char* compute_name(ComputeKind kind);
/// "sleep", "spin", "work"; false for anything else.
[[nodiscard]] bool parse_compute(const std::string& text, ComputeKind* kind);

/// A kernel that keeps one core busy with floating-point arithmetic on registers (no memory
/// traffic, never optimised away): run(units) takes units / units_per_ms() ms on an idle core.
class WorkKernel {
   public:
    /// Runs @p units units of arithmetic.
    static void run(std::uint64_t units);
    /// Units per millisecond on an idle core: the fastest of several timed runs (call while
    /// nothing else runs in the process; the benchmarks agree on one value with MPI).
    [[nodiscard]] static double calibrate();
};

/**
 * The compute phase of one iteration: @p partitions partitions over @p threads threads,
 * partition p computed by thread p % threads, each thread's partitions in increasing order.
 * Every partition takes C / ceil(P / T) ms, so the busiest thread computes C ms; the laggard
 * partition takes d = C * N / 100 ms more (and delays the rest of its thread's partitions).
 * With T = P this is one partition per thread, C ms each, the laggard C + d.
 */
class ComputePlan {
   public:
    using Clock = std::chrono::steady_clock;

    ComputePlan(ComputeKind kind, double compute_ms, double laggard_extra_ms, int partitions,
                int threads, double units_per_ms);

    [[nodiscard]] ComputeKind kind() const { return kind_; }
    [[nodiscard]] int threads() const { return threads_; }
    [[nodiscard]] int partitions() const { return partitions_; }

    /**
     * Thread @p thread's share of the iteration that began at @p start with laggard partition
     * @p laggard: for each of its partitions p in order, computes p, then calls
     * hand_over(p). sleep and spin end each partition at its deadline from @p start; work
     * computes its partition's units whenever it gets the core.
     */
    template <class HandOver>
    void run_share(int thread, Clock::time_point start, int laggard, HandOver&& hand_over) const
    {
        Clock::duration offset{0};
        for (int p = thread; p < partitions_; p += threads_) {
            const bool lags = p == laggard;
            offset += lags ? lagging_part_ : part_;
            compute(start + offset, lags ? lagging_units_ : part_units_);
            hand_over(p);
        }
    }

    /// The scheduled end of the compute phase (sleep, spin): the deadline of the last
    /// partition of the laggard's thread.
    [[nodiscard]] Clock::time_point scheduled_end(Clock::time_point start, int laggard) const;

    /// The scheduled hand-over of every partition (seconds after the start, in partition
    /// order) with laggard partition @p laggard: the ideal bound's schedule.
    [[nodiscard]] std::vector<double> handover_offsets(int laggard) const;

   private:
    void compute(Clock::time_point deadline, std::uint64_t units) const;

    ComputeKind kind_;
    int partitions_;
    int threads_;
    Clock::duration part_{};
    Clock::duration lagging_part_{};
    std::uint64_t part_units_ = 0;
    std::uint64_t lagging_units_ = 0;
};

}  // namespace mpipcl::bench
