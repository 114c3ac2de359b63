// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench: the noise / early-bird benchmark of partitioned communication (2 ranks).
#include <mpi.h>
#include <mpipcl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collective.hpp"
#include "compute.hpp"
#include "mpi_util.hpp"
#include "options.hpp"
#include "report.hpp"
#include "sweep.hpp"
#include "tune.hpp"

using namespace mpipcl::bench;

namespace {

constexpr int kContinue = -1;
constexpr int kExitVerifyFailed = 1;
constexpr int kExitUsage = 2;

/// Checks the command line and environment identically on every rank, before any
/// communication. Returns the exit code, or kContinue.
int startup_check(const ParsedOptions& parsed, int rank, int size, int provided)
{
    if (parsed.error.empty() && parsed.options.help) {
        if (rank == 0) {
            std::fputs(usage().c_str(), stdout);
        }
        return 0;
    }
    std::string problem;
    if (!parsed.error.empty()) {
        problem = parsed.error + " (see --help)";
    } else if (parsed.options.collective != CollectiveKind::none) {
        problem = collective_usage_error(parsed.options);
        if (problem.empty() && size < 2) {
            problem = "--collective needs at least 2 ranks, got " + std::to_string(size);
        }
        if (!problem.empty()) {
            problem += " (see --help)";
        }
    } else if (size != 2) {
        problem =
            "needs exactly 2 ranks (rank 0 sends, rank 1 receives), got " + std::to_string(size);
    } else if (provided < MPI_THREAD_MULTIPLE) {
        problem =
            "the MPI library does not provide MPI_THREAD_MULTIPLE (sender threads call "
            "MPI_Pready and MPI_Isend concurrently)";
    }
    if (problem.empty()) {
        return kContinue;
    }
    if (rank == 0) {
        std::fprintf(stderr, "mpipcl-bench: %s\n", problem.c_str());
    }
    return kExitUsage;
}

/// The requested modes this MPI and mpipcl can run; explicitly requested unsupported ones are
/// recorded in info.skipped (and announced), defaulted ones are left out silently. Collective.
std::vector<Mode> select_modes(const Options& options, MPI_Comm comm, int rank, RunInfo& info)
{
    std::vector<Mode> modes;
    for (const Mode mode : options.modes) {
        const std::string backend = backend_of(mode);
        if (backend.empty()) {
            modes.push_back(mode);
            continue;
        }
        Probe probe = probe_backend(comm, backend, options.partitions);
        if (probe.supported) {
            modes.push_back(mode);
        } else if (options.modes_given) {
            if (rank == 0) {
                std::fprintf(stderr, "mpipcl-bench: skipping %s: %s\n", mode_name(mode),
                             probe.reason.c_str());
            }
            info.skipped.emplace_back(mode, std::move(probe.reason));
        }
    }
    return modes;
}

/// Opens an output file (--csv, --write-tuning) on rank 0 before measuring, so a bad path fails at
/// once on every rank. Collective.
std::FILE* open_output(const std::string& path, const char* flag, MPI_Comm comm, int rank, bool& ok)
{
    std::FILE* file = nullptr;
    int opened = 1;
    if (rank == 0 && !path.empty()) {
        file = std::fopen(path.c_str(), "w");
        opened = file != nullptr ? 1 : 0;
        if (file == nullptr) {
            std::perror(("mpipcl-bench: cannot write " + std::string(flag) + " " + path).c_str());
        }
    }
    check(MPI_Bcast(&opened, 1, MPI_INT, 0, comm), "MPI_Bcast");
    ok = opened == 1;
    return file;
}

/// --write-tuning: writes the tuning rules of the measured points to @p file and says so on stdout.
void write_tuning(std::FILE* file, const Options& options, const RunInfo& info,
                  const std::vector<PointResult>& points)
{
    const std::vector<TuneChoice> choices = tune_choices(points, options);
    const std::string text = tuning_file_text(choices, options, info);
    std::fputs(text.c_str(), file);
    std::fprintf(stdout, "#\n# tuning file %s:\n%s", options.tune.c_str(), text.c_str());
}

/// --compute work: every rank calibrates the kernel at once (one core each on an idle
/// machine), and all use the fastest rank's figure, so every rank computes the same work.
/// Collective.
void calibrate_work(Options& options, MPI_Comm comm, int rank)
{
    if (options.compute != ComputeKind::work) {
        return;
    }
    check(MPI_Barrier(comm), "MPI_Barrier");
    double units = WorkKernel::calibrate();
    check(MPI_Allreduce(MPI_IN_PLACE, &units, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
    options.work_units_per_ms = units;
    if (rank == 0) {
        std::fprintf(stderr, "mpipcl-bench: --compute work: %.0f units per ms on an idle core\n",
                     units);
    }
}

/// --collective: measures, prints the table and writes the CSV (rank 0). Collective.
int run_collective(const Options& options, RunInfo& info, MPI_Comm comm, int rank, int size,
                   std::FILE* csv)
{
    const std::vector<Mode> modes = collective_modes(options, info);
    long verify_errors = 0;
    const std::vector<CollectivePoint> points =
        measure_collective(options, modes, comm, &verify_errors);
    long all_errors = 0;
    check(MPI_Allreduce(&verify_errors, &all_errors, 1, MPI_LONG, MPI_SUM, comm), "MPI_Allreduce");
    if (rank == 0) {
        print_collective_table(stdout, options, info, size, points);
        if (csv != nullptr) {
            write_collective_csv(csv, options, info, size, points);
            std::fclose(csv);
        }
        if (all_errors > 0) {
            std::fprintf(stderr, "mpipcl-bench: %ld wrong result elements\n", all_errors);
        }
    }
    return all_errors > 0 ? kExitVerifyFailed : 0;
}

}  // namespace

int main(int argc, char** argv)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const ParsedOptions parsed = parse_options(argc, argv);
    if (const int code = startup_check(parsed, rank, size, provided); code != kContinue) {
        MPI_Finalize();
        return code;
    }
    Options options = parsed.options;

    MPI_Comm comm = MPI_COMM_NULL;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    calibrate_work(options, comm, rank);
    bool csv_ok = false;
    std::FILE* csv = open_output(options.csv, "--csv", comm, rank, csv_ok);
    bool tune_ok = false;
    std::FILE* tune =
        csv_ok ? open_output(options.tune, "--write-tuning", comm, rank, tune_ok) : nullptr;
    if (!csv_ok || !tune_ok) {
        if (csv != nullptr) {
            std::fclose(csv);
        }
        MPI_Comm_free(&comm);
        MPI_Finalize();
        return kExitUsage;
    }

    RunInfo info;
    info.mpi_library = mpi_library_version();
    info.mpipcl_version = MPIPCL_VERSION;
    if (options.collective != CollectiveKind::none) {
        const int code = run_collective(options, info, comm, rank, size, csv);
        MPI_Comm_free(&comm);
        MPI_Finalize();
        return code;
    }
    const std::vector<Mode> modes = select_modes(options, comm, rank, info);

    long verify_errors = 0;
    const std::vector<PointResult> points = measure(options, modes, comm, &verify_errors);
    if (rank == 0) {
        print_table(stdout, options, info, points);
        print_summary(stdout, ratios(points, options));
        if (csv != nullptr) {
            write_csv(csv, options, info, points);
            std::fclose(csv);
        }
        if (tune != nullptr) {
            write_tuning(tune, options, info, points);
            std::fclose(tune);
        }
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();

    if (rank == 0 && !options.plot.empty()) {
        write_plot(options.plot, options, info, points);
    }
    return verify_errors > 0 ? kExitVerifyFailed : 0;
}
