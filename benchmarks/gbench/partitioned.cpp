// SPDX-License-Identifier: BSD-3-Clause
// Micro-benchmarks: Pready and Parrived per call, the Start-Pready-Wait round trip against
// persistent point-to-point, and the cost of init + first round + free.
#include <malloc.h>
#include <mpi.h>
#include <mpipcl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "crew.hpp"
#include "harness.hpp"
#include "mpi_util.hpp"

namespace mpipcl::bench {

namespace {

constexpr int kSender = 0;
constexpr int kPingTag = 1;
constexpr int kPongTag = 2;
constexpr int kManyPartitions = 1024;     // Pready / Parrived per-call benchmarks
constexpr MPI_Count kSmallPartition = 8;  // bytes per partition there
constexpr int kRoundTripPartitions = 8;   // so the smallest round trip (8 B) is 1 B each
constexpr int kInitBytes = 64 << 10;      // total size in the init + free benchmark
constexpr std::int64_t kLargestRoundTrip = 1 << 20;
/// Rounds of the Pready benchmarks unless --benchmark_min_time is given: 5000 x 1024 calls.
/// Time-based, Google Benchmark sized them by the few microseconds of Pready calls per round
/// and ran ~10^5 rounds, minutes where a round takes a millisecond (rma and native on MPICH).
constexpr benchmark::IterationCount kPreadyRounds = 5000;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// CPU time this thread has run (not the time it waited for a core).
double thread_cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool is_sender() { return harness().rank == kSender; }

int peer() { return 1 - harness().rank; }

/// Bytes of heap in use (glibc's mallinfo2); 0 where it is unavailable.
double heap_in_use()
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 info = mallinfo2();
    return static_cast<double>(info.uordblks + info.hblkhd);
#else
    return 0;
#endif
}

/// One partitioned send to, or receive from, the peer rank, on a caller-owned buffer.
class PartitionedRequest {
   public:
    PartitionedRequest(const std::string& backend, bool send, int partitions, MPI_Count count,
                       void* buffer, int tag)
        : partitions_(partitions)
    {
        const BackendInfo info(backend);
        if (send) {
            check(MPI_Psend_init(buffer, partitions, count, MPI_BYTE, peer(), tag, harness().comm,
                                 info.get(), &request_),
                  "MPI_Psend_init");
        } else {
            check(MPI_Precv_init(buffer, partitions, count, MPI_BYTE, peer(), tag, harness().comm,
                                 info.get(), &request_),
                  "MPI_Precv_init");
        }
    }
    PartitionedRequest(const PartitionedRequest&) = delete;
    PartitionedRequest& operator=(const PartitionedRequest&) = delete;
    ~PartitionedRequest() { MPI_Request_free(&request_); }

    void start() { check(MPI_Start(&request_), "MPI_Start"); }
    /// Marks every partition ready (send side).
    void ready() { check(MPI_Pready_range(0, partitions_ - 1, request_), "MPI_Pready_range"); }
    void wait() { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }
    [[nodiscard]] MPI_Request get() const { return request_; }

    /// Times one MPI_Parrived call on every partition (receive side).
    double time_parrived()
    {
        int flag = 0;
        const auto start = Clock::now();
        for (int p = 0; p < partitions_; ++p) {
            check(MPI_Parrived(request_, p, &flag), "MPI_Parrived");
        }
        benchmark::DoNotOptimize(flag);
        return seconds_since(start);
    }

    /// Polls until every partition has arrived (receive side).
    void wait_arrived()
    {
        for (int p = 0; p < partitions_; ++p) {
            for (int flag = 0; flag == 0;) {
                check(MPI_Parrived(request_, p, &flag), "MPI_Parrived");
            }
        }
    }

   private:
    int partitions_;
    MPI_Request request_ = MPI_REQUEST_NULL;
};

/// The baseline: plain persistent MPI_Send_init / MPI_Recv_init with the same bytes.
class PersistentRequest {
   public:
    PersistentRequest(bool send, std::int64_t bytes, void* buffer, int tag)
    {
        const auto count = static_cast<int>(bytes);
        if (send) {
            check(MPI_Send_init(buffer, count, MPI_BYTE, peer(), tag, harness().comm, &request_),
                  "MPI_Send_init");
        } else {
            check(MPI_Recv_init(buffer, count, MPI_BYTE, peer(), tag, harness().comm, &request_),
                  "MPI_Recv_init");
        }
    }
    PersistentRequest(const PersistentRequest&) = delete;
    PersistentRequest& operator=(const PersistentRequest&) = delete;
    ~PersistentRequest() { MPI_Request_free(&request_); }

    void start() { check(MPI_Start(&request_), "MPI_Start"); }
    void ready() {}
    void wait() { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }

   private:
    MPI_Request request_ = MPI_REQUEST_NULL;
};

/// Mean round-trip time of the plain persistent baseline per size, for the vs_plain ratio.
std::map<std::int64_t, double>& plain_round_trip()
{
    static std::map<std::int64_t, double> times;
    return times;
}

/// T worker threads that run one job together and time it: each starts when all are there
/// (so the calls really are concurrent), and the slowest thread's wall time and the largest
/// thread CPU time are kept.
class TimedCrew {
   public:
    explicit TimedCrew(int threads) : crew_(threads), spent_(threads), cpu_(threads) {}

    /// Runs job(i) on thread i; returns the slowest thread's wall time in seconds.
    double run(const std::function<void(int)>& job)
    {
        gate_.store(0);
        crew_.run([&](int i) {
            gate_.fetch_add(1);
            while (gate_.load() < crew_.size()) {
                std::this_thread::yield();
            }
            const double cpu_start = thread_cpu_seconds();
            const auto start = Clock::now();
            job(i);
            spent_[static_cast<std::size_t>(i)] = seconds_since(start);
            cpu_[static_cast<std::size_t>(i)] = thread_cpu_seconds() - cpu_start;
        });
        return *std::max_element(spent_.begin(), spent_.end());
    }

    /// The largest thread CPU time of the last run, in seconds.
    [[nodiscard]] double cpu() const { return *std::max_element(cpu_.begin(), cpu_.end()); }

   private:
    Crew crew_;
    std::vector<double> spent_;
    std::vector<double> cpu_;
    std::atomic<int> gate_{0};
};

/// Pready cost: T threads (range 0) each mark their own 1024/T partitions of one request.
/// Counters: ns_per_call, the slowest thread's wall time per call (with more threads than
/// cores it includes waiting for a core), and cpu_ns_per_call, the largest thread CPU time per
/// call (what a call costs, contention on shared cache lines included, waiting excluded).
void bm_pready(benchmark::State& state, const std::string& backend)
{
    const int threads = static_cast<int>(state.range(0));
    const int per_thread = kManyPartitions / threads;
    std::vector<char> buffer(static_cast<std::size_t>(kManyPartitions * kSmallPartition));
    PartitionedRequest request(backend, is_sender(), kManyPartitions, kSmallPartition,
                               buffer.data(), kPingTag);
    std::unique_ptr<TimedCrew> crew = is_sender() ? std::make_unique<TimedCrew>(threads) : nullptr;
    const auto mark_own_partitions = [&](int i) {
        for (int p = i * per_thread; p < (i + 1) * per_thread; ++p) {
            check(MPI_Pready(p, request.get()), "MPI_Pready");
        }
    };

    double per_call_ns = 0;
    double cpu_per_call_ns = 0;
    for (auto _ : state) {
        request.start();
        double elapsed = 0;
        if (crew) {
            elapsed = crew->run(mark_own_partitions);
            cpu_per_call_ns += crew->cpu() / per_thread * 1e9;
        }
        request.wait();
        per_call_ns += set_iteration_time(state, elapsed) / per_thread * 1e9;
    }
    state.counters["ns_per_call"] =
        benchmark::Counter(per_call_ns, benchmark::Counter::kAvgIterations);
    // Rank 0's figure (the sender); rank 1 only waits.
    state.counters["cpu_ns_per_call"] =
        benchmark::Counter(cpu_per_call_ns, benchmark::Counter::kAvgIterations);
}

/// Parrived cost: T receiver threads (range 0) each poll their own 1024/T partitions,
/// kParrivedSweeps times over, on partitions that have all arrived, or none yet (the sender
/// waits for a barrier before it marks them ready). ns_per_call: the slowest thread's wall
/// time per call; cpu_ns_per_call: the largest thread CPU time per call (as in bm_pready).
void bm_parrived(benchmark::State& state, const std::string& backend, bool arrived)
{
    constexpr int kParrivedSweeps = 16;
    const int threads = static_cast<int>(state.range(0));
    const int per_thread = kManyPartitions / threads;
    const double calls = static_cast<double>(per_thread) * kParrivedSweeps;
    std::vector<char> buffer(static_cast<std::size_t>(kManyPartitions * kSmallPartition));
    PartitionedRequest request(backend, is_sender(), kManyPartitions, kSmallPartition,
                               buffer.data(), kPingTag);
    std::unique_ptr<TimedCrew> crew = is_sender() ? nullptr : std::make_unique<TimedCrew>(threads);
    double elapsed = 0;
    const auto poll = [&] {
        elapsed = crew->run([&](int i) {
            int flag = 0;
            for (int sweep = 0; sweep < kParrivedSweeps; ++sweep) {
                for (int p = i * per_thread; p < (i + 1) * per_thread; ++p) {
                    check(MPI_Parrived(request.get(), p, &flag), "MPI_Parrived");
                }
            }
            benchmark::DoNotOptimize(flag);
        });
    };

    double per_call_ns = 0;
    double cpu_per_call_ns = 0;
    for (auto _ : state) {
        request.start();
        elapsed = 0;
        if (arrived) {
            if (is_sender()) {
                request.ready();
            } else {
                request.wait_arrived();
                poll();
            }
        } else {
            if (!is_sender()) {
                poll();
            }
            check(MPI_Barrier(harness().comm), "MPI_Barrier");
            if (is_sender()) {
                request.ready();
            }
        }
        request.wait();
        double cpu_ns = crew ? crew->cpu() / calls * 1e9 : 0;
        // The receiver measures; rank 0 reports (set_iteration_time reduces the wall time).
        check(MPI_Allreduce(MPI_IN_PLACE, &cpu_ns, 1, MPI_DOUBLE, MPI_MAX, harness().comm),
              "MPI_Allreduce");
        cpu_per_call_ns += cpu_ns;
        per_call_ns += set_iteration_time(state, elapsed) / calls * 1e9;
    }
    state.counters["ns_per_call"] =
        benchmark::Counter(per_call_ns, benchmark::Counter::kAvgIterations);
    state.counters["cpu_ns_per_call"] =
        benchmark::Counter(cpu_per_call_ns, benchmark::Counter::kAvgIterations);
}

/// Rank 0 sends ping and receives pong; rank 1 the other way round. Returns the mean time.
template <class Request>
double round_trip(benchmark::State& state, Request& ping, Request& pong)
{
    double total = 0;
    for (auto _ : state) {
        const auto start = Clock::now();
        if (is_sender()) {
            pong.start();
            ping.start();
            ping.ready();
            ping.wait();
            pong.wait();
        } else {
            ping.start();
            ping.wait();
            pong.start();
            pong.ready();
            pong.wait();
        }
        total += set_iteration_time(state, seconds_since(start));
    }
    state.SetBytesProcessed(2 * state.range(0) * state.iterations());
    return state.iterations() > 0 ? total / static_cast<double>(state.iterations()) : 0;
}

void bm_round_trip_plain(benchmark::State& state)
{
    const std::int64_t bytes = state.range(0);
    std::vector<char> out(static_cast<std::size_t>(bytes));
    std::vector<char> in(static_cast<std::size_t>(bytes));
    PersistentRequest ping(is_sender(), bytes, is_sender() ? out.data() : in.data(), kPingTag);
    PersistentRequest pong(!is_sender(), bytes, is_sender() ? in.data() : out.data(), kPongTag);
    plain_round_trip()[bytes] = round_trip(state, ping, pong);
}

void bm_round_trip(benchmark::State& state, const std::string& backend)
{
    const std::int64_t bytes = state.range(0);
    const MPI_Count count = bytes / kRoundTripPartitions;
    std::vector<char> out(static_cast<std::size_t>(bytes));
    std::vector<char> in(static_cast<std::size_t>(bytes));
    PartitionedRequest ping(backend, is_sender(), kRoundTripPartitions, count,
                            is_sender() ? out.data() : in.data(), kPingTag);
    PartitionedRequest pong(backend, !is_sender(), kRoundTripPartitions, count,
                            is_sender() ? in.data() : out.data(), kPongTag);
    const double mean = round_trip(state, ping, pong);
    if (const auto it = plain_round_trip().find(bytes); it != plain_round_trip().end()) {
        state.counters["vs_plain"] = mean / it->second;
    }
}

/// Heap bytes one live request holds after its first round: kHeldRequests requests of the
/// given shape are created and taken through one round each, then measured together, so a
/// free the library defers from earlier requests cannot hide them. The larger rank's figure.
double heap_per_request(const std::string& backend, int partitions, std::vector<char>& buffer)
{
    constexpr int kHeldRequests = 32;
    // The slots exist before the first reading: only the library's allocations count.
    std::vector<std::optional<PartitionedRequest>> held(kHeldRequests);
    const double before = heap_in_use();
    for (auto& slot : held) {
        PartitionedRequest& request = slot.emplace(
            backend, is_sender(), partitions, kInitBytes / partitions, buffer.data(), kPingTag);
        // One round at a time: the requests share the buffer, but are never active together.
        request.start();
        if (is_sender()) {
            request.ready();
        }
        request.wait();
    }
    const double bytes = (heap_in_use() - before) / kHeldRequests;
    held.clear();
    double largest = 0;
    check(MPI_Allreduce(&bytes, &largest, 1, MPI_DOUBLE, MPI_MAX, harness().comm), "MPI_Allreduce");
    return largest;
}

/// Psend_init/Precv_init + Start + Pready(all) + Wait + Request_free of a 64 KiB transfer with
/// range(0) partitions; counter heap_bytes = heap per live request after its first round.
void bm_init_free(benchmark::State& state, const std::string& backend)
{
    const int partitions = static_cast<int>(state.range(0));
    std::vector<char> buffer(kInitBytes);
    for (auto _ : state) {
        const auto start = Clock::now();
        {
            PartitionedRequest request(backend, is_sender(), partitions, kInitBytes / partitions,
                                       buffer.data(), kPingTag);
            request.start();
            if (is_sender()) {
                request.ready();
            }
            request.wait();
        }
        set_iteration_time(state, seconds_since(start));
    }
    state.counters["heap_bytes"] = heap_per_request(backend, partitions, buffer);
}

}  // namespace

void register_benchmarks(const std::vector<std::string>& backends, bool fixed_pready_rounds)
{
    for (const auto& b : backends) {
        auto* bm = benchmark::RegisterBenchmark(("Pready/" + b).c_str(), bm_pready, b)
                       ->ArgName("threads")
                       ->Arg(1)
                       ->Arg(16)
                       ->UseManualTime()
                       ->Unit(benchmark::kMicrosecond);
        if (fixed_pready_rounds) {
            bm->Iterations(kPreadyRounds);
        }
    }
    for (const auto& b : backends) {
        for (const bool arrived : {true, false}) {
            const std::string name = "Parrived/" + b + (arrived ? "/arrived" : "/pending");
            auto* bm = benchmark::RegisterBenchmark(name.c_str(), bm_parrived, b, arrived)
                           ->ArgName("threads")
                           ->Arg(1)
                           ->UseManualTime()
                           ->Unit(benchmark::kMicrosecond);
            // MPICH 4.0's own MPI_Parrived did not return within minutes with 16 threads
            // polling one request (Parrived/native/arrived/threads:16): mpipcl's backends only.
            if (b != "native") {
                bm->Arg(16);
            }
        }
    }
    // The baseline first: the partitioned round trips divide by its times (vs_plain).
    benchmark::RegisterBenchmark("RoundTrip/plain", bm_round_trip_plain)
        ->ArgName("bytes")
        ->RangeMultiplier(8)
        ->Range(kRoundTripPartitions, kLargestRoundTrip)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    for (const auto& b : backends) {
        benchmark::RegisterBenchmark(("RoundTrip/" + b).c_str(), bm_round_trip, b)
            ->ArgName("bytes")
            ->RangeMultiplier(8)
            ->Range(kRoundTripPartitions, kLargestRoundTrip)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    }
    for (const auto& b : backends) {
        benchmark::RegisterBenchmark(("InitFree/" + b).c_str(), bm_init_free, b)
            ->ArgName("partitions")
            ->Arg(1)
            ->Arg(16)
            ->Arg(256)
            ->Arg(4096)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace mpipcl::bench
