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
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <thread>

#include "collective_blocks.hpp"
#include "compute.hpp"
#include "cpu_usage.hpp"
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

/// The value rank @p rank contributes at element @p i of its send buffer in round @p round:
/// small integers, so sums are exact in double.
double input(int rank, int round, std::size_t i)
{
    return static_cast<double>((rank + 1) * 3 + round % 5 + static_cast<int>(i % 7));
}

/// The communicators of a run: grid, what the collective runs on (collective_comm: the comm
/// itself or neighbor's cartesian grid), and for multi one duplicate of it per partition, so
/// the threads' non-blocking collectives, issued in whatever order the computes end, never
/// depend on each other's order across ranks. Collective.
struct CollectiveComms {
    CollectiveComms(const Options& options, MPI_Comm comm, bool multi)
        : world(comm),
          grid(collective_comm(options.collective, comm)),
          parts(static_cast<std::size_t>(options.partitions), MPI_COMM_NULL),
          list_order(multi && options.collective == CollectiveKind::neighbor &&
                     ineighbor_pairs_in_list_order(grid))
    {
        for (std::size_t p = 0; multi && p < parts.size(); ++p) {
            check(MPI_Comm_dup(grid, &parts[p]), "MPI_Comm_dup");
        }
    }

    ~CollectiveComms()
    {
        for (auto& c : parts) {
            if (c != MPI_COMM_NULL) {
                MPI_Comm_free(&c);
            }
        }
        if (grid != world) {
            MPI_Comm_free(&grid);
        }
    }

    CollectiveComms(const CollectiveComms&) = delete;
    CollectiveComms& operator=(const CollectiveComms&) = delete;

    MPI_Comm world;
    MPI_Comm grid;
    std::vector<MPI_Comm> parts;
    /// neighbor's multi: this MPI's MPI_Ineighbor_alltoall pairs duplicate edges in list
    /// order (ineighbor_pairs_in_list_order), and multi's check expects that.
    bool list_order;
};

/// One collective of one size and mode, set up once and run for many rounds.
class CollectiveRun {
   public:
    CollectiveRun(const Options& options, Mode mode, std::size_t bytes,
                  const CollectiveComms& comms, double clock_offset, Crew& crew)
        : o_(options),
          mode_(mode),
          comm_(comms.grid),
          clock_offset_(clock_offset),
          part_comms_(comms.parts),
          crew_(crew),
          plan_(options.compute_plan()),
          layout_(block_layout(options.collective, comms.grid, kRoot,
                               mode == Mode::multi && comms.list_order)),
          block_(bytes / sizeof(double)),
          per_part_(block_ / static_cast<std::size_t>(options.partitions)),
          input_(static_cast<std::size_t>(layout_.send_blocks) * block_),
          result_(static_cast<std::size_t>(layout_.recv_blocks) * block_),
          part_requests_(static_cast<std::size_t>(options.partitions), MPI_REQUEST_NULL)
    {
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
        contributes_ = o_.collective != CollectiveKind::bcast || rank_ == kRoot;
        if (mode == Mode::multi && is_blockwise(o_.collective)) {
            strided_ = strided_type(o_.partitions, per_part_);
        }
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
        if (strided_ != MPI_DATATYPE_NULL) {
            MPI_Type_free(&strided_);
        }
    }

    CollectiveRun(const CollectiveRun&) = delete;
    CollectiveRun& operator=(const CollectiveRun&) = delete;

    /// One round; returns the perceived time on rank 0 (0 elsewhere) and counts wrong result
    /// elements into @p errors.
    double round(int round, int laggard_rank, int laggard, long* errors);

    /// The slowest contributor's compute phase of the last round (s; rank 0, else 0).
    [[nodiscard]] double phase() const { return phase_; }

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
            case CollectiveKind::allreduce:
                return MPIX_Pallreduce_init(input_.data(), result_.data(), parts, count, MPI_DOUBLE,
                                            MPI_SUM, comm_, info, &request_);
            default:
                return block_init(buffers(), comm_, info, &request_);
        }
    }

    /// This rank's buffers as the block-wise collectives take them.
    [[nodiscard]] BlockBuffers buffers()
    {
        return {o_.collective, input_.data(), result_.empty() ? nullptr : result_.data(),
                o_.partitions, per_part_,     kRoot};
    }

    /// The whole collective at once (single).
    void whole()
    {
        const int n = static_cast<int>(block_);
        switch (o_.collective) {
            case CollectiveKind::bcast:
                check(MPI_Bcast(result_.data(), n, MPI_DOUBLE, kRoot, comm_), "MPI_Bcast");
                break;
            case CollectiveKind::reduce:
                check(
                    MPI_Reduce(input_.data(), result_.data(), n, MPI_DOUBLE, MPI_SUM, kRoot, comm_),
                    "MPI_Reduce");
                break;
            case CollectiveKind::allreduce:
                check(MPI_Allreduce(input_.data(), result_.data(), n, MPI_DOUBLE, MPI_SUM, comm_),
                      "MPI_Allreduce");
                break;
            default:
                block_whole(buffers(), comm_);
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
            case CollectiveKind::allreduce:
                check(MPI_Iallreduce(input_.data() + first, result_.data() + first, n, MPI_DOUBLE,
                                     MPI_SUM, c, r),
                      "MPI_Iallreduce");
                break;
            default:
                block_start_part(buffers(), t, strided_, c, r);
        }
    }

    /// Partition @p t of every send block (block b's is partition b * partitions + t).
    void hand_over(int t)
    {
        if (mode_ == Mode::multi) {
            start_part(t);
        } else if (mode_ != Mode::single) {
            for (int b = 0; b < layout_.send_blocks; ++b) {
                check(MPI_Pready(b * o_.partitions + t, request_), "MPI_Pready");
            }
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
    [[nodiscard]] double expected(int round, std::size_t i) const;
    [[nodiscard]] long check_result(int round) const;

    const Options& o_;
    const Mode mode_;
    MPI_Comm comm_;
    double clock_offset_;  ///< this rank's clock minus rank 0's (s)
    const std::vector<MPI_Comm>& part_comms_;
    Crew& crew_;
    const ComputePlan plan_;
    const BlockLayout layout_;
    int rank_ = 0;
    int size_ = 0;
    bool contributes_ = true;
    std::size_t block_;  ///< elements per block (bcast, reduce, allreduce: the whole buffer)
    std::size_t per_part_;
    std::vector<double> input_;   ///< all but bcast: this rank's contribution (its send blocks)
    std::vector<double> result_;  ///< bcast: the buffer; the others: the result (recv blocks)
    std::vector<MPI_Request> part_requests_;
    MPI_Datatype strided_ = MPI_DATATYPE_NULL;  ///< block-wise multi: strided_type
    MPI_Request request_ = MPI_REQUEST_NULL;
    double phase_ = 0;
};

void CollectiveRun::fill(int round)
{
    if (o_.collective == CollectiveKind::bcast) {
        for (std::size_t i = 0; i < result_.size(); ++i) {
            result_[i] = rank_ == kRoot ? input(kRoot, round, i) : -1.0;
        }
        return;
    }
    for (std::size_t i = 0; i < input_.size(); ++i) {
        input_[i] = input(rank_, round, i);
    }
    std::fill(result_.begin(), result_.end(), -1.0);
}

/// Element @p i of the result in round @p round: the sum over the ranks (reduce, allreduce),
/// else the element of the block it came from.
double CollectiveRun::expected(int round, std::size_t i) const
{
    if (o_.collective == CollectiveKind::reduce || o_.collective == CollectiveKind::allreduce) {
        double sum = 0;
        for (int r = 0; r < size_; ++r) {
            sum += input(r, round, i);
        }
        return sum;
    }
    const auto [from, block] = layout_.sources[i / block_];
    return input(from, round, static_cast<std::size_t>(block) * block_ + i % block_);
}

/// Counts the result elements that differ from the expected ones in any byte.
long CollectiveRun::check_result(int round) const
{
    const bool receives = o_.collective != CollectiveKind::reduce || rank_ == kRoot;
    if (!receives) {
        return 0;
    }
    long wrong = 0;
    for (std::size_t i = 0; i < result_.size(); ++i) {
        const double want = expected(round, i);
        wrong += std::memcmp(&result_[i], &want, sizeof want) != 0 ? 1 : 0;
    }
    return wrong;
}

/// A contributing rank's compute phase of one round that began at @p start: thread t computes
/// its partitions of @p plan (laggard partition @p laggard, -1 for none), handing each over;
/// the last to finish runs @p tail. Returns the end of the compute (sleep, spin: the scheduled
/// end; work: the last compute end) and sets @p phase to the phase's length (s).
template <class HandOver, class Tail>
double compute_phase(const ComputePlan& plan, Crew& crew, Clock::time_point start, int laggard,
                     HandOver&& hand_over, Tail&& tail, double* phase)
{
    std::vector<double> ends(static_cast<std::size_t>(plan.threads()), 0.0);
    crew.run(
        [&](int t) {
            plan.run_share(t, start, laggard, [&](int p) {
                ends[static_cast<std::size_t>(t)] = now();
                hand_over(p);
            });
        },
        tail);
    const double last = *std::max_element(ends.begin(), ends.end());
    *phase = last - seconds_of(start);
    return plan.kind() == ComputeKind::work ? last : seconds_of(plan.scheduled_end(start, laggard));
}

double CollectiveRun::round(int round, int laggard_rank, int laggard, long* errors)
{
    if (o_.verify || round == 0) {
        fill(round);
    }
    check(MPI_Barrier(comm_), "MPI_Barrier");
    if (request_ != MPI_REQUEST_NULL) {
        check(MPI_Start(&request_), "MPI_Start");
    }
    const auto start = Clock::now();
    const bool lags = rank_ == laggard_rank;
    double done = 0;
    double end = -std::numeric_limits<double>::infinity();
    double phase = 0;
    if (contributes_) {
        end = compute_phase(
            plan_, crew_, start, lags ? laggard : -1, [&](int p) { hand_over(p); },
            [&] {
                complete();
                done = now();
            },
            &phase);
    } else {
        for (int t = 0; mode_ == Mode::multi && t < o_.partitions; ++t) {
            start_part(t);
        }
        complete();
        done = now();
    }
    // The reference is the end of the laggard's compute (see sweep.cpp), on rank 0's clock;
    // non-contributors compute nothing.
    const double offset = clock_offset_;
    const double local[3] = {end - offset, done - offset, phase};
    double global[3] = {0, 0, 0};
    check(MPI_Reduce(local, global, 3, MPI_DOUBLE, MPI_MAX, kRoot, comm_), "MPI_Reduce");
    if (o_.verify) {
        *errors += check_result(round);
    }
    phase_ = global[2];
    return rank_ == kRoot ? global[1] - global[0] : 0;
}

std::string size_text(std::size_t bytes)
{
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                   : std::to_string(bytes >> 10) + " KiB";
}

/// One round's laggard, drawn alike on every rank (the generator is seeded alike everywhere):
/// a rank and one of its partitions; a bcast's laggard is on the root, the only contributor.
std::pair<int, int> draw_laggard(const Options& options, int size, std::mt19937& rng)
{
    std::uniform_int_distribution<int> pick_rank(0, size - 1);
    std::uniform_int_distribution<int> pick_partition(0, options.partitions - 1);
    int lag_rank = pick_rank(rng);
    const int lag_partition = pick_partition(rng);
    if (options.collective == CollectiveKind::bcast) {
        lag_rank = kRoot;
    }
    return {lag_rank, lag_partition};
}

/// One run of one point's rounds: on rank 0 the perceived time and the slowest contributor's
/// compute phase of every measured round; on every rank its process CPU per round.
struct RepeatSample {
    std::vector<double> perceived;
    std::vector<double> phases;
    double cpu = 0;
};

RepeatSample run_repeat(const Options& options, Mode mode, std::size_t bytes,
                        const CollectiveComms& comms, double offset, Crew& crew, std::mt19937& rng,
                        long* verify_errors)
{
    int size = 0;
    check(MPI_Comm_size(comms.grid, &size), "MPI_Comm_size");
    CollectiveRun run(options, mode, bytes, comms, offset, crew);
    RepeatSample sample;
    CpuSample from;
    for (int it = 0; it < options.warmup + options.iterations; ++it) {
        if (it == options.warmup) {
            from = cpu_sample();
        }
        const auto [lag_rank, lag_partition] = draw_laggard(options, size, rng);
        const double t = run.round(it, lag_rank, lag_partition, verify_errors);
        if (it >= options.warmup) {
            sample.perceived.push_back(t);
            sample.phases.push_back(run.phase());
        }
    }
    sample.cpu = cpu_per_iteration(from, cpu_sample(), options.iterations).process;
    return sample;
}

/// The contributors' compute phase without communication, the same number of rounds: the
/// median over rounds of the slowest contributor's phase (rank 0; s). Non-contributors sleep
/// meanwhile. Collective.
double compute_reference(const Options& options, MPI_Comm comm, Crew& crew, std::mt19937 rng)
{
    int rank = 0;
    int size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const bool contributes = options.collective != CollectiveKind::bcast || rank == kRoot;
    const ComputePlan plan = options.compute_plan();
    std::vector<double> phases;
    for (int it = 0; it < options.warmup + options.iterations; ++it) {
        const auto [lag_rank, lag_partition] = draw_laggard(options, size, rng);
        check(MPI_Barrier(comm), "MPI_Barrier");
        double phase = 0;
        if (contributes) {
            compute_phase(
                plan, crew, Clock::now(), rank == lag_rank ? lag_partition : -1, [](int) {}, [] {},
                &phase);
        }
        // Sleep-wait for the slowest: a blocking reduction would poll a core.
        double slowest = 0;
        MPI_Request request = MPI_REQUEST_NULL;
        check(MPI_Ireduce(&phase, &slowest, 1, MPI_DOUBLE, MPI_MAX, kRoot, comm, &request),
              "MPI_Ireduce");
        sleep_wait(&request);
        if (it >= options.warmup) {
            phases.push_back(slowest);
        }
    }
    return summarize(phases).median;
}

/// The median of the ranks' @p value (on rank 0). Collective.
double median_over_ranks(double value, MPI_Comm comm)
{
    int rank = 0;
    int size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    std::vector<double> all(static_cast<std::size_t>(size));
    check(MPI_Gather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, kRoot, comm), "MPI_Gather");
    return rank == kRoot ? summarize(all).median : 0;
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

/// The ideal bound of BENCHMARK.md against single at @p p's size: if the data moved at the
/// speed of the plain collective after the join (its perceived time t) and everything but the
/// laggard's partitions moved during the laggard's delay d, a partitioned collective would
/// take max(t / P, t - d): returns that over t (NaN without single).
double ideal_ratio(const std::vector<CollectivePoint>& points, const CollectivePoint& p,
                   const Options& options)
{
    for (const auto& q : points) {
        if (q.bytes == p.bytes && q.mode == Mode::single && !q.perceived.empty()) {
            const double t = summarize(q.perceived).median;
            return t > 0 ? std::max(1.0 / options.partitions, 1.0 - options.laggard_delay() / t)
                         : NAN;
        }
    }
    return NAN;
}

/// Adds one repeat's @p sample to @p point (with --repeats, its medians), its slowdowns
/// against @p reference; returns their median. Collective (the CPU's median over the ranks).
double add_sample(CollectivePoint& point, const RepeatSample& sample, double reference,
                  const Options& options, MPI_Comm comm)
{
    std::vector<double> slowdown;
    for (const double phase : sample.phases) {
        slowdown.push_back(phase / reference);
    }
    if (options.repeats == 1) {
        point.perceived = sample.perceived;
        point.slowdown = slowdown;
    } else {
        point.perceived.push_back(summarize(sample.perceived).median);
        point.slowdown.push_back(summarize(slowdown).median);
    }
    point.cpu.push_back(median_over_ranks(sample.cpu, comm));
    return summarize(slowdown).median;
}

/// For the table: what a block-wise collective's size is and where its blocks go.
void describe_blocks(std::FILE* out, CollectiveKind kind, int ranks)
{
    int dims[2] = {0, 0};
    switch (kind) {
        case CollectiveKind::gather:
            std::fprintf(out, "# size = one block: every rank sends its block to rank 0\n");
            return;
        case CollectiveKind::allgather:
            std::fprintf(out, "# size = one block: every rank sends its block to every rank\n");
            return;
        case CollectiveKind::alltoall:
            std::fprintf(out, "# size = one block: every rank sends one to every rank\n");
            return;
        case CollectiveKind::neighbor:
            check(MPI_Dims_create(ranks, 2, dims), "MPI_Dims_create");
            if (dims[1] == 1) {
                std::fprintf(out,
                             "# size = one block: every rank sends one to each of its 2 "
                             "neighbours on a periodic ring of %d ranks\n",
                             ranks);
            } else {
                std::fprintf(out,
                             "# size = one block: every rank sends one to each of its 4 "
                             "neighbours on a periodic %d x %d grid\n",
                             dims[0], dims[1]);
            }
            return;
        default:
            return;
    }
}

}  // namespace

std::string collective_usage_error(const Options& options)
{
    const std::size_t unit = sizeof(double) * static_cast<std::size_t>(options.partitions);
    for (const std::size_t bytes : options.sizes) {
        if (bytes % unit != 0) {
            return "--collective: --sizes " + std::to_string(bytes) +
                   " bytes is not a multiple of 8 * --partitions (the elements are doubles" +
                   (is_blockwise(options.collective)
                        ? "; the size is one block, and every block has --partitions partitions)"
                        : ")");
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
    const CollectiveComms comms(options, comm,
                                std::find(modes.begin(), modes.end(), Mode::multi) != modes.end());
    if (comms.list_order && rank == kRoot) {
        std::fprintf(stderr,
                     "mpipcl-bench: this MPI's MPI_Ineighbor_alltoall pairs the two blocks of a "
                     "dimension whose neighbours are one rank in list order, not as MPI-4.1 "
                     "says (Open MPI's libnbc); multi's --verify expects its order\n");
    }
    Crew crew(options.compute_threads());
    std::mt19937 rng(options.seed);
    std::vector<CollectivePoint> points;
    const std::size_t total =
        options.sizes.size() * modes.size() * static_cast<std::size_t>(options.repeats);
    std::size_t done = 0;
    for (const std::size_t bytes : options.sizes) {
        const std::size_t first = points.size();
        for (const Mode mode : modes) {
            points.push_back(CollectivePoint{mode, bytes, {}, {}, {}});
        }
        for (int r = 0; r < options.repeats; ++r) {
            // The slowdown's reference, in every repeat, right before the modes it is compared
            // with.
            const double reference = compute_reference(options, comms.grid, crew, rng);
            for (std::size_t k = 0; k < modes.size(); ++k) {
                const std::size_t m = (k + static_cast<std::size_t>(r)) % modes.size();
                const RepeatSample sample =
                    run_repeat(options, modes[m], bytes, comms, offset, crew, rng, verify_errors);
                const double slowdown =
                    add_sample(points[first + m], sample, reference, options, comms.grid);
                ++done;
                if (rank == kRoot) {
                    std::fprintf(stderr,
                                 "mpipcl-bench: [%zu/%zu] %s %s %s: perceived %.1f us, compute "
                                 "slowdown %.3f\n",
                                 done, total, collective_name(options.collective),
                                 mode_name(modes[m]), size_text(bytes).c_str(),
                                 summarize(sample.perceived).median * 1e6, slowdown);
                }
            }
        }
    }
    return points;
}

void print_collective_table(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                            const std::vector<CollectivePoint>& points)
{
    std::fprintf(out,
                 "# mpipcl-bench --collective %s: %d ranks, %d partitions, %d compute threads "
                 "per rank, compute %s %g ms, noise %g %%, %d iterations, %d repeats\n",
                 collective_name(options.collective), ranks, options.partitions,
                 options.compute_threads(), compute_name(options.compute), options.compute_ms,
                 options.noise_pct, options.iterations, options.repeats);
    std::fprintf(out, "# %s; mpipcl %s\n", info.mpi_library.c_str(), info.mpipcl_version.c_str());
    for (const auto& [mode, reason] : info.skipped) {
        std::fprintf(out, "# skipped %s: %s\n", mode_name(mode), reason.c_str());
    }
    std::fprintf(out,
                 "# perceived = the last rank's completion - the end of the laggard's "
                 "compute; single = one collective after the join, multi = one "
                 "non-blocking collective per partition;\n# slowdown = the slowest contributor's "
                 "compute phase / the same compute without communication; cpu = process CPU ms "
                 "per iteration, median over ranks;\n# ideal = max(t / P, t - d) / t for single's "
                 "time t and the laggard's delay d: the best ratio to single at single's speed\n");
    describe_blocks(out, options.collective, ranks);
    std::fprintf(out, "%10s  %-16s %14s %28s %10s %10s %9s %8s %6s\n", "size", "mode",
                 "perceived us", "[p10 .. p90]", "vs single", "vs multi", "slowdown", "cpu ms",
                 "ideal");
    for (const auto& p : points) {
        const Stats s = summarize(p.perceived);
        std::fprintf(out, "%10s  %-16s %14.1f [%11.1f .. %11.1f] %10.2f %10.2f %9.3f %8.2f %6.2f\n",
                     size_text(p.bytes).c_str(), mode_name(p.mode), s.median * 1e6, s.p10 * 1e6,
                     s.p90 * 1e6, ratio(points, p, Mode::single), ratio(points, p, Mode::multi),
                     summarize(p.slowdown).median, summarize(p.cpu).median * 1e3,
                     ideal_ratio(points, p, options));
    }
}

void write_collective_csv(std::FILE* out, const Options& options, const RunInfo& info, int ranks,
                          const std::vector<CollectivePoint>& points)
{
    std::fprintf(out,
                 "collective,ranks,partitions,bytes,mode,compute_ms,noise_pct,iterations,repeats,"
                 "perceived_us_median,perceived_us_p10,perceived_us_p90,perceived_us_min,"
                 "perceived_us_max,ratio_to_single,ratio_to_multi,mpi_library,mpipcl_version,"
                 "compute,threads,compute_slowdown_median,cpu_ms,ideal_ratio_to_single\n");
    for (const auto& p : points) {
        const Stats s = summarize(p.perceived);
        std::fprintf(out,
                     "%s,%d,%d,%zu,%s,%g,%g,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%s,%s,%d,"
                     "%.4f,%.4f,%.4f\n",
                     collective_name(options.collective), ranks, options.partitions, p.bytes,
                     mode_name(p.mode), options.compute_ms, options.noise_pct, options.iterations,
                     options.repeats, s.median * 1e6, s.p10 * 1e6, s.p90 * 1e6, s.min * 1e6,
                     s.max * 1e6, ratio(points, p, Mode::single), ratio(points, p, Mode::multi),
                     csv_quoted(info.mpi_library).c_str(), csv_quoted(info.mpipcl_version).c_str(),
                     compute_name(options.compute), options.compute_threads(),
                     summarize(p.slowdown).median, summarize(p.cpu).median * 1e3,
                     ideal_ratio(points, p, options));
    }
}

}  // namespace mpipcl::bench
