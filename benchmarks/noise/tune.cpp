// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --write-tuning: per size, the faster of part-persistent and part-rma, as tuning
// rules.
#include "tune.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace mpipcl::bench {

std::vector<TuneChoice> tune_choices(const std::vector<PointResult>& points, const Options& options)
{
    std::vector<TuneChoice> out;
    for (const std::size_t bytes : options.sizes) {
        TuneChoice c;
        c.bytes = bytes;
        for (const PointResult& p : points) {
            if (p.side != Side::send || p.bytes != bytes) {
                continue;
            }
            if (p.mode == Mode::part_persistent) {
                c.persistent_us = derive(p, options).perceived_us.median;
            } else if (p.mode == Mode::part_rma) {
                c.rma_us = derive(p, options).perceived_us.median;
            }
        }
        c.rma = !std::isnan(c.rma_us) &&
                (std::isnan(c.persistent_us) || c.rma_us < c.persistent_us * (1 - kTuneMargin));
        out.push_back(c);
    }
    std::sort(out.begin(), out.end(),
              [](const TuneChoice& a, const TuneChoice& b) { return a.bytes < b.bytes; });
    return out;
}

std::string tuning_file_text(const std::vector<TuneChoice>& choices, const Options& options,
                             const RunInfo& info)
{
    std::ostringstream text;
    text << "# mpipcl tuning file of mpipcl_backend=auto, written by mpipcl-bench --write-tuning\n"
         << "# MPI: " << info.mpi_library << "\n"
         << "# mpipcl " << info.mpipcl_version << ", " << options.partitions
         << " partitions, compute " << options.compute_ms << " ms, noise " << options.noise_pct
         << " %, " << options.iterations << " iterations x " << options.repeats
         << " repeats (medians); rma where it is more than " << kTuneMargin * 100 << " % faster\n"
         << "# size  persistent_us  rma_us\n";
    char line[160];
    for (const TuneChoice& c : choices) {
        std::snprintf(line, sizeof line, "#   %s  %.1f  %.1f\n", format_size(c.bytes).c_str(),
                      c.persistent_us, c.rma_us);
        text << line;
    }
    text << "# <min_total_bytes> <backend> [messages]\n";
    bool first = true;
    bool previous = false;
    for (const TuneChoice& c : choices) {
        if (first || c.rma != previous) {
            text << (first ? 0 : c.bytes) << ' ' << (c.rma ? "rma" : "persistent") << '\n';
        }
        first = false;
        previous = c.rma;
    }
    if (choices.empty()) {
        text << "0 persistent\n";
    }
    return text.str();
}

}  // namespace mpipcl::bench
