// SPDX-License-Identifier: BSD-3-Clause
// The compute phase of the benchmarks: sleep, spin or calibrated arithmetic per partition.
#include "compute.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace mpipcl::bench {

namespace {

using Clock = std::chrono::steady_clock;

Clock::duration milliseconds(double ms)
{
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(ms));
}

/// Operations of one unit: 4 independent multiply-add chains of 16 steps (about 100 ns).
constexpr int kStepsPerUnit = 16;
constexpr std::uint64_t kCalibrationUnits = 20000;
constexpr int kCalibrationRuns = 7;

}  // namespace

const char* compute_name(ComputeKind kind)
{
    switch (kind) {
        case ComputeKind::sleep:
            return "sleep";
        case ComputeKind::spin:
            return "spin";
        case ComputeKind::work:
            return "work";
    }
    return "?";
}

bool parse_compute(const std::string& text, ComputeKind* kind)
{
    for (const ComputeKind k : {ComputeKind::sleep, ComputeKind::spin, ComputeKind::work}) {
        if (text == compute_name(k)) {
            *kind = k;
            return true;
        }
    }
    return false;
}

void WorkKernel::run(std::uint64_t units)
{
    // Four independent chains, so the kernel runs at the FPU's throughput, not its latency;
    // the values stay near 1 (no denormals, no overflow). The asm statements make the compiler
    // keep every step.
    double a = 1.0;
    double b = 1.1;
    double c = 1.2;
    double d = 1.3;
    for (std::uint64_t u = 0; u < units; ++u) {
        for (int s = 0; s < kStepsPerUnit; ++s) {
            a = a * 0.999999 + 1e-6;
            b = b * 0.999999 + 1e-6;
            c = c * 0.999999 + 1e-6;
            d = d * 0.999999 + 1e-6;
        }
        asm volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d));
    }
}

double WorkKernel::calibrate()
{
    double fastest = INFINITY;
    run(kCalibrationUnits);  // warm the core's clock up
    for (int k = 0; k < kCalibrationRuns; ++k) {
        const auto t0 = Clock::now();
        run(kCalibrationUnits);
        fastest =
            std::min(fastest, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return static_cast<double>(kCalibrationUnits) / fastest;
}

ComputePlan::ComputePlan(ComputeKind kind, double compute_ms, double laggard_extra_ms,
                         int partitions, int threads, double units_per_ms)
    : kind_(kind), partitions_(partitions), threads_(std::min(threads, partitions))
{
    const int per_thread = (partitions_ + threads_ - 1) / threads_;
    const double part_ms = compute_ms / per_thread;
    part_ = milliseconds(part_ms);
    lagging_part_ = milliseconds(part_ms + laggard_extra_ms);
    part_units_ = static_cast<std::uint64_t>(std::llround(part_ms * units_per_ms));
    lagging_units_ =
        static_cast<std::uint64_t>(std::llround((part_ms + laggard_extra_ms) * units_per_ms));
}

ComputePlan::Clock::time_point ComputePlan::scheduled_end(Clock::time_point start,
                                                          int laggard) const
{
    Clock::duration longest{0};
    for (int t = 0; t < threads_; ++t) {
        Clock::duration total{0};
        for (int p = t; p < partitions_; p += threads_) {
            total += p == laggard ? lagging_part_ : part_;
        }
        longest = std::max(longest, total);
    }
    return start + longest;
}

std::vector<double> ComputePlan::handover_offsets(int laggard) const
{
    std::vector<double> offsets(static_cast<std::size_t>(partitions_));
    for (int t = 0; t < threads_; ++t) {
        Clock::duration total{0};
        for (int p = t; p < partitions_; p += threads_) {
            total += p == laggard ? lagging_part_ : part_;
            offsets[static_cast<std::size_t>(p)] = std::chrono::duration<double>(total).count();
        }
    }
    return offsets;
}

void ComputePlan::compute(Clock::time_point deadline, std::uint64_t units) const
{
    switch (kind_) {
        case ComputeKind::sleep:
            std::this_thread::sleep_until(deadline);
            break;
        case ComputeKind::spin:
            while (Clock::now() < deadline) {
            }
            break;
        case ComputeKind::work:
            WorkKernel::run(units);
            break;
    }
}

}  // namespace mpipcl::bench
