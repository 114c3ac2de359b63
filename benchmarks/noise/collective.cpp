// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --collective: every contributing rank runs T threads that compute (one laggard
// thread in the whole job computes longer) and hand their partition over; the perceived time
// is from the end of the laggard's compute to the moment the last rank holds its result.
#include "collective.hpp"

#include <mpi.h>
#include <mpipcl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <thread>

#include "crew.hpp"
#include "mpi_util.hpp"
#include "stats.hpp"

namespace mpipcl::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRoot = 0;
constexpr int kOffsetTag = 7;
constexpr int kPingPongs = 20;

double now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

double seconds_of(Clock::time_point t)
{
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

/// This rank's clock minus rank 0's, from the fastest of kPingPongs round trips with rank 0
/// (Cristian's algorithm). Collective.
double clock_offset(MPI_Comm comm, int rank, int size)
{
    double offset = 0;
    for (int peer = 1; peer < size; ++peer) {
        if (rank != kRoot && rank != peer) {
            continue;
        }
        double fastest = std::numeric_limits<double>::infinity();
        double best = 0;
        for (int k = 0; k < kPingPongs; ++k) {
            double remote = 0;
            if (rank == kRoot) {
                const double t0 = now();
                check(MPI_Send(&remote, 1, MPI_DOUBLE, peer, kOffsetTag, comm), "MPI_Send");
                check(MPI_Recv(&remote, 1, MPI_DOUBLE, peer, kOffsetTag, comm, MPI_STATUS_IGNORE),
                      "MPI_Recv");
                const double t2 = now();
                if (t2 - t0 < fastest) {
                    fastest = t2 - t0;
                    best = remote - (t0 + t2) / 2;
                }
            } else {
                check(MPI_Recv(&remote, 1, MPI_DOUBLE, kRoot, kOffsetTag, comm, MPI_STATUS_IGNORE),
                      "MPI_Recv");
                const double t1 = now();
                check(MPI_Send(&t1, 1, MPI_DOUBLE, kRoot, kOffsetTag, comm), "MPI_Send");
            }
        }
        if (rank == kRoot) {
            check(MPI_Send(&best, 1, MPI_DOUBLE, peer, kOffsetTag, comm), "MPI_Send");
        } else {
            check(MPI_Recv(&offset, 1, MPI_DOUBLE, kRoot, kOffsetTag, comm, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        }
    }
    return offset;
}

bool has_collective_form(Mode mode) { return mode != Mode::part_native; }

/// The value rank @p rank contributes at element @p i in round @p round: small integers, so
/// sums are exact in double.
double input(int rank, int round, std::size_t i)
{
    return static_cast<double>((rank + 1) * 3 + round % 5 + static_cast<int>(i % 7));
}

/// One collective of one size and mode, set up once and run for many rounds.
class CollectiveRun {
   public:
    CollectiveRun(const Options& options, Mode mode, std::size_t bytes, MPI_Comm comm,
                  double clock_offset, const std::vector<MPI_Comm>& part_comms, Crew& crew)
        : o_(options),
          mode_(mode),
          comm_(comm),
          clock_offset_(clock_offset),
          part_comms_(part_comms),
          crew_(crew),
          elements_(bytes / sizeof(double)),
          per_part_(elements_ / static_cast<std::size_t>(options.partitions)),
          input_(elements_),
          result_(elements_),
          part_requests_(static_cast<std::size_t>(options.partitions), MPI_REQUEST_NULL)
    {
        check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
        contributes_ = o_.collective != CollectiveKind::bcast || rank_ == kRoot;
        const std::string backend = backend_of(mode);
        if (!backend.empty()) {
            const BackendInfo info(backend);
            check(init_partitioned(info.get()), "MPIX_P*_init");
        }
    }

    ~CollectiveRun()
    {
        if (request_ != MPI_REQUEST_NULL) {
            MPI_Request_free(&request_);
        }
    }

    CollectiveRun(const CollectiveRun&) = delete;
    CollectiveRun& operator=(const CollectiveRun&) = delete;

    /// One round; returns the perceived time on rank 0 (0 elsewhere) and counts wrong result
    /// elements into @p errors.
    double round(int round, int laggard_rank, int laggard_thread, long* errors);

   private:
    int init_partitioned(MPI_Info info)
    {
        const int parts = o_.partitions;
        const auto count = static_cast<MPI_Count>(per_part_);
        switch (o_.collective) {
            case CollectiveKind::bcast:
                return MPIX_Pbcast_init(result_.data(), parts, count, MPI_DOUBLE, kRoot, comm_,
                                        info, &request_);
            case CollectiveKind::reduce:
                return MPIX_Preduce_init(input_.data(), result_.data(), parts, count, MPI_DOUBLE,
                                         MPI_SUM, kRoot, comm_, info, &request_);
            default:
                return MPIX_Pallreduce_init(input_.data(), result_.data(), parts, count, MPI_DOUBLE,
                                            MPI_SUM, comm_, info, &request_);
        }
    }

    /// The whole collective at once (single).
    void whole()
    {
        const int n = static_cast<int>(elements_);
        switch (o_.collective) {
            case CollectiveKind::bcast:
                check(MPI_Bcast(result_.data(), n, MPI_DOUBLE, kRoot, comm_), "MPI_Bcast");
                break;
            case CollectiveKind::reduce:
                check(
                    MPI_Reduce(input_.data(), result_.data(), n, MPI_DOUBLE, MPI_SUM, kRoot, comm_),
                    "MPI_Reduce");
                break;
            default:
                check(MPI_Allreduce(input_.data(), result_.data(), n, MPI_DOUBLE, MPI_SUM, comm_),
                      "MPI_Allreduce");
        }
    }

    /// Partition @p t as its own non-blocking collective on its own communicator (multi).
    void start_part(int t)
    {
        const std::size_t first = static_cast<std::size_t>(t) * per_part_;
        const int n = static_cast<int>(per_part_);
        MPI_Comm c = part_comms_[static_cast<std::size_t>(t)];
        MPI_Request* r = &part_requests_[static_cast<std::size_t>(t)];
        switch (o_.collective) {
            case CollectiveKind::bcast:
                check(MPI_Ibcast(result_.data() + first, n, MPI_DOUBLE, kRoot, c, r), "MPI_Ibcast");
                break;
            case CollectiveKind::reduce:
                check(MPI_Ireduce(input_.data() + first, result_.data() + first, n, MPI_DOUBLE,
                                  MPI_SUM, kRoot, c, r),
                      "MPI_Ireduce");
                break;
            default:
                check(MPI_Iallreduce(input_.data() + first, result_.data() + first, n, MPI_DOUBLE,
                                     MPI_SUM, c, r),
                      "MPI_Iallreduce");
        }
    }

    void hand_over(int t)
    {
        if (mode_ == Mode::multi) {
            start_part(t);
        } else if (mode_ != Mode::single) {
            check(MPI_Pready(t, request_), "MPI_Pready");
        }
    }

    void complete()
    {
        if (mode_ == Mode::single) {
            whole();
        } else if (mode_ == Mode::multi) {
            check(MPI_Waitall(o_.partitions, part_requests_.data(), MPI_STATUSES_IGNORE),
                  "MPI_Waitall");
        } else {
            check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
        }
    }

    void fill(int round);
    [[nodiscard]] long check_result(int round) const;

    const Options& o_;
    const Mode mode_;
    MPI_Comm comm_;
    double clock_offset_;  ///< this rank's clock minus rank 0's (s)
    const std::vector<MPI_Comm>& part_comms_;
    Crew& crew_;
    int rank_ = 0;
    int size_ = 0;
    bool contributes_ = true;
    std::size_t elements_;
    std::size_t per_part_;
    std::vector<double> input_;   ///< reduce, allreduce: this rank's contribution
    std::vector<double> result_;  ///< bcast: the buffer; reduce, allreduce: the result
    std::vector<MPI_Request> part_requests_;
    MPI_Request request_ = MPI_REQUEST_NULL;
};

void CollectiveRun::fill(int round)
{
    if (o_.collective == CollectiveKind::bcast) {
        for (std::size_t i = 0; i < elements_; ++i) {
            result_[i] = rank_ == kRoot ? input(kRoot, round, i) : -1.0;
        }
        return;
    }
    for (std::size_t i = 0; i < elements_; ++i) {
        input_[i] = input(rank_, round, i);
        result_[i] = -1.0;
    }
}

long CollectiveRun::check_result(int round) const
{
    const bool receives = o_.collective != CollectiveKind::reduce || rank_ == kRoot;
    if (!receives) {
        return 0;
    }
    long wrong = 0;
    for (std::size_t i = 0; i < elements_; ++i) {
        double expected = input(kRoot, round, i);
        if (o_.collective != CollectiveKind::bcast) {
            expected = 0;
            for (int r = 0; r < size_; ++r) {
                expected += input(r, round, i);
            }
        }
        wrong += result_[i] != expected ? 1 : 0;
    }
    return wrong;
}

double CollectiveRun::round(int round, int laggard_rank, int laggard_thread, long* errors)
{
    if (o_.verify || round == 0) {
        fill(round);
    }
    check(MPI_Barrier(comm_), "MPI_Barrier");
    if (request_ != MPI_REQUEST_NULL) {
        check(MPI_Start(&request_), "MPI_Start");
    }
    const auto start = Clock::now();
    const auto compute = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(o_.compute_ms));
    const auto lagging = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(o_.compute_ms * (1 + o_.noise_pct / 100)));
    const bool lags = rank_ == laggard_rank;
    double done = 0;
    if (contributes_) {
        crew_.run(
            [&](int t) {
                std::this_thread::sleep_until(start +
                                              (lags && t == laggard_thread ? lagging : compute));
                hand_over(t);
            },
            [&] {
                complete();
                done = now();
            });
    } else {
        for (int t = 0; mode_ == Mode::multi && t < o_.partitions; ++t) {
            start_part(t);
        }
        complete();
        done = now();
    }
    // The reference is the scheduled end of the laggard's compute (see sweep.cpp), on rank 0's
    // clock; non-contributors compute nothing.
    const double offset = clock_offset_;
    const double local[2] = {contributes_ ? seconds_of(start + (lags ? lagging : compute)) - offset
                                          : -std::numeric_limits<double>::infinity(),
                             done - offset};
    double global[2] = {0, 0};
    check(MPI_Reduce(local, global, 2, MPI_DOUBLE, MPI_MAX, kRoot, comm_), "MPI_Reduce");
    if (o_.verify) {
        *errors += check_result(round);
    }
    return rank_ == kRoot ? global[1] - global[0] : 0;
}

const char* collective_name(CollectiveKind kind)
{
    switch (kind) {
        case CollectiveKind::bcast:
            return "bcast";
        case CollectiveKind::reduce:
            return "reduce";
        default:
            return "allreduce";
    }
}

std::string size_text(std::size_t bytes)
{
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                   : std::to_string(bytes >> 10) + " KiB";
}

/// The repeats (or iterations) of one point, measured; rank 0 gets the perceived times.
std::vector<double> run_repeat(const Options& options, Mode mode, std::size_t bytes, MPI_Comm comm,
                               double offset, const std::vector<MPI_Comm>& part_comms, Crew& crew,
                               std::mt19937& rng, long* verify_errors)
{
    int size = 0;
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    std::uniform_int_distribution<int> pick_rank(0, size - 1);
    std::uniform_int_distribution<int> pick_thread(0, options.partitions - 1);
    CollectiveRun run(options, mode, bytes, comm, offset, part_comms, crew);
    std::vector<double> perceived;
    for (int it = 0; it < options.warmup + options.iterations; ++it) {
        // Every rank draws the same laggard: the generator is seeded alike everywhere.
        int lag_rank = pick_rank(rng);
        const int lag_thread = pick_thread(rng);
        if (options.collective == CollectiveKind::bcast) {
            lag_rank = kRoot;  // only the root computes
        }
        const double t = run.round(it, lag_rank, lag_thread, verify_errors);
        if (it >= options.warmup) {
            perceived.push_back(t);
        }
    }
    return perceived;
}

double ratio(const std::vector<CollectivePoint>& points, const CollectivePoint& p, Mode to)
{
    for (const auto& q : points) {
        if (q.bytes == p.bytes && q.mode == to && !q.perceived.empty()) {
            return summarize(p.perceived).median / summarize(q.perceived).median;
        }
    }
    return NAN;
}

}  // namespace

std::string collective_usage_error(const Options& options)
{
    const std::size_t unit = sizeof(double) * static_cast<std::size_t>(options.partitions);
    for (const std::size_t bytes : options.sizes) {
        if (bytes % unit != 0) {
            return "--collective: --sizes " + std::to_string(bytes) +
                   " bytes is not a multiple of 8 * --partitions (the elements are doubles)";
        }
    }
    if (!options.tune.empty()) {
        return "--collective: no --write-tuning with it";
    }
    if (!options.plot.empty()) {
        return "--collective: no --plot with it (the CSV has every figure)";
    }
    if (options.sides_given) {
        return "--collective: no --side with it (every rank computes and receives)";
    }
    return "";
}

std::vector<Mode> collective_modes(const Options& options, RunInfo& info)
{
    std::vector<Mode> modes;
    for (const Mode mode : options.modes) {
        if (has_collective_form(mode)) {
            modes.push_back(mode);
        } else if (options.modes_given) {
            info.skipped.emplace_back(mode, "no MPI has partitioned collectives of its own");
        }
    }
    return modes;
}

std::vector<CollectivePoint> measure_collective(const Options& options,
                                                const std::vector<Mode>& modes, MPI_Comm comm,
                                                long* verify_errors)
{
    int rank = 0;
    int size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const double offset = clock_offset(comm, rank, size);
    // multi: one communicator per partition, so the threads' non-blocking collectives, issued
    // in whatever order the computes end, never depend on each other's order across ranks.
    std::vector<MPI_Comm> part_comms(static_cast<std::size_t>(options.partitions), MPI_COMM_NULL);
    if (std::find(modes.begin(), modes.end(), Mode::multi) != modes.end()) {
        for (auto& c : part_comms) {
            check(MPI_Comm_dup(comm, &c), "MPI_Comm_dup");
        }
    }
    Crew crew(options.partitions);
    std::mt19937 rng(options.seed);
    std::vector<CollectivePoint> points;
    const std::size_t total =
        options.sizes.size() * modes.size() * static_cast<std::size_t>(options.repeats);
    std::size_t done = 0;
    for (const std::size_t bytes : options.sizes) {
        const std::size_t first = points.size();
        for (const Mode mode : modes) {
            points.push_back(CollectivePoint{mode, bytes, {}});
        }
        for (int r = 0; r < options.repeats; ++r) {
            for (std::size_t k = 0; k < modes.size(); ++k) {
                const std::size_t m = (k + static_cast<std::size_t>(r)) % modes.size();
                std::vector<double> sample = run_repeat(options, modes[m], bytes, comm, offset,
                                                        part_comms, crew, rng, verify_errors);
                auto& into = points[first + m].perceived;
                if (options.repeats == 1) {
                    into = sample;
                } else {
                    into.push_back(summarize(sample).median);
                }
                ++done;
                if (rank == kRoot) {
                    std::fprintf(stderr, "mpipcl-bench: [%zu/%zu] %s %s %s: perceived %.1f us\n",
                                 done, total, collective_name(options.collective),
                                 mode_name(modes[m]), size_text(bytes).c_str(),
                                 summarize(sample).median * 1e6);
                }
            }
        }
    }
    for (auto& c : part_comms) {
        if (c != MPI_COMM_NULL) {
            MPI_Comm_free(&c);
        }
    }
    return points;
}

void print_collective_table(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                            const std::vector<CollectivePoint>& points)
{
    std::fprintf(out,
                 "# mpipcl-bench --collective %s: %d ranks, %d partitions (threads per rank), "
                 "compute %g ms, noise %g %%, %d iterations, %d repeats\n",
                 collective_name(options.collective), ranks, options.partitions, options.compute_ms,
                 options.noise_pct, options.iterations, options.repeats);
    std::fprintf(out, "# %s; mpipcl %s\n", info.mpi_library.c_str(), info.mpipcl_version.c_str());
    for (const auto& [mode, reason] : info.skipped) {
        std::fprintf(out, "# skipped %s: %s\n", mode_name(mode), reason.c_str());
    }
    std::fprintf(out,
                 "# perceived = the last rank's completion - the end of the laggard's "
                 "compute; single = one collective after the join, multi = one "
                 "non-blocking collective per partition\n");
    std::fprintf(out, "%10s  %-16s %14s %28s %10s %10s\n", "size", "mode", "perceived us",
                 "[p10 .. p90]", "vs single", "vs multi");
    for (const auto& p : points) {
        const Stats s = summarize(p.perceived);
        std::fprintf(out, "%10s  %-16s %14.1f [%11.1f .. %11.1f] %10.2f %10.2f\n",
                     size_text(p.bytes).c_str(), mode_name(p.mode), s.median * 1e6, s.p10 * 1e6,
                     s.p90 * 1e6, ratio(points, p, Mode::single), ratio(points, p, Mode::multi));
    }
}

void write_collective_csv(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                          const std::vector<CollectivePoint>& points)
{
    std::fprintf(out,
                 "collective,ranks,partitions,bytes,mode,compute_ms,noise_pct,iterations,repeats,"
                 "perceived_us_median,perceived_us_p10,perceived_us_p90,perceived_us_min,"
                 "perceived_us_max,ratio_to_single,ratio_to_multi,mpi_library,mpipcl_version\n");
    for (const auto& p : points) {
        const Stats s = summarize(p.perceived);
        std::fprintf(out, "%s,%d,%d,%zu,%s,%g,%g,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%s\n",
                     collective_name(options.collective), ranks, options.partitions, p.bytes,
                     mode_name(p.mode), options.compute_ms, options.noise_pct, options.iterations,
                     options.repeats, s.median * 1e6, s.p10 * 1e6, s.p90 * 1e6, s.min * 1e6,
                     s.max * 1e6, ratio(points, p, Mode::single), ratio(points, p, Mode::multi),
                     csv_quoted(info.mpi_library).c_str(), csv_quoted(info.mpipcl_version).c_str());
    }
}

}  // namespace mpipcl::bench
