// SPDX-License-Identifier: BSD-3-Clause
// RMA data path: Put + flush of ready units, then flag Puts + flush; flags read locally.
#include "rma/backend.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <numeric>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/datatype.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "rma/rma.hpp"

namespace mpipcl::rma {

namespace {
/// Longest block list a datatype may flatten to (16 B per block travel in the description).
constexpr std::size_t kMaxBlocks = 16384;
/// Description header: lb, extent; then (disp, len) per block.
constexpr std::size_t kDescHeader = 2;
/// Bound on one Put's bytes (counts are ints); MPIPCL_RMA_PUT_BYTES may set a smaller one.
constexpr std::int64_t kMaxPiece = std::int64_t{1} << 30;
/// A drain flushes and flags its units in groups of at least this many bytes.
constexpr std::int64_t kFlagGroupBytes = std::int64_t{1} << 20;

/// How long a Put or Get that fails with MPI_ERR_RMA_RANGE is retried (see retry_range).
constexpr std::chrono::milliseconds kRangeRetry{200};

/// Runs @p op (one PMPI_Put or PMPI_Get) and retries it while it fails with MPI_ERR_RMA_RANGE,
/// with a back-off, for up to kRangeRetry. Open MPI 5's osc rdma looks a target's dynamic
/// regions up in the target's shared-memory table without taking the table's lock, so while
/// the target attaches or detaches another buffer (it shifts the table), a Put to a buffer
/// attached long before can fail with MPI_ERR_RMA_RANGE
/// (tests/platform/osc_attach_churn.c). Such a call fails before it moves a byte, so calling
/// it again is safe; a range error that outlasts the retries is returned.
template <class Op>
int retry_range(Op&& op) noexcept
{
    int rc = op();
    int cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS || PMPI_Error_class(rc, &cls) != MPI_SUCCESS ||
        cls != MPI_ERR_RMA_RANGE) {
        return rc;
    }
    Backoff backoff(10, 1000);
    const auto deadline = std::chrono::steady_clock::now() + kRangeRetry;
    int retries = 0;
    while (cls == MPI_ERR_RMA_RANGE && std::chrono::steady_clock::now() < deadline) {
        backoff.pause();
        ++retries;
        rc = op();
        if (rc == MPI_SUCCESS || PMPI_Error_class(rc, &cls) != MPI_SUCCESS) {
            break;
        }
    }
    MPIPCL_LOG(Debug, "RMA call out of range, retried %d times: %s", retries,
               rc == MPI_SUCCESS ? "succeeded" : "still failing");
    return rc;
}

bool finalized()
{
    int f = 0;
    PMPI_Finalized(&f);
    return f != 0;
}

FlagMode resolve_mode(NotifyMode own, NotifyMode peer, int messages)
{
    const NotifyMode m = own != NotifyMode::Auto ? own : peer;
    switch (m) {
        case NotifyMode::Gcd:
            return FlagMode::Gcd;
        case NotifyMode::Partition:
            return FlagMode::Partition;
        case NotifyMode::Message:
            return FlagMode::Message;
        case NotifyMode::Auto:
            break;
    }
    // mpipcl_messages asks for M internal messages: give each its own arrival notice, as the
    // persistent backend does; otherwise the paper's gcd(S, R) completion flags.
    return messages > 0 ? FlagMode::Message : FlagMode::Gcd;
}
}  // namespace

void TargetInfo::encode(std::uint64_t extra[4]) const
{
    extra[0] = base;
    extra[1] = flags;
    extra[2] = desc;
    extra[3] = static_cast<std::uint64_t>(mode) | (static_cast<std::uint64_t>(desc_blocks) << 8);
}

TargetInfo TargetInfo::decode(const std::uint64_t extra[4])
{
    TargetInfo t;
    t.base = extra[0];
    t.flags = extra[1];
    t.desc = extra[2];
    t.mode = static_cast<FlagMode>(extra[3] & 0xff);
    t.desc_blocks = static_cast<std::uint32_t>(extra[3] >> 8);
    return t;
}

RmaBackend::Attachment::~Attachment()
{
    if (held) {
        Window::instance().release(key);
    }
}

RmaBackend::SlotLease::~SlotLease() { Window::instance().free_slots(slots); }

RmaBackend::RmaBackend(const Endpoint& ep)
    : ep_(ep), send_(ep.kind == Kind::Send), win_(Window::instance().win()), peer_(ep.peer_world)
{
}

std::unique_ptr<RmaBackend> RmaBackend::build(const Endpoint& ep, const RequestOptions& opts,
                                              const Agreement& a, const char** why_not)
{
    auto b = std::unique_ptr<RmaBackend>(new RmaBackend(ep));
    if (b->send_) {
        b->init_sender(a);
    } else if (const char* why = b->init_receiver(opts, a)) {
        *why_not = why;
        return nullptr;
    }
    MPIPCL_LOG(Debug, "rma %s with rank %d: %d put units, %d flags (mode %d), %s target",
               b->send_ ? "send" : "recv", b->peer_, b->map_.unit_count(), b->map_.flags(),
               static_cast<int>(b->mode_), b->target_info_.desc == 0 ? "contiguous" : "derived");
    return b;
}

RmaBackend::~RmaBackend()
{
    if (finalized()) {
        return;
    }
    for (MPI_Datatype* t : {&origin_type_, &target_type_}) {
        if (*t != MPI_BYTE && *t != MPI_DATATYPE_NULL) {
            PMPI_Type_free(t);
        }
    }
}

// ---------------------------------------------------------------- receiver

const char* RmaBackend::init_receiver(const RequestOptions& opts, const Agreement& a)
{
    const Endpoint& ep = ep_;
    mode_ = resolve_mode(opts.notify, static_cast<NotifyMode>(a.peer_extra[0]), a.messages);
    map_ = make_notify_map(a.send_partitions, a.send_part_bytes, a.recv_elem_bytes,
                           a.recv_partitions, a.recv_part_bytes, mode_, a.messages);
    if (ep.buf == MPI_BOTTOM) {
        return "an MPI_BOTTOM receive buffer (absolute addresses)";
    }
    Flat flat;
    if (!flatten_type(ep.datatype, kMaxBlocks, &flat)) {
        return "the receive datatype cannot be described as byte blocks";
    }
    if (!attach_buffer(flat)) {
        return "the receive buffer cannot be attached to the window";
    }
    const std::size_t desc_slots = flat.contiguous() ? 0 : kDescHeader + 2 * flat.blocks.size();
    lease_.slots = Window::instance().alloc_slots(map_.flags() + desc_slots);
    if (lease_.slots.ptr == nullptr) {
        return "no window memory for the flags";
    }
    flags_ = lease_.slots.ptr;
    describe_target(flat);
    recv_part_bytes_ = ep.part_bytes();
    if (ep.partitions <= kCachedPartitions) {
        all_covering_ranges(map_.flag_begin, recv_part_bytes_, ep.partitions, &part_first_,
                            &part_last_);
    }
    return nullptr;
}

bool RmaBackend::attach_buffer(const Flat& flat)
{
    const std::int64_t elems = static_cast<std::int64_t>(ep_.partitions) * ep_.count;
    if (elems == 0 || flat.size == 0) {
        return true;  // nothing to attach
    }
    // Attach the bytes the elements really touch: true lb of the first .. true ub of the last.
    const std::int64_t first = flat.true_lb;
    const std::int64_t last = (elems - 1) * flat.extent + flat.true_lb;
    const std::int64_t lo = std::min(first, last);
    const std::int64_t hi = std::max(first, last) + flat.true_extent;
    if (!Window::instance().attach(static_cast<char*>(ep_.buf) + lo,
                                   static_cast<std::size_t>(hi - lo), &attachment_.key)) {
        return false;
    }
    attachment_.held = true;
    return true;
}

void RmaBackend::describe_target(const Flat& flat)
{
    // The sender addresses element i at base + i*extent, base being the first element's first
    // touched byte (contiguous or derived alike), and a derived layout is described from that
    // byte (from_first_byte): each Put's target range then starts inside the attachment
    // (attach_buffer).
    // Addressed from the datatype's lb, a type with true_lb > lb (a subarray box away from the
    // origin, a leading hole) put its target displacement below the attached bytes; MPI allows
    // that (only touched bytes must be attached) and no MPI here refuses it
    // (tests/platform/osc_true_lb_range.c), but an osc that range-checks from the displacement
    // would (MPI_ERR_RMA_RANGE), so we never rely on it.
    MPI_Aint addr = 0;
    MPIPCL_CHECK_MPI(PMPI_Get_address(ep_.buf, &addr));
    target_info_.base = static_cast<std::uint64_t>(addr + flat.true_lb);
    MPIPCL_CHECK_MPI(PMPI_Get_address(flags_, &addr));
    target_info_.flags = static_cast<std::uint64_t>(addr);
    target_info_.mode = mode_;
    if (flat.contiguous()) {
        return;
    }
    const Flat rel = from_first_byte(flat);
    std::uint64_t* d = flags_ + map_.flags();
    d[0] = static_cast<std::uint64_t>(rel.lb);
    d[1] = static_cast<std::uint64_t>(rel.extent);
    for (std::size_t i = 0; i < rel.blocks.size(); ++i) {
        d[kDescHeader + 2 * i] = static_cast<std::uint64_t>(rel.blocks[i].disp);
        d[kDescHeader + 2 * i + 1] = static_cast<std::uint64_t>(rel.blocks[i].len);
    }
    MPIPCL_CHECK_MPI(PMPI_Get_address(d, &addr));
    target_info_.desc = static_cast<std::uint64_t>(addr);
    target_info_.desc_blocks = static_cast<std::uint32_t>(flat.blocks.size());
}

std::uint64_t RmaBackend::flag(int f) const noexcept
{
    // sync: acquire pairs with the sender's flush of the data before its flag Put: a flag that
    // holds the round implies the bytes it announces are in memory.
    return __atomic_load_n(&flags_[f], __ATOMIC_ACQUIRE);
}

bool RmaBackend::arrived(int p) const noexcept
{
    // sync: relaxed; round_ was stored before the request was published Active (release), and
    // Parrived acquired that state before calling us.
    const std::uint64_t r = round_.load(std::memory_order_relaxed);
    int first = 0;
    int last = 0;
    if (part_first_.empty()) {
        map_.recv_partition_flags(recv_part_bytes_, p, &first, &last);  // O(log F)
    } else {
        first = part_first_[p];
        last = part_last_[p];
    }
    for (int f = first; f <= last; ++f) {
        if (flag(f) != r) {
            return false;
        }
    }
    return true;
}

// ---------------------------------------------------------------- sender

void RmaBackend::init_sender(const Agreement& a)
{
    const Endpoint& ep = ep_;
    target_info_ = TargetInfo::decode(a.peer_extra);
    mode_ = target_info_.mode;
    map_ = make_notify_map(a.send_partitions, a.send_part_bytes, a.recv_elem_bytes,
                           a.recv_partitions, a.recv_part_bytes, mode_, a.messages);
    if (!flatten_type(ep.datatype, kMaxBlocks, &origin_)) {
        throw Error(ErrId::Internal, "the send datatype cannot be flattened");
    }
    origin_type_ = byte_datatype(origin_);
    target_contig_ = target_info_.desc == 0;
    target_size_ = a.recv_elem_bytes;
    described_.store(target_contig_, std::memory_order_relaxed);
    // A Put piece must end on a send element and a receive element: a multiple of both sizes.
    const std::int64_t o_unit = origin_.contiguous() ? 1 : std::max<std::int64_t>(1, origin_.size);
    const std::int64_t t_unit = target_contig_ ? 1 : std::max<std::int64_t>(1, target_size_);
    const std::int64_t step = std::lcm(o_unit, t_unit);
    if (step > kMaxPiece) {
        throw Error(ErrId::BadCount, "datatype sizes too large for the RMA backend");
    }
    const std::int64_t cap = config().rma_put_bytes;
    const std::int64_t max_piece = cap > 0 && cap < kMaxPiece ? cap : kMaxPiece;
    piece_ = std::max(step, max_piece / step * step);
    // Contiguous blocks per step (the MPI moves each block pair as one operation), bounded by
    // MPIPCL_RMA_PUT_BLOCKS between flushes (see Config::rma_put_blocks); a step above the
    // bound still goes alone. A Put between two contiguous sides counts as one block.
    const std::int64_t o_blocks =
        origin_.contiguous() ? 0 : step / o_unit * static_cast<std::int64_t>(origin_.blocks.size());
    const std::int64_t t_blocks =
        target_contig_ ? 0 : step / t_unit * static_cast<std::int64_t>(target_info_.desc_blocks);
    const std::int64_t max_blocks = config().rma_put_blocks;
    step_ = step;
    if (max_blocks > 0 && o_blocks + t_blocks > 0) {
        step_blocks_ = o_blocks + t_blocks;
        piece_ = std::min(piece_, std::max<std::int64_t>(1, max_blocks / step_blocks_) * step);
    }

    const int units = map_.unit_count();
    counter_.init(map_.units.part_begin);
    ready_.resize(units);
    flag_left_.resize(map_.flags());
    flag_src_.resize(map_.flags());
    batch_.reserve(units);
    done_.reserve(map_.flags());
}

bool RmaBackend::peer_started() const
{
    // sync: seq_cst, see peer_round_ and ReadyQueue::push.
    return peer_round_.load() >= send_round_;
}

void RmaBackend::peer_ready(std::uint64_t round) noexcept
{
    if (round <= peer_round_.load(std::memory_order_relaxed)) {
        return;
    }
    peer_round_.store(round);  // sync: seq_cst, see peer_round_
    flush();
}

void RmaBackend::flush() noexcept
{
    if (!send_ || !peer_started()) {
        return;  // units stay queued until the receiver announced this round
    }
    int h = -1;
    if (!ready_.try_begin(&h)) {
        return;  // nothing queued, or another thread drains (and takes what we queued)
    }
    do {
        if (const int done = drain(h); done > 0) {
            // sync: release so progress() sees the completed flags only after our flushes.
            flags_done_.fetch_add(done, std::memory_order_release);
        }
    } while (ready_.next_batch(&h));
}

int RmaBackend::fetch_description() noexcept
{
    const std::size_t n = kDescHeader + 2 * std::size_t{target_info_.desc_blocks};
    std::vector<std::uint64_t> d(n);
    int rc = retry_range([&] {
        return PMPI_Get(d.data(), static_cast<int>(n), MPI_UINT64_T, peer_,
                        static_cast<MPI_Aint>(target_info_.desc), static_cast<int>(n), MPI_UINT64_T,
                        win_);
    });
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Win_flush(peer_, win_);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    Flat f;
    f.lb = static_cast<std::int64_t>(d[0]);
    f.extent = static_cast<std::int64_t>(d[1]);
    f.blocks.resize(target_info_.desc_blocks);
    for (std::size_t i = 0; i < f.blocks.size(); ++i) {
        f.blocks[i] = Block{static_cast<std::int64_t>(d[kDescHeader + 2 * i]),
                            static_cast<std::int64_t>(d[kDescHeader + 2 * i + 1])};
        f.size += f.blocks[i].len;
    }
    if (f.size != target_size_) {
        return error_code(ErrId::Internal);
    }
    try {
        target_type_ = byte_datatype(f);
    } catch (const Error& e) {
        return e.code();
    }
    target_extent_ = f.extent;
    // sync: only the drainer reads described_/target_type_ (the ready queue orders drainers).
    described_.store(true, std::memory_order_relaxed);
    return MPI_SUCCESS;
}

int RmaBackend::count_blocks(std::int64_t blocks) noexcept
{
    // Bounded blocks in flight (Config::rma_put_blocks): flush once the budget is used. Every
    // Put counts, also a contiguous one and a flag Put: on Open MPI 5 each is an active message
    // that the target answers with a btl sm fragment of its own (see Config::rma_put_blocks).
    const std::int64_t max_blocks = config().rma_put_blocks;
    if (max_blocks <= 0) {
        return MPI_SUCCESS;
    }
    blocks_in_flight_ += blocks;
    if (blocks_in_flight_ < max_blocks) {
        return MPI_SUCCESS;
    }
    blocks_in_flight_ = 0;
    return PMPI_Win_flush(peer_, win_);
}

int RmaBackend::put_bytes(std::int64_t b0, std::int64_t b1) noexcept
{
    const auto* sbuf = static_cast<const char*>(ep_.buf);
    const bool o_contig = origin_.contiguous();
    for (std::int64_t lo = b0; lo < b1; lo += piece_) {
        const std::int64_t n = std::min(piece_, b1 - lo);
        const char* origin = nullptr;
        int o_count = 0;
        if (o_contig) {
            origin = sbuf + origin_.true_lb + lo;
            o_count = static_cast<int>(n);
        } else {
            origin = sbuf + (lo / origin_.size) * origin_.extent;
            o_count = static_cast<int>(n / origin_.size);
        }
        MPI_Aint disp = 0;
        int t_count = 0;
        if (target_contig_) {
            disp = static_cast<MPI_Aint>(target_info_.base + lo);
            t_count = static_cast<int>(n);
        } else {
            disp = static_cast<MPI_Aint>(target_info_.base) +
                   static_cast<MPI_Aint>((lo / target_size_) * target_extent_);
            t_count = static_cast<int>(n / target_size_);
        }
        int rc = retry_range([&] {
            return PMPI_Put(origin, o_count, origin_type_, peer_, disp, t_count, target_type_,
                            win_);
        });
        if (rc == MPI_SUCCESS) {
            rc = count_blocks(std::max<std::int64_t>(1, (n + step_ - 1) / step_ * step_blocks_));
        }
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

int RmaBackend::drain(int h) noexcept
{
    if (flush_error_.load(std::memory_order_relaxed) != MPI_SUCCESS) {
        return 0;  // the round failed: what is still queued is dropped
    }
    if (!described_.load(std::memory_order_relaxed)) {
        if (const int rc = fetch_description(); rc != MPI_SUCCESS) {
            flush_error_.store(rc, std::memory_order_relaxed);
            return 0;
        }
    }
    batch_.clear();
    for (; h != -1; h = ready_.next(h)) {
        batch_.push_back(h);
    }
    // The queue is a stack: units pushed in order (MPI_Pready_range, or threads finishing in
    // partition order) come out reversed, which a reversal sorts in O(n).
    if (std::is_sorted(batch_.rbegin(), batch_.rend())) {
        std::reverse(batch_.begin(), batch_.end());
    } else {
        std::sort(batch_.begin(), batch_.end());
    }
    // In groups of about kFlagGroupBytes, each flushed and then flagged: the receiver sees the
    // first partitions of a long drain (16 units of 1 MiB) arrive after one group, not after
    // all of them (mpipcl-bench --side recv, part-rma extra compute at 16 MiB;
    // docs/benchmarks.md).
    const auto& ub = map_.units.begin;
    int flagged = 0;
    for (std::size_t g = 0; g < batch_.size();) {
        std::size_t end = g;
        std::int64_t bytes = 0;
        while (end < batch_.size() && (end == g || bytes < kFlagGroupBytes)) {
            bytes += ub[batch_[end] + 1] - ub[batch_[end]];
            ++end;
        }
        const int rc = drain_group(g, end, bytes > 0);
        if (rc < 0) {
            return flagged;  // flush_error_ is set
        }
        flagged += rc;
        g = end;
    }
    return flagged;
}

int RmaBackend::drain_group(std::size_t g0, std::size_t g1, bool any_data) noexcept
{
    // Consecutive units leave as one Put; then one flush makes them all visible.
    const auto& ub = map_.units.begin;
    int rc = MPI_SUCCESS;
    for (std::size_t i = g0; i < g1 && rc == MPI_SUCCESS;) {
        std::size_t j = i + 1;
        while (j < g1 && batch_[j] == batch_[j - 1] + 1) {
            ++j;
        }
        rc = put_bytes(ub[batch_[i]], ub[batch_[j - 1] + 1]);
        i = j;
    }
    if (rc == MPI_SUCCESS && any_data) {
        rc = PMPI_Win_flush(peer_, win_);
        blocks_in_flight_ = 0;
    }
    if (rc != MPI_SUCCESS) {
        flush_error_.store(rc, std::memory_order_relaxed);
        return -1;
    }
    // The data is at the target: now the flags whose units are all in, in runs.
    done_.clear();
    for (std::size_t i = g0; i < g1; ++i) {
        const int u = batch_[i];
        for (int f = map_.unit_flag_first[u]; f <= map_.unit_flag_last[u]; ++f) {
            if (--flag_left_[f] == 0) {
                done_.push_back(f);
            }
        }
    }
    if (done_.empty()) {
        return 0;
    }
    std::sort(done_.begin(), done_.end());
    for (std::size_t i = 0; i < done_.size() && rc == MPI_SUCCESS;) {
        std::size_t j = i + 1;
        while (j < done_.size() && done_[j] == done_[j - 1] + 1) {
            ++j;
        }
        const int f0 = done_[i];
        const int n = static_cast<int>(j - i);
        const auto disp = static_cast<MPI_Aint>(target_info_.flags + sizeof(std::uint64_t) * f0);
        rc = retry_range([&] {
            return PMPI_Put(&flag_src_[f0], n, MPI_UINT64_T, peer_, disp, n, MPI_UINT64_T, win_);
        });
        if (rc == MPI_SUCCESS) {
            rc = count_blocks(1);
        }
        i = j;
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Win_flush(peer_, win_);
        blocks_in_flight_ = 0;
    }
    if (rc != MPI_SUCCESS) {
        flush_error_.store(rc, std::memory_order_relaxed);
        return -1;
    }
    return static_cast<int>(done_.size());
}

// ---------------------------------------------------------------- both

void RmaBackend::start(std::uint64_t round)
{
    if (!send_) {
        // sync: relaxed; published to Parrived by the request's Active store (release).
        round_.store(round, std::memory_order_relaxed);
        seen_ = 0;
        return;
    }
    send_round_ = round;
    counter_.reset();
    std::copy(map_.flag_units.begin(), map_.flag_units.end(), flag_left_.begin());
    std::fill(flag_src_.begin(), flag_src_.end(), send_round_);
    ready_.reset();
    flags_done_.store(0, std::memory_order_relaxed);
    flush_error_.store(MPI_SUCCESS, std::memory_order_relaxed);
}

void RmaBackend::abort_round() noexcept
{
    if (!send_) {
        return;
    }
    // Never drained again (the failure is sticky: no later round starts this backend).
    ready_.seal();
    // A drain that ended in an error may have left Puts unflushed; one that succeeded flushed
    // everything it Put. sync: relaxed, ordered after the drainer's store by seal()'s CAS.
    if (flush_error_.load(std::memory_order_relaxed) != MPI_SUCCESS) {
        if (const int rc = PMPI_Win_flush(peer_, win_); rc != MPI_SUCCESS) {
            MPIPCL_LOG(Warn, "MPI_Win_flush to rank %d after a failed round: error %d", peer_, rc);
        }
    }
}

void RmaBackend::describe(char* out, std::size_t n) const noexcept
{
    if (!send_) {
        const std::uint64_t r = round_.load(std::memory_order_relaxed);
        std::snprintf(out, n, "rma recv: round=%llu flags=%d seen=%d next_flag=%llu",
                      static_cast<unsigned long long>(r), map_.flags(), seen_,
                      seen_ < map_.flags() ? static_cast<unsigned long long>(flag(seen_)) : 0ULL);
        return;
    }
    char queue[48];
    describe_queue(queue, sizeof queue);
    // Only atomics and engine-side fields: a flusher may be running in another thread.
    std::snprintf(out, n,
                  "rma send: round=%llu peer_round=%llu flags=%d done=%d described=%d %s error=%d",
                  static_cast<unsigned long long>(send_round_),
                  static_cast<unsigned long long>(peer_round_.load(std::memory_order_relaxed)),
                  map_.flags(), flags_done_.load(std::memory_order_relaxed),
                  described_.load(std::memory_order_relaxed) ? 1 : 0, queue,
                  flush_error_.load(std::memory_order_relaxed));
}

bool RmaBackend::progress()
{
    if (!send_) {
        if (Window::instance().separate_model()) {
            PMPI_Win_sync(win_);
        }
        const std::uint64_t r = round_.load(std::memory_order_relaxed);
        while (seen_ < map_.flags() && flag(seen_) == r) {
            ++seen_;
        }
        return seen_ == map_.flags();
    }
    flush();
    if (const int rc = flush_error_.load(std::memory_order_relaxed); rc != MPI_SUCCESS) {
        throw Error(rc, "MPI_Put/MPI_Win_flush to the receiver failed");
    }
    // sync: acquire pairs with flush()'s release after the last flag flush.
    return flags_done_.load(std::memory_order_acquire) == map_.flags();
}

// ---------------------------------------------------------------- module interface

void init(MPI_Comm comm) noexcept
{
    if (!config().rma_window) {
        MPIPCL_LOG(Debug, "MPIPCL_RMA=0: no RMA window");
        return;
    }
    Window::instance().init(comm);
}

void finalize() noexcept { Window::instance().finalize(); }

bool available() noexcept { return Window::instance().available(); }

const char* unavailable_reason() noexcept
{
    if (!config().rma_window) {
        return "the RMA backend is disabled (MPIPCL_RMA=0)";
    }
    return Window::instance().unavailable_reason().c_str();
}

bool can_send(const Endpoint& ep) noexcept
{
    // MPI_BOTTOM (absolute addresses in the datatype): the persistent backend takes it as is.
    Flat f;
    return available() && ep.buf != MPI_BOTTOM && flatten_type(ep.datatype, kMaxBlocks, &f);
}

Offer make_offer(const Endpoint& ep, const RequestOptions& opts)
{
    Offer o;
    o.backend = BackendKind::Rma;
    o.messages = opts.messages;  // 0: one put unit per send partition
    o.extra[0] = static_cast<std::uint64_t>(opts.notify);
    (void)ep;
    return o;
}

std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, const Agreement& a,
                                MPI_Comm comm, const char** why_not)
{
    (void)comm;
    return RmaBackend::build(ep, opts, a, why_not);
}

}  // namespace mpipcl::rma
