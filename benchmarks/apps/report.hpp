// SPDX-License-Identifier: BSD-3-Clause
// Output of mpipcl-stencil: the stdout table, the CSV file and the gnuplot plot.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "options.hpp"
#include "problem.hpp"

namespace mpipcl::stencil {

/// What one variant measured and how its fields compared with the reference.
struct VariantResult {
    Variant variant = Variant::compute;
    std::vector<double> seconds;  ///< per repeat: mean time per iteration of the slowest rank
    int checked = 0;              ///< runs compared with the serial reference
    int mismatched = 0;           ///< ... that differed in at least one cell
    FieldSummary summary;         ///< of the last compared run
};

/// The parameters of the whole run.
struct RunInfo {
    Options options;
    int ranks = 0;
    std::array<int, 3> dims{};
    int threads = 0;
    double halo_bytes = 0;  ///< bytes per iteration of the rank that sends most
    int halo_faces = 0;     ///< faces of that rank
    std::string mpi_library;
    std::string mpipcl_version;
    std::vector<std::pair<Variant, std::string>> skipped;  ///< variant, why
    FieldSummary reference;                                ///< --verify: the serial reference
    double reference_seconds = 0;                          ///< its time on rank 0
};

/// The derived figures of one variant (NaN where undefined).
struct Row {
    double median = 0;  ///< seconds per iteration, median over the repeats
    double min = 0;
    double max = 0;
    double halo = 0;    ///< median - compute's median
    double hidden = 0;  ///< 1 - halo / plain's halo
};

/// The row of @p result among @p all (compute and plain give the references).
[[nodiscard]] Row derive(const VariantResult& result, const std::vector<VariantResult>& all);

/// The table on stdout, the verification lines and the skipped variants.
void print_table(std::FILE* out, const RunInfo& info, const std::vector<VariantResult>& results);

/// One row per variant with every parameter.
void write_csv(std::FILE* out, const RunInfo& info, const std::vector<VariantResult>& results);

/// Writes the gnuplot script of @p png_path (beside it, ".png" replaced by ".gp"); returns its
/// path, or an empty string (with a warning) if it cannot be written.
[[nodiscard]] std::string write_plot_script(const std::string& png_path, const RunInfo& info,
                                            const std::vector<VariantResult>& results);

}  // namespace mpipcl::stencil
