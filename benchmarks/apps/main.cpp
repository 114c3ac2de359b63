// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-stencil: what partitioned halo exchange buys a threaded 3-D Jacobi stencil code.
#include <mpi.h>
#include <mpipcl.h>
#include <omp.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "domain.hpp"
#include "gnuplot.hpp"
#include "halo.hpp"
#include "mpi_util.hpp"
#include "options.hpp"
#include "problem.hpp"
#include "report.hpp"

using namespace mpipcl::stencil;
using mpipcl::bench::check;

namespace {

constexpr int kContinue = -1;
constexpr int kExitMismatch = 1;
constexpr int kExitUsage = 2;

/// Prints "mpipcl-stencil: <problem> (see --help)" on rank 0; the exit code of a bad command line.
int usage_error(int rank, const std::string& problem)
{
    if (rank == 0) {
        std::fprintf(stderr, "mpipcl-stencil: %s (see --help)\n", problem.c_str());
    }
    return kExitUsage;
}

/// Checks the command line and the environment identically on every rank, before any
/// communication. Returns the exit code, or kContinue.
int startup_check(const ParsedOptions& parsed, int rank, int size, int provided)
{
    if (parsed.error.empty() && parsed.options.help) {
        if (rank == 0) {
            std::fputs(usage().c_str(), stdout);
        }
        return 0;
    }
    if (!parsed.error.empty()) {
        return usage_error(rank, parsed.error);
    }
    if (size < 2) {
        return usage_error(rank, "needs at least 2 ranks, got " + std::to_string(size));
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        return usage_error(rank,
                           "the MPI library does not provide MPI_THREAD_MULTIPLE (the threads "
                           "call MPI_Pready, MPI_Parrived, MPI_Isend and MPI_Test concurrently)");
    }
    return kContinue;
}

/// The non-periodic Cartesian communicator over x and y (z stays local), MPI_ERRORS_RETURN.
MPI_Comm make_cart(int size)
{
    std::array<int, 3> dims{0, 0, 1};
    check(MPI_Dims_create(size, 3, dims.data()), "MPI_Dims_create");
    const std::array<int, 3> periods{0, 0, 0};
    MPI_Comm cart = MPI_COMM_NULL;
    check(MPI_Cart_create(MPI_COMM_WORLD, 3, dims.data(), periods.data(), 0, &cart),
          "MPI_Cart_create");
    check(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    return cart;
}

/// What the grid, the decomposition and the threads cannot do; empty if fine. The same on
/// every rank.
std::string grid_problem(const Options& o, const std::array<int, 3>& dims, int threads)
{
    const std::string ranks = " (dims " + std::to_string(dims[0]) + " x " +
                              std::to_string(dims[1]) + " x " + std::to_string(dims[2]) +
                              "): every rank needs at least one cell";
    if (o.nx < dims[0]) {
        return "--nx " + std::to_string(o.nx) + " is smaller than the " + std::to_string(dims[0]) +
               " ranks in x" + ranks;
    }
    if (o.ny < dims[1]) {
        return "--ny " + std::to_string(o.ny) + " is smaller than the " + std::to_string(dims[1]) +
               " ranks in y" + ranks;
    }
    if (o.nz < threads) {
        return "--nz " + std::to_string(o.nz) + " is smaller than the " + std::to_string(threads) +
               " threads: every thread needs at least one z-plane";
    }
    const long long block = static_cast<long long>((o.nx + dims[0] - 1) / dims[0]) *
                            ((o.ny + dims[1] - 1) / dims[1]) * o.nz;
    if (block > INT_MAX) {
        return "a rank's block of " + std::to_string(block) +
               " cells exceeds the largest MPI count (use more ranks or a smaller grid)";
    }
    return {};
}

/// Opens --csv on rank 0 before measuring, so that a bad path fails at once on every rank.
std::FILE* open_csv(const std::string& path, MPI_Comm comm, int rank, bool& ok)
{
    std::FILE* file = nullptr;
    int opened = 1;
    if (rank == 0 && !path.empty()) {
        file = std::fopen(path.c_str(), "w");
        opened = file != nullptr ? 1 : 0;
        if (file == nullptr) {
            std::perror(("mpipcl-stencil: cannot write --csv " + path).c_str());
        }
    }
    check(MPI_Bcast(&opened, 1, MPI_INT, 0, comm), "MPI_Bcast");
    ok = opened == 1;
    return file;
}

/// Why part-native is left out unless --variants names it: Open MPI 5.0's own partitioned calls
/// hang in this exchange (every rank's 2-4 send and receive requests started together, MPI_Pready
/// and MPI_Parrived from the threads; seen on Open MPI 5.0.7, the 2-rank test grid). Empty where
/// the MPI's own calls run it.
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5
constexpr const char* kNativeLeftOut =
    "Open MPI's own partitioned calls hang in this halo exchange (--variants part-native runs "
    "them anyway)";
#else
constexpr const char* kNativeLeftOut = "";
#endif

/// The requested variants that work here: each partitioned backend is probed between ranks 0
/// and 1 (mpipcl-bench's probe); the others go to info.skipped with the reason. Collective.
std::vector<Variant> select_variants(const Options& options, MPI_Comm cart, int rank, RunInfo& info)
{
    MPI_Comm pair = MPI_COMM_NULL;
    check(MPI_Comm_split(cart, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair), "MPI_Comm_split");
    if (pair != MPI_COMM_NULL) {
        check(MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    }
    std::vector<Variant> variants;
    for (const Variant v : options.variants) {
        if (v == Variant::part_native && !options.variants_given && *kNativeLeftOut != '\0') {
            info.skipped.emplace_back(v, kNativeLeftOut);
            continue;
        }
        const std::string backend = backend_of(v);
        int supported = 1;
        mpipcl::bench::Probe probe;
        if (!backend.empty() && pair != MPI_COMM_NULL) {
            probe = mpipcl::bench::probe_backend(pair, backend, info.threads);
            supported = probe.supported ? 1 : 0;
        }
        check(MPI_Bcast(&supported, 1, MPI_INT, 0, cart), "MPI_Bcast");
        if (supported != 0) {
            variants.push_back(v);
        } else if (rank == 0) {
            std::fprintf(stderr, "mpipcl-stencil: skipping %s: %s\n", variant_name(v),
                         probe.reason.c_str());
            info.skipped.emplace_back(v, probe.reason);
        }
    }
    if (pair != MPI_COMM_NULL) {
        check(MPI_Comm_free(&pair), "MPI_Comm_free");
    }
    return variants;
}

/// Both arrays of the field back to the initial state, each thread its own slab.
void reset_field(LocalField& field)
{
#pragma omp parallel num_threads(field.threads())
    field.reset(omp_get_thread_num());
}

/// One run of @p variant: reset, warm-up, then the measured iterations. Returns the mean time
/// per iteration of the slowest rank. Collective.
double run_variant(Variant variant, const Options& o, MPI_Comm cart, LocalField& field, Halo& halo)
{
    halo.prepare(variant);
    reset_field(field);
    check(MPI_Barrier(cart), "MPI_Barrier");
    halo.run(0, o.warmup);
    check(MPI_Barrier(cart), "MPI_Barrier");
    const double start = MPI_Wtime();
    halo.run(o.warmup, o.iterations);
    const double mine = (MPI_Wtime() - start) / o.iterations;
    halo.release();
    double slowest = 0;
    check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, cart), "MPI_Allreduce");
    return slowest;
}

/// Everything the verification needs: the problem, the reference field (rank 0) and a global
/// array the distributed field is gathered into (rank 0; its boundary layer stays fixed).
struct Verifier {
    const Problem& problem;
    const Decomposition& decomposition;
    MPI_Comm cart;
    int rank;
    std::vector<double> reference;
    std::vector<double> gathered;
};

/// The rank that owns global cell (i, j).
int owner(const Verifier& v, int i, int j)
{
    const Box& g = v.problem.global();
    std::array<int, 3> c{0, 0, 0};
    while (v.decomposition.x_of(c[0], g).end() <= i) {
        ++c[0];
    }
    while (v.decomposition.y_of(c[1], g).end() <= j) {
        ++c[1];
    }
    int rank = -1;
    check(MPI_Cart_rank(v.cart, c.data(), &rank), "MPI_Cart_rank");
    return rank;
}

/// Compares the gathered field with the reference cell by cell, bit for bit (rank 0); reports
/// the first differing cell on stderr. Returns whether every cell is equal.
bool compare_fields(const Verifier& v, const char* what)
{
    const Box& g = v.problem.global();
    long differing = 0;
    std::array<int, 3> first{};
    for (int k = 0; k < g.nz; ++k) {
        for (int j = 0; j < g.ny; ++j) {
            for (int i = 0; i < g.nx; ++i) {
                const std::size_t c = g.index(i, j, k);
                if (std::memcmp(&v.gathered[c], &v.reference[c], sizeof(double)) != 0 &&
                    differing++ == 0) {
                    first = {i, j, k};
                }
            }
        }
    }
    if (differing > 0) {
        const std::size_t c = g.index(first[0], first[1], first[2]);
        std::fprintf(stderr,
                     "mpipcl-stencil: MISMATCH %s: %ld cells differ from the serial reference; "
                     "first at (i, j, k) = (%d, %d, %d) on rank %d: got %.17g, expected %.17g\n",
                     what, differing, first[0], first[1], first[2], owner(v, first[0], first[1]),
                     v.gathered[c], v.reference[c]);
    }
    return differing == 0;
}

/// --verify after a run of @p r's variant: gathers the field on rank 0 and compares it with the
/// reference. Collective.
void verify_run(Verifier& v, const LocalField& field, const Options& o, int repeat,
                VariantResult& r)
{
    gather_field(v.cart, v.decomposition, v.problem.global(),
                 field.interior(static_cast<long>(o.warmup) + o.iterations), v.gathered);
    ++r.checked;
    if (v.rank == 0) {
        const std::string what =
            std::string(variant_name(r.variant)) + " (repeat " + std::to_string(repeat + 1) + ")";
        r.mismatched += compare_fields(v, what.c_str()) ? 0 : 1;
        r.summary = summarize_field(v.problem, v.gathered);
    }
}

/// The serial reference on rank 0 (--verify). Collective (the others wait at a barrier).
void make_reference(Verifier& v, const Options& o, RunInfo& info)
{
    if (v.rank == 0) {
        std::fprintf(stderr, "mpipcl-stencil: serial reference on rank 0 (%d iterations)\n",
                     o.warmup + o.iterations);
        const double start = MPI_Wtime();
        SerialGrid grid(v.problem);
        v.gathered = grid.field();  // the initial state: its boundary layer is the fixed one
        grid.iterate(o.warmup + o.iterations);
        info.reference_seconds = MPI_Wtime() - start;
        v.reference = grid.field();
        info.reference = summarize_field(v.problem, v.reference);
    }
    check(MPI_Barrier(v.cart), "MPI_Barrier");
}

/// Every variant R times, interleaved round-robin with the first one rotated per repeat.
std::vector<VariantResult> measure(const std::vector<Variant>& variants, const Options& o,
                                   MPI_Comm cart, LocalField& field, Halo& halo, Verifier* verifier,
                                   int rank)
{
    std::vector<VariantResult> results;
    for (const Variant v : variants) {
        results.push_back(VariantResult{v, {}, 0, 0, {}});
    }
    const std::size_t n = variants.size();
    for (int repeat = 0; repeat < o.repeats; ++repeat) {
        for (std::size_t i = 0; i < n; ++i) {
            VariantResult& r = results[(static_cast<std::size_t>(repeat) + i) % n];
            const double seconds = run_variant(r.variant, o, cart, field, halo);
            r.seconds.push_back(seconds);
            if (rank == 0) {
                std::fprintf(stderr, "mpipcl-stencil: repeat %d/%d %-15s %10.3f ms per iteration\n",
                             repeat + 1, o.repeats, variant_name(r.variant), seconds * 1e3);
            }
            if (verifier != nullptr && r.variant != Variant::compute) {
                verify_run(*verifier, field, o, repeat, r);
            }
        }
    }
    return results;
}

/// The halo of the rank that sends most: bytes and faces per iteration. Collective.
void halo_size(const Halo& halo, const Decomposition& d, MPI_Comm cart, RunInfo& info)
{
    const double bytes = halo.bytes_per_iteration();
    int faces = 0;
    for (const int nb : d.neighbour) {
        faces += nb != MPI_PROC_NULL ? 1 : 0;
    }
    check(MPI_Allreduce(&bytes, &info.halo_bytes, 1, MPI_DOUBLE, MPI_MAX, cart), "MPI_Allreduce");
    check(MPI_Allreduce(&faces, &info.halo_faces, 1, MPI_INT, MPI_MAX, cart), "MPI_Allreduce");
}

/// Measures, verifies and reports (rank 0). Returns the exit code. Collective.
int run(const Options& o, RunInfo& info, MPI_Comm cart, int rank, std::FILE* csv,
        std::string& plot_script)
{
    const std::vector<Variant> variants = select_variants(o, cart, rank, info);
    const Problem problem(o.nx, o.ny, o.nz);
    const Decomposition decomposition = decompose(cart, problem.global());
    LocalField field(problem, decomposition, info.threads);
    Halo halo(cart, decomposition, field);
    halo_size(halo, decomposition, cart, info);
    Verifier verifier{problem, decomposition, cart, rank, {}, {}};
    if (o.verify) {
        make_reference(verifier, o, info);
    }
    const std::vector<VariantResult> results =
        measure(variants, o, cart, field, halo, o.verify ? &verifier : nullptr, rank);
    int mismatched = 0;
    for (const VariantResult& r : results) {
        mismatched += r.mismatched;
    }
    check(MPI_Bcast(&mismatched, 1, MPI_INT, 0, cart), "MPI_Bcast");
    if (rank == 0) {
        print_table(stdout, info, results);
        if (csv != nullptr) {
            write_csv(csv, info, results);
        }
        if (!o.plot.empty()) {
            plot_script = write_plot_script(o.plot, info, results);
        }
        if (o.verify) {
            std::puts(mismatched == 0 ? "PASS" : "FAIL");  // the line the two-host launch awaits
            std::fflush(stdout);
        }
    }
    return mismatched == 0 ? 0 : kExitMismatch;
}

/// The thread count: --threads, else rank 0's OpenMP default (so that every rank cuts its faces
/// into the same number of partitions).
int resolve_threads(const Options& o)
{
    int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
    check(MPI_Bcast(&threads, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return threads;
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
    RunInfo info;
    info.options = parsed.options;
    info.ranks = size;
    info.threads = resolve_threads(info.options);
    MPI_Comm cart = make_cart(size);
    std::array<int, 3> periods{};
    std::array<int, 3> coords{};
    check(MPI_Cart_get(cart, 3, info.dims.data(), periods.data(), coords.data()), "MPI_Cart_get");
    const std::string problem = grid_problem(info.options, info.dims, info.threads);
    bool csv_ok = false;
    std::FILE* csv = problem.empty() ? open_csv(info.options.csv, cart, rank, csv_ok) : nullptr;
    if (!csv_ok) {  // a bad grid or an unwritable --csv
        if (!problem.empty()) {
            usage_error(rank, problem);
        }
        MPI_Comm_free(&cart);
        MPI_Finalize();
        return kExitUsage;
    }
    info.mpi_library = mpipcl::bench::mpi_library_version();
    info.mpipcl_version = MPIPCL_VERSION;

    std::string plot_script;
    const int code = run(info.options, info, cart, rank, csv, plot_script);
    if (csv != nullptr) {
        std::fclose(csv);
    }
    MPI_Comm_free(&cart);
    MPI_Finalize();
    if (!plot_script.empty()) {
        mpipcl::bench::run_gnuplot(plot_script, "mpipcl-stencil");
    }
    return code;
}
