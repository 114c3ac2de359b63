// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --write-tuning: the tuning file of mpipcl_backend=auto from measured points.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"
#include "sweep.hpp"

namespace mpipcl::bench {

/// rma is chosen at a size only when its median perceived time is below persistent's by more
/// than this share: within the noise the persistent backend (no window, no attach limit) stays.
inline constexpr double kTuneMargin = 0.05;

/// One size's decision, from the send-side points of part-persistent and part-rma.
struct TuneChoice {
    std::size_t bytes = 0;
    double persistent_us = NAN;  ///< median perceived time
    double rma_us = NAN;         ///< NaN: part-rma was not measured (no window)
    bool rma = false;
};

/// The choice per measured size, in size order.
[[nodiscard]] std::vector<TuneChoice> tune_choices(const std::vector<PointResult>& points,
                                                   const Options& options);

/// The text of the tuning file (docs/config.md, "The auto backend and the tuning file"): a
/// comment header naming the MPI, the parameters and each size's medians, then one rule
/// wherever the choice changes (the first rule at 0 bytes).
[[nodiscard]] std::string tuning_file_text(const std::vector<TuneChoice>& choices,
                                           const Options& options, const RunInfo& info);

}  // namespace mpipcl::bench
