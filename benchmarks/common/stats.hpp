// SPDX-License-Identifier: BSD-3-Clause
// Order statistics of a sample: minimum, 10th percentile, median, 90th percentile, maximum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace mpipcl::bench {

/// Order statistics; all NaN for an empty sample.
struct Stats {
    double min = NAN;
    double p10 = NAN;
    double median = NAN;
    double p90 = NAN;
    double max = NAN;
};

/// Percentiles interpolate linearly between the two nearest order statistics.
[[nodiscard]] inline Stats summarize(std::vector<double> sample)
{
    Stats s;
    if (sample.empty()) {
        return s;
    }
    std::sort(sample.begin(), sample.end());
    auto at = [&](double q) {
        const double pos = q * static_cast<double>(sample.size() - 1);
        const auto low = static_cast<std::size_t>(pos);
        const std::size_t high = std::min(low + 1, sample.size() - 1);
        return sample[low] + (pos - static_cast<double>(low)) * (sample[high] - sample[low]);
    };
    s.min = sample.front();
    s.p10 = at(0.1);
    s.median = at(0.5);
    s.p90 = at(0.9);
    s.max = sample.back();
    return s;
}

}  // namespace mpipcl::bench
