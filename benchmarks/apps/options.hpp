// SPDX-License-Identifier: BSD-3-Clause
// Command-line options of mpipcl-stencil: the grid, the variants and the measurement.
#pragma once

#include <iterator>
#include <string>
#include <vector>

namespace mpipcl::stencil {

/// How the halo faces move (compute: not at all).
enum class Variant {
    compute,          ///< the same computation without any halo exchange (the reference time)
    plain,            ///< threads join, then one MPI_Isend / MPI_Irecv per whole face
    multi,            ///< each thread MPI_Isends its own part of each face
    part_persistent,  ///< MPI_Psend_init / MPI_Precv_init, mpipcl_backend=persistent
    part_rma,         ///< ... mpipcl_backend=rma
    part_auto,        ///< ... mpipcl_backend=auto (what a user gets by default)
    part_native,      ///< ... mpipcl_backend=native (the MPI's own partitioned calls)
};

/// Every variant, in the order the table lists them.
inline constexpr Variant kAllVariants[] = {
    Variant::compute,  Variant::plain,     Variant::multi,      Variant::part_persistent,
    Variant::part_rma, Variant::part_auto, Variant::part_native};

[[nodiscard]] const char* variant_name(Variant variant);
/// The "mpipcl_backend" info value of a partitioned variant; empty for the others.
[[nodiscard]] std::string backend_of(Variant variant);

struct Options {
    int nx = 256;  ///< global cells in x, y, z (a few seconds per variant on 2 cores)
    int ny = 256;
    int nz = 128;
    int threads = 0;  ///< OpenMP threads per rank = partitions per face; 0: OMP_NUM_THREADS
    int iterations = 100;
    int warmup = 3;
    int repeats = 3;
    std::vector<Variant> variants{std::begin(kAllVariants), std::end(kAllVariants)};
    bool variants_given = false;  ///< --variants was passed
    std::string csv;
    std::string plot;
    bool verify = false;
    bool help = false;
};

struct ParsedOptions {
    Options options;
    std::string error;  ///< a bad command line: the message for the user; empty if fine
};

/// Parses the command line; never exits (every rank parses the same line and gets the same
/// result, so the caller decides about the exit on all ranks alike).
[[nodiscard]] ParsedOptions parse_options(int argc, char** argv);

/// The --help text.
[[nodiscard]] std::string usage();

}  // namespace mpipcl::stencil
