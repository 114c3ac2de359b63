// SPDX-License-Identifier: BSD-3-Clause
// Output of mpipcl-stencil: the stdout table, the CSV file and the gnuplot plot.
#include "report.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "stats.hpp"
#include "text.hpp"

namespace mpipcl::stencil {

using bench::csv_number;
using bench::csv_quoted;
using bench::gp_quoted;

namespace {

constexpr double kMilli = 1e3;
constexpr double kKiB = 1024.0;

const VariantResult* find(const std::vector<VariantResult>& all, Variant v)
{
    const auto it = std::find_if(all.begin(), all.end(),
                                 [v](const VariantResult& r) { return r.variant == v; });
    return it == all.end() ? nullptr : &*it;
}

/// "12.345" in milliseconds, or "-" for NaN.
std::string ms(double seconds, const char* format = "%.3f")
{
    if (std::isnan(seconds)) {
        return "-";
    }
    char text[32];
    std::snprintf(text, sizeof text, format, seconds * kMilli);
    return text;
}

std::string percent(double share)
{
    if (std::isnan(share)) {
        return "-";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %%", 100.0 * share);
    return text;
}

/// "yes" (every compared run equal), "NO", or "-" (not compared).
const char* verdict(const VariantResult& r)
{
    if (r.checked == 0) {
        return "-";
    }
    return r.mismatched == 0 ? "yes" : "NO";
}

void print_header(std::FILE* out, const RunInfo& info)
{
    const Options& o = info.options;
    std::fprintf(out,
                 "# mpipcl-stencil: 3-D 7-point Jacobi, %d x %d x %d cells, %d ranks (dims %d x "
                 "%d x %d), %d thread%s per rank = partitions per face\n",
                 o.nx, o.ny, o.nz, info.ranks, info.dims[0], info.dims[1], info.dims[2],
                 info.threads, info.threads == 1 ? "" : "s");
    std::fprintf(out,
                 "# runs of %d measured iterations after %d warm-up, %d repeat%s (variants "
                 "interleaved, first one rotated); halo of the busiest rank: %d face%s, %.1f KiB "
                 "per iteration\n",
                 o.iterations, o.warmup, o.repeats, o.repeats == 1 ? "" : "s", info.halo_faces,
                 info.halo_faces == 1 ? "" : "s", info.halo_bytes / kKiB);
    std::fprintf(out, "# %s; mpipcl %s\n", info.mpi_library.c_str(), info.mpipcl_version.c_str());
    std::fprintf(out,
                 "# ms/iter = a run's mean time per iteration (slowest rank), median over the "
                 "repeats [min .. max];\n# halo ms = ms/iter - compute's; hidden = 1 - halo / "
                 "plain's halo (the share of plain's halo time the variant hides)\n");
}

void print_verification(std::FILE* out, const RunInfo& info,
                        const std::vector<VariantResult>& results)
{
    const Options& o = info.options;
    std::fprintf(out,
                 "# verify: serial reference on rank 0, %d iterations in %.2f s: checksum "
                 "%.17g, residual %.6e\n",
                 o.warmup + o.iterations, info.reference_seconds, info.reference.checksum,
                 info.reference.residual);
    for (const VariantResult& r : results) {
        if (r.checked == 0) {
            std::fprintf(out, "# verify: %-15s not compared (no halo exchange)\n",
                         variant_name(r.variant));
            continue;
        }
        std::fprintf(out,
                     "# verify: %-15s %d of %d runs bitwise equal to the reference; last run: "
                     "checksum %.17g, residual %.6e\n",
                     variant_name(r.variant), r.checked - r.mismatched, r.checked,
                     r.summary.checksum, r.summary.residual);
    }
}

}  // namespace

Row derive(const VariantResult& result, const std::vector<VariantResult>& all)
{
    const bench::Stats s = bench::summarize(result.seconds);
    Row row{s.median, s.min, s.max, NAN, NAN};
    const VariantResult* compute = find(all, Variant::compute);
    if (compute == nullptr) {
        return row;
    }
    const double t_compute = bench::summarize(compute->seconds).median;
    row.halo = row.median - t_compute;
    const VariantResult* plain = find(all, Variant::plain);
    if (plain != nullptr && result.variant != Variant::compute) {
        const double plain_halo = bench::summarize(plain->seconds).median - t_compute;
        row.hidden = plain_halo > 0 ? 1.0 - row.halo / plain_halo : NAN;
    }
    if (result.variant == Variant::compute) {
        row.halo = NAN;
    }
    return row;
}

void print_table(std::FILE* out, const RunInfo& info, const std::vector<VariantResult>& results)
{
    print_header(out, info);
    std::fprintf(out, "%-16s %10s %25s %10s %9s %9s\n", "variant", "ms/iter", "[min .. max]",
                 "halo ms", "hidden", "verified");
    for (const VariantResult& r : results) {
        const Row row = derive(r, results);
        std::fprintf(out, "%-16s %10s [%10s .. %10s] %10s %9s %9s\n", variant_name(r.variant),
                     ms(row.median).c_str(), ms(row.min).c_str(), ms(row.max).c_str(),
                     ms(row.halo).c_str(), percent(row.hidden).c_str(), verdict(r));
    }
    for (const auto& [variant, why] : info.skipped) {
        std::fprintf(out, "# skipped %s: %s\n", variant_name(variant), why.c_str());
    }
    if (info.options.verify) {
        print_verification(out, info, results);
    }
    std::fflush(out);
}

void write_csv(std::FILE* out, const RunInfo& info, const std::vector<VariantResult>& results)
{
    const Options& o = info.options;
    std::fprintf(out,
                 "variant,backend,nx,ny,nz,ranks,dims_x,dims_y,dims_z,threads,partitions_per_face,"
                 "iterations,warmup,repeats,time_per_iteration_s_median,"
                 "time_per_iteration_s_min,time_per_iteration_s_max,halo_s,hidden_share,"
                 "halo_bytes_per_iteration_max,verified,checksum,residual,reference_checksum,"
                 "mpi_library,mpipcl_version\n");
    for (const VariantResult& r : results) {
        const Row row = derive(r, results);
        const bool compared = r.checked > 0;
        std::fprintf(out, "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,", variant_name(r.variant),
                     backend_of(r.variant).c_str(), o.nx, o.ny, o.nz, info.ranks, info.dims[0],
                     info.dims[1], info.dims[2], info.threads, info.threads, o.iterations, o.warmup,
                     o.repeats);
        std::fprintf(out, "%s,%s,%s,%s,%s,%.0f,%s,%s,%s,%s,%s,%s\n", csv_number(row.median).c_str(),
                     csv_number(row.min).c_str(), csv_number(row.max).c_str(),
                     csv_number(row.halo).c_str(), csv_number(row.hidden).c_str(), info.halo_bytes,
                     verdict(r), compared ? csv_number(r.summary.checksum, "%.17g").c_str() : "",
                     compared ? csv_number(r.summary.residual, "%.17g").c_str() : "",
                     o.verify ? csv_number(info.reference.checksum, "%.17g").c_str() : "",
                     csv_quoted(info.mpi_library).c_str(), csv_quoted(info.mpipcl_version).c_str());
    }
    std::fflush(out);
}

std::string write_plot_script(const std::string& png_path, const RunInfo& info,
                              const std::vector<VariantResult>& results)
{
    const std::string script_path = png_path.substr(0, png_path.size() - 4) + ".gp";
    std::ostringstream gp;
    gp << "# generated by mpipcl-stencil\nset terminal pngcairo size 1000,600 noenhanced "
          "font ',10'\nset output "
       << gp_quoted(png_path) << "\n$d << EOD\n";
    double compute_ms = NAN;
    int x = 0;
    for (const VariantResult& r : results) {
        const Row row = derive(r, results);
        if (r.variant == Variant::compute) {
            compute_ms = row.median * kMilli;
        }
        const std::string label =
            r.variant == Variant::compute
                ? "no halos"
                : "halo " + ms(row.halo, "%.3g") + " ms\\nhidden " + percent(row.hidden);
        gp << x++ << " \"" << variant_name(r.variant) << "\" " << row.median * kMilli << ' '
           << row.min * kMilli << ' ' << row.max * kMilli << " \"" << label << "\"\n";
    }
    const Options& o = info.options;
    gp << "EOD\nset title "
       << gp_quoted("mpipcl-stencil " + std::to_string(o.nx) + "x" + std::to_string(o.ny) + "x" +
                    std::to_string(o.nz) + ", " + std::to_string(info.ranks) + " ranks x " +
                    std::to_string(info.threads) + " threads, " + std::to_string(o.iterations) +
                    " iterations, median of " + std::to_string(o.repeats) +
                    " repeats [min..max] | " +
                    info.mpi_library.substr(0, info.mpi_library.find(',')))
       << "\nset ylabel 'time per iteration (ms)'\nset yrange [0:*]\nset xrange [-0.6:" << x - 0.4
       << "]\nset grid ytics\nset offsets 0, 0, graph 0.15, 0\nset key top left\nset style fill "
          "solid 0.5 border -1\n"
       << "set boxwidth 0.6\nplot $d using 1:3:xtic(2) with boxes title 'median', "
          "$d using 1:3:4:5 with yerrorbars pointtype 0 linecolor 'black' title 'min .. max', "
          "$d using 1:5:6 with labels offset 0,2 notitle";
    if (!std::isnan(compute_ms)) {
        gp << ", " << compute_ms << " with lines dashtype 2 linecolor 'red' title 'compute only'";
    }
    gp << '\n';
    std::ofstream script(script_path);
    script << gp.str();
    script.close();
    if (!script) {
        std::fprintf(stderr, "mpipcl-stencil: warning: cannot write %s; plot skipped\n",
                     script_path.c_str());
        return {};
    }
    return script_path;
}

}  // namespace mpipcl::stencil
