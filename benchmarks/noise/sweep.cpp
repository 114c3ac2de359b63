// SPDX-License-Identifier: BSD-3-Clause
// The measurement loop of mpipcl-bench: plain-send baselines and the noisy-compute iterations.
#include "sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <thread>

#include "mpi_util.hpp"
#include "report.hpp"

namespace mpipcl::bench {

namespace {

constexpr int kSender = 0;
constexpr int kReceiver = 1;
constexpr int kAckTag = 1;
constexpr int kPingTag = 2;
constexpr int kResultTag = 3;
constexpr int kBaselineTag = 4;
constexpr int kDataTag = 100;    // multi: kDataTag + i for part i (up to 1024 parts)
constexpr int kReplyTag = 2000;  // the pipeline's replies, likewise
constexpr int kWarmPings = 10;
constexpr int kPingPongs = 100;
constexpr int kMinBaselineWarmup = 2;  // the bound must not rest on a cold first send
constexpr int kMinBaselineSends = 10;
constexpr std::size_t kNoMismatch = std::numeric_limits<std::size_t>::max();

using Clock = std::chrono::steady_clock;

/// Seconds on this process's steady clock; the receiver's differ by the estimated offset.
double now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

/// Byte i of the buffer in iteration round under --verify: a multiplicative hash, so a
/// shifted or swapped part or a stale iteration shows up as a mismatch.
unsigned char pattern(int round, std::size_t i)
{
    const std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL +
                            static_cast<std::uint64_t>(round + 1) * 0xD1B54A32D192ED03ULL;
    return static_cast<unsigned char>(x >> 56);
}

}  // namespace

Sweep::Sweep(const Options& options, MPI_Comm comm)
    : options_(options), plan_(options.compute_plan()), comm_(comm)
{
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    buffer_.assign(*std::max_element(options_.sizes.begin(), options_.sizes.end()), 0);
    const auto parts = static_cast<std::size_t>(options_.partitions);
    const bool pipeline = std::find(options_.sides.begin(), options_.sides.end(), Side::pipeline) !=
                          options_.sides.end();
    if (pipeline) {
        reply_buffer_.assign(parts * static_cast<std::size_t>(options_.reply_bytes), 0);
    }
    if (rank_ == kSender) {
        ready_stamps_.resize(parts);
        handed_stamps_.resize(parts);
        reply_stamps_.resize(parts);
    } else {
        part_stamps_.resize(parts);
    }
    if (rank_ == kSender || pipeline) {
        crew_ = std::make_unique<Crew>(plan_.threads());
    }
}

double Sweep::now_seconds() { return now(); }

void Sweep::fill_share(int thread, std::size_t part, int round)
{
    if (!options_.verify) {
        return;
    }
    for (int p = thread; p < plan_.partitions(); p += plan_.threads()) {
        const std::size_t first = static_cast<std::size_t>(p) * part;
        for (std::size_t b = first; b < first + part; ++b) {
            buffer_[b] = pattern(round, b);
        }
    }
}

void Sweep::end_of_compute(Clock::time_point start, int laggard, Iteration& out) const
{
    out.last_ready = *std::max_element(ready_stamps_.begin(), ready_stamps_.end());
    const double begin = std::chrono::duration<double>(start.time_since_epoch()).count();
    out.phase = out.last_ready - begin;
    // sleep and spin: the compute ends when the laggard's deadline passes. That instant is the
    // reference, not a thread's stamp: a stamp comes later when its thread waits for a core
    // (behind the library's work in Pready, MPI_Isend's copies, or the receiver on 2 cores);
    // measuring from the last stamp made part-rma look 5-11x faster than possible. The late
    // column shows it. work has no deadline: its compute ends when the last partition's
    // arithmetic does, and every wait for a core lengthens it (the compute slowdown).
    out.compute_end =
        plan_.kind() == ComputeKind::work
            ? out.last_ready
            : std::chrono::duration<double>(plan_.scheduled_end(start, laggard).time_since_epoch())
                  .count();
}

double Sweep::compute_reference()
{
    check(MPI_Barrier(comm_), "MPI_Barrier");
    MPI_Request done = MPI_REQUEST_NULL;
    if (rank_ != kSender) {
        // Sleep while the sender computes: an MPI_Barrier would poll a core.
        check(MPI_Ibarrier(comm_, &done), "MPI_Ibarrier");
        sleep_wait(&done);
        return 0;
    }
    std::mt19937 rng(options_.seed);  // the laggards of every point
    std::uniform_int_distribution<int> pick_laggard(0, options_.partitions - 1);
    std::vector<double> phases;
    for (int k = -options_.warmup; k < options_.iterations; ++k) {
        const int laggard = pick_laggard(rng);
        Iteration it;
        const auto start = Clock::now();
        crew_->run([&](int t) { compute_share(t, start, laggard, [](int) {}); });
        end_of_compute(start, laggard, it);
        if (k >= 0) {
            phases.push_back(it.phase);
        }
    }
    check(MPI_Ibarrier(comm_, &done), "MPI_Ibarrier");
    check(MPI_Wait(&done, MPI_STATUS_IGNORE), "MPI_Wait");
    std::nth_element(phases.begin(),
                     phases.begin() + static_cast<std::ptrdiff_t>(phases.size() / 2), phases.end());
    return phases[phases.size() / 2];
}

Baseline Sweep::measure_baseline(std::size_t bytes)
{
    Baseline baseline;
    // 1-byte ping, 8-byte reply carrying the receiver's clock: L and the clock offset, both
    // from the fastest round trip (Cristian's algorithm). The bound takes best cases: the
    // fastest round trip and, below, the fastest plain send.
    double fastest = std::numeric_limits<double>::infinity();
    for (int k = 0; k < kWarmPings + kPingPongs; ++k) {
        unsigned char ping = 0;
        if (rank_ == kSender) {
            double remote = 0;
            const double t0 = now();
            check(MPI_Send(&ping, 1, MPI_BYTE, kReceiver, kPingTag, comm_), "MPI_Send");
            check(MPI_Recv(&remote, 1, MPI_DOUBLE, kReceiver, kPingTag, comm_, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            const double t2 = now();
            if (k >= kWarmPings && t2 - t0 < fastest) {
                fastest = t2 - t0;
                baseline.clock_offset = remote - (t0 + t2) / 2;
            }
        } else {
            check(MPI_Recv(&ping, 1, MPI_BYTE, kSender, kPingTag, comm_, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            const double t1 = now();
            check(MPI_Send(&t1, 1, MPI_DOUBLE, kSender, kPingTag, comm_), "MPI_Send");
        }
    }
    baseline.latency = fastest / 2;

    const auto parts = static_cast<std::size_t>(options_.partitions);
    baseline.send_time = fastest_send(bytes, 1);
    // With one partition all three are the same single send: measure it once.
    baseline.stream_time =
        parts == 1 ? baseline.send_time : fastest_send(bytes, options_.partitions);
    baseline.part_send_time = parts == 1 ? baseline.send_time : fastest_send(bytes / parts, 1);
    return baseline;
}

double Sweep::fastest_send(std::size_t bytes, int pieces)
{
    const std::size_t piece = bytes / static_cast<std::size_t>(pieces);
    const int count = static_cast<int>(piece);
    std::vector<MPI_Request> requests(static_cast<std::size_t>(pieces) + 1, MPI_REQUEST_NULL);
    double fastest = std::numeric_limits<double>::infinity();
    const int warmup = std::max(options_.warmup, kMinBaselineWarmup);
    const int sends = std::max(options_.iterations, kMinBaselineSends);
    for (int k = -warmup; k < sends; ++k) {
        unsigned char ack = 0;
        if (rank_ == kSender) {
            check(MPI_Irecv(&ack, 1, MPI_BYTE, kReceiver, kBaselineTag, comm_, &requests[0]),
                  "MPI_Irecv");
            check(MPI_Barrier(comm_), "MPI_Barrier");
            const double t0 = now();
            for (int i = 0; i < pieces; ++i) {
                check(MPI_Isend(buffer_.data() + static_cast<std::size_t>(i) * piece, count,
                                MPI_BYTE, kReceiver, kBaselineTag, comm_,
                                &requests[static_cast<std::size_t>(i) + 1]),
                      "MPI_Isend");
            }
            check(MPI_Waitall(pieces + 1, requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
            if (k >= 0) {
                fastest = std::min(fastest, now() - t0);
            }
        } else {
            for (int i = 0; i < pieces; ++i) {
                check(
                    MPI_Irecv(buffer_.data() + static_cast<std::size_t>(i) * piece, count, MPI_BYTE,
                              kSender, kBaselineTag, comm_, &requests[static_cast<std::size_t>(i)]),
                    "MPI_Irecv");
            }
            check(MPI_Barrier(comm_), "MPI_Barrier");
            check(MPI_Waitall(pieces, requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(MPI_Send(&ack, 1, MPI_BYTE, kSender, kBaselineTag, comm_), "MPI_Send");
        }
    }
    return rank_ == kSender ? fastest : 0;
}

PointResult Sweep::run_point(Mode mode, Side side, std::size_t bytes, const Baseline& baseline,
                             double reference)
{
    PointResult result;
    result.mode = mode;
    result.side = side;
    result.bytes = bytes;
    result.baseline = baseline;

    const int peer = 1 - rank_;
    const Endpoint endpoint{comm_, rank_ == kSender, buffer_.data(), bytes, options_.partitions,
                            peer,  kDataTag};
    const auto transfer = make_transfer(mode, endpoint);
    // The pipeline's replies: the same mode the other way, reply_bytes per partition.
    std::unique_ptr<Transfer> reply;
    if (side == Side::pipeline) {
        const Endpoint back{comm_,
                            rank_ == kReceiver,
                            reply_buffer_.data(),
                            reply_buffer_.size(),
                            options_.partitions,
                            peer,
                            kReplyTag};
        reply = make_transfer(mode, back);
    }
    std::mt19937 rng(options_.seed);
    std::uniform_int_distribution<int> pick_laggard(0, options_.partitions - 1);
    const auto measured = static_cast<std::size_t>(options_.iterations);
    std::vector<Iteration> iterations(measured);
    long errors = 0;        // receiver: iterations with wrong data
    long local_errors = 0;  // sender, pipeline: iterations with a wrong reply
    CpuSample cpu_from;
    for (int k = -options_.warmup; k < options_.iterations; ++k) {
        if (k == 0) {
            cpu_from = cpu_sample();
        }
        Iteration warmup;
        Iteration& it = k >= 0 ? iterations[static_cast<std::size_t>(k)] : warmup;
        const int round = k + options_.warmup;
        if (rank_ == kSender) {
            const int laggard = pick_laggard(rng);
            if (!reply) {
                sender_iteration(*transfer, bytes, round, laggard, it);
            } else if (pipeline_sender(*transfer, *reply, bytes, round, laggard, it) &&
                       local_errors++ == 0) {
                std::fprintf(stderr,
                             "mpipcl-bench: --verify: %s pipeline %zu B, iteration %d: "
                             "wrong reply\n",
                             mode_name(mode), bytes, round);
            }
            continue;
        }
        const std::size_t bad = reply ? pipeline_receiver(*transfer, *reply, bytes, round, it)
                                      : receiver_iteration(*transfer, side, bytes, round, it);
        if (bad != kNoMismatch && errors++ == 0) {
            std::fprintf(stderr,
                         "mpipcl-bench: --verify: %s %s %zu B, iteration %d: byte %zu is %u, "
                         "expected %u\n",
                         mode_name(mode), side_name(side), bytes, round, bad,
                         unsigned{buffer_[bad]}, unsigned{pattern(round, bad)});
        }
    }

    const CpuSample cpu = cpu_per_iteration(cpu_from, cpu_sample(), options_.iterations);

    // The receiver hands its clock readings, CPU figures and error count to the sender: per
    // iteration first and done, and on the recv and pipeline sides every unit's arrival.
    const auto units = side != Side::send ? static_cast<std::size_t>(transfer->units()) : 0;
    const std::size_t stride = 2 + units;
    constexpr std::size_t kTail = 4;  // the receiver's CpuSample, then its error count
    std::vector<double> remote(stride * measured + kTail);
    if (rank_ == kReceiver) {
        remote[remote.size() - kTail] = cpu.process;
        remote[remote.size() - kTail + 1] = cpu.progress;
        remote[remote.size() - kTail + 2] = cpu.progress_wakeups;
        for (std::size_t k = 0; k < measured; ++k) {
            remote[stride * k] = iterations[k].first;
            remote[stride * k + 1] = iterations[k].done;
            std::copy(iterations[k].arrivals.begin(), iterations[k].arrivals.end(),
                      remote.begin() + static_cast<std::ptrdiff_t>(stride * k + 2));
        }
        remote.back() = static_cast<double>(errors);
        check(MPI_Send(remote.data(), static_cast<int>(remote.size()), MPI_DOUBLE, kSender,
                       kResultTag, comm_),
              "MPI_Send");
        result.verify_errors = errors;
        return result;
    }
    check(MPI_Recv(remote.data(), static_cast<int>(remote.size()), MPI_DOUBLE, kReceiver,
                   kResultTag, comm_, MPI_STATUS_IGNORE),
          "MPI_Recv");
    result.verify_errors = static_cast<long>(remote.back()) + local_errors;
    result.send_cpu = {cpu.process};
    result.send_progress_cpu = {cpu.progress};
    result.send_wakeups = {cpu.progress_wakeups};
    result.recv_cpu = {remote[remote.size() - kTail]};
    result.recv_progress_cpu = {remote[remote.size() - kTail + 1]};
    result.recv_wakeups = {remote[remote.size() - kTail + 2]};
    for (std::size_t k = 0; k < measured; ++k) {
        const Iteration& it = iterations[k];
        const double first = remote[stride * k];
        const double done = remote[stride * k + 1];
        result.slowdown.push_back(reference > 0 ? it.phase / reference : NAN);
        result.perceived.push_back(it.ack - it.compute_end);
        result.comm.push_back(done - baseline.clock_offset - it.compute_end);
        result.late.push_back(it.last_ready - it.compute_end);
        if (side == Side::recv) {
            result.extra.push_back(done - first);
        }
        if (side != Side::send) {
            result.moved.push_back(
                moved_share(&remote[stride * k + 2], units, baseline.clock_offset, it.compute_end));
        }
        if (side == Side::pipeline) {
            result.round_trip.push_back(it.pipeline.round_trip);
            result.part_round_trip.push_back(it.pipeline.part_round_trip);
            result.inside.push_back(it.pipeline.inside);
            result.early_replies.push_back(it.pipeline.early_replies);
        }
    }
    return result;
}

void Sweep::sender_iteration(Transfer& transfer, std::size_t bytes, int round, int laggard,
                             Iteration& out)
{
    unsigned char ack = 0;
    MPI_Request ack_request = MPI_REQUEST_NULL;
    check(MPI_Irecv(&ack, 1, MPI_BYTE, kReceiver, kAckTag, comm_, &ack_request), "MPI_Irecv");
    check(MPI_Barrier(comm_), "MPI_Barrier");

    const auto start = Clock::now();
    const std::size_t part = bytes / static_cast<std::size_t>(options_.partitions);
    transfer.begin();
    const auto compute_and_hand_over = [&](int t) {
        fill_share(t, part, round);
        compute_share(t, start, laggard, [&](int i) { transfer.ready(i); });
    };
    // The last thread to hand over completes the send itself: no join latency is measured.
    const auto complete = [&] {
        transfer.finish();
        check(MPI_Wait(&ack_request, MPI_STATUS_IGNORE), "MPI_Wait");
        out.ack = now();
    };
    crew_->run(compute_and_hand_over, complete);
    end_of_compute(start, laggard, out);
}

std::size_t Sweep::receiver_iteration(Transfer& transfer, Side side, std::size_t bytes, int round,
                                      Iteration& out)
{
    const auto units = static_cast<std::size_t>(transfer.units());
    out.arrivals.clear();
    out.arrivals.reserve(units);  // no allocation while polling
    transfer.post();
    check(MPI_Barrier(comm_), "MPI_Barrier");
    if (side == Side::recv) {
        // Every unit that arrived() newly counts is stamped with the time it was first seen.
        while (out.arrivals.size() < units) {
            const auto seen = static_cast<std::size_t>(transfer.arrived());
            if (seen > out.arrivals.size()) {
                out.arrivals.resize(std::min(seen, units), now());
            }
        }
        out.first = out.arrivals.front();
    }
    transfer.wait();
    out.done = now();
    const unsigned char ack = 1;
    check(MPI_Send(&ack, 1, MPI_BYTE, kSender, kAckTag, comm_), "MPI_Send");
    return first_mismatch(bytes, round);
}

std::size_t Sweep::first_mismatch(std::size_t bytes, int round) const
{
    if (options_.verify) {
        for (std::size_t b = 0; b < bytes; ++b) {
            if (buffer_[b] != pattern(round, b)) {
                return b;
            }
        }
    }
    return kNoMismatch;
}

bool Sweep::pipeline_sender(Transfer& data, Transfer& reply, std::size_t bytes, int round,
                            int laggard, Iteration& out)
{
    reply.post();  // the replies' receives, before the barrier
    check(MPI_Barrier(comm_), "MPI_Barrier");

    const auto start = Clock::now();
    const std::size_t part = bytes / static_cast<std::size_t>(options_.partitions);
    const bool joins = data.joins();
    data.begin();
    // Thread t computes and hands over its data parts, then busy-polls their reply parts in
    // turn, as the ICPP'22 programs do (MPI_Parrived in a loop: how the library polls is what
    // is measured).
    const auto compute_and_poll = [&](int t) {
        fill_share(t, part, round);
        compute_share(t, start, laggard, [&](int i) {
            data.ready(i);
            handed_stamps_[static_cast<std::size_t>(i)] = now();
        });
        for (int i = t; !joins && i < options_.partitions; i += plan_.threads()) {
            while (!reply.part_arrived(i)) {
            }
            reply_stamps_[static_cast<std::size_t>(i)] = now();
        }
    };
    // The last thread completes both directions; single sends the whole buffer here, and
    // every partition's interval is the one send and reply.
    const auto complete = [&] {
        const double sent = now();
        data.finish();
        reply.wait();
        if (joins) {
            std::fill(handed_stamps_.begin(), handed_stamps_.end(), sent);
            std::fill(reply_stamps_.begin(), reply_stamps_.end(), now());
        }
    };
    crew_->run(compute_and_poll, complete);
    end_of_compute(start, laggard, out);
    out.ack = *std::max_element(reply_stamps_.begin(), reply_stamps_.end());
    out.pipeline = pipeline_round(ready_stamps_, handed_stamps_, reply_stamps_, out.compute_end);
    if (options_.verify) {
        for (std::size_t b = 0; b < reply_buffer_.size(); ++b) {
            if (reply_buffer_[b] != pattern(round, b)) {
                return true;
            }
        }
    }
    return false;
}

std::size_t Sweep::pipeline_receiver(Transfer& data, Transfer& reply, std::size_t bytes, int round,
                                     Iteration& out)
{
    data.post();
    check(MPI_Barrier(comm_), "MPI_Barrier");
    reply.begin();
    const auto answer = [&](int i) {
        const auto r = static_cast<std::size_t>(options_.reply_bytes);
        const auto t = static_cast<std::size_t>(i);
        for (std::size_t b = t * r; b < (t + 1) * r; ++b) {
            reply_buffer_[b] = pattern(round, b);
        }
        reply.ready(i);
    };
    const auto units = static_cast<std::size_t>(data.units());
    if (data.joins()) {
        data.wait();
        part_stamps_[0] = now();
        for (int i = 0; i < options_.partitions; ++i) {
            answer(i);
        }
        reply.finish();
    } else {
        // Thread t waits for each of its data parts in turn and answers it at once.
        const auto poll_and_answer = [&](int t) {
            for (int i = t; i < options_.partitions; i += plan_.threads()) {
                while (!data.part_arrived(i)) {
                }
                part_stamps_[static_cast<std::size_t>(i)] = now();
                answer(i);
            }
        };
        const auto complete = [&] {
            data.wait();
            reply.finish();
        };
        crew_->run(poll_and_answer, complete);
    }
    out.done = now();
    out.arrivals.assign(part_stamps_.begin(),
                        part_stamps_.begin() + static_cast<std::ptrdiff_t>(units));
    std::sort(out.arrivals.begin(), out.arrivals.end());
    out.first = out.arrivals.front();
    return first_mismatch(bytes, round);
}

std::vector<PointResult> measure(const Options& options, const std::vector<Mode>& modes,
                                 MPI_Comm comm, long* verify_errors)
{
    int rank = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    std::vector<PointResult> points;
    Sweep sweep(options, comm);
    const std::size_t per_size = modes.size() * options.sides.size();
    const int total = static_cast<int>(options.sizes.size() * per_size) * options.repeats;
    int done = 0;
    for (const std::size_t bytes : options.sizes) {
        const Baseline baseline = sweep.measure_baseline(bytes);
        // runs[m * sides + s]: the repeats of (modes[m], sides[s]). Each repeat runs every
        // mode once, starting one mode later than the previous repeat (round-robin), so
        // no mode always runs first or right after the baseline.
        std::vector<std::vector<PointResult>> runs(per_size);
        for (int r = 0; r < options.repeats; ++r) {
            // The compute slowdown's reference, in every repeat: the same compute without
            // communication, right before the modes it is compared with.
            const double reference = sweep.compute_reference();
            for (std::size_t k = 0; k < modes.size(); ++k) {
                const std::size_t m = (k + static_cast<std::size_t>(r)) % modes.size();
                for (std::size_t s = 0; s < options.sides.size(); ++s) {
                    runs[m * options.sides.size() + s].push_back(
                        sweep.run_point(modes[m], options.sides[s], bytes, baseline, reference));
                    ++done;
                    if (rank == 0) {
                        std::fprintf(stderr, "%s\n",
                                     progress_line(runs[m * options.sides.size() + s].back(),
                                                   options, done, total)
                                         .c_str());
                    }
                }
            }
        }
        for (const std::vector<PointResult>& reps : runs) {
            points.push_back(combine_repeats(reps));
            *verify_errors += points.back().verify_errors;
        }
    }
    return points;
}

}  // namespace mpipcl::bench
