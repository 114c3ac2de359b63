// SPDX-License-Identifier: BSD-3-Clause
// The packed layout of the persistent backend. A message is a header (an int32 count n, then n
// int32 send-partition numbers) followed by those partitions' bytes in the same order.
#include "persistent/packed.hpp"

#include <climits>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "common/assert.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "common/partition_map.hpp"
#include "common/traffic.hpp"
#include "persistent/backend.hpp"

namespace mpipcl::persistent {

namespace {
constexpr std::int64_t kWord = sizeof(std::int32_t);

/// Header and data bytes of a message of @p n partitions of @p part bytes.
std::int64_t message_bytes(std::int64_t n, std::int64_t part) { return kWord + n * (kWord + part); }

/// The sender's staging buffer: every message of a round, front to back. Each message carries
/// at least one partition, so per partition at most one header word, one pad word (see
/// send_list) and its number besides its bytes.
std::int64_t send_staging(std::int64_t partitions, std::int64_t part)
{
    return partitions * (3 * kWord + part);
}

std::int32_t read_word(const unsigned char* at)
{
    std::int32_t v = 0;
    std::memcpy(&v, at, sizeof v);
    return v;
}

void write_word(unsigned char* at, std::int32_t v) { std::memcpy(at, &v, sizeof v); }
}  // namespace

bool packs(const Endpoint& ep, const Agreement& a) noexcept
{
    if (a.send_partitions > config().packed_max_partitions ||
        a.backend != BackendKind::Persistent || !a.send_dense || !ep.dense ||
        a.send_part_bytes <= 0 || a.send_part_bytes >= config().min_message_bytes ||
        a.send_partitions < 2) {
        return false;
    }
    // One message (or the whole staging buffer) must fit an int count of bytes.
    if (send_staging(a.send_partitions, a.send_part_bytes) > INT_MAX) {
        return false;
    }
    // Only where the aggregated layout groups partitions.
    const PartitionMap map =
        make_partition_map(a.send_partitions, a.send_part_bytes, a.recv_elem_bytes, a.messages);
    return map.messages() < a.send_partitions;
}

PackedBackend::PackedBackend(const Endpoint& ep, const Agreement& a, MPI_Comm comm)
    : send_(ep.kind == Kind::Send),
      max_in_flight_(config().progress_thread ? kMaxInFlight : INT_MAX),
      partitions_(a.send_partitions),
      part_(a.send_part_bytes),
      total_(a.send_part_bytes * a.send_partitions),
      user_(static_cast<unsigned char*>(ep.buf)),
      peer_(ep.peer_world),
      self_(is_self(comm, ep.peer_world)),
      tag_(a.tag_base),
      comm_(comm)
{
    if (send_) {
        staging_bytes_ = send_staging(partitions_, part_);
        std::vector<int> part_begin(static_cast<std::size_t>(partitions_) + 1);
        std::iota(part_begin.begin(), part_begin.end(), 0);
        counter_.init(part_begin);
        ready_.resize(partitions_);
        reqs_.assign(partitions_, MPI_REQUEST_NULL);
        indices_.resize(partitions_);
        staging_.reset(new unsigned char[staging_bytes_]);
        return;
    }
    staging_bytes_ = message_bytes(partitions_, part_);
    staging_.reset(new unsigned char[staging_bytes_]);
    bounds_.resize(static_cast<std::size_t>(partitions_) + 1);
    for (int p = 0; p <= partitions_; ++p) {
        bounds_[p] = static_cast<std::int64_t>(p) * part_;
    }
    arrived_ = std::make_unique<std::atomic<std::uint8_t>[]>(partitions_);
    recv_part_bytes_ = ep.part_bytes();
    if (ep.partitions <= kCachedPartitions) {
        all_covering_ranges(bounds_, recv_part_bytes_, ep.partitions, &first_, &last_);
    }
    MPIPCL_CHECK_MPI(PMPI_Recv_init(staging_.get(), static_cast<int>(staging_bytes_), MPI_BYTE,
                                    peer_, tag_, comm_, &recv_));
}

PackedBackend::~PackedBackend()
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (finalized) {
        return;
    }
    if (!send_) {
        abort_round();
        if (recv_ != MPI_REQUEST_NULL) {
            PMPI_Request_free(&recv_);
        }
        return;
    }
    bool outstanding = false;
    for (int k = completed_; k < issued_.load(std::memory_order_acquire); ++k) {
        if (reqs_[k] != MPI_REQUEST_NULL) {
            PMPI_Request_free(&reqs_[k]);
            outstanding = true;
        }
    }
    if (outstanding) {
        // MPI may still read the staging buffer (the pair failed mid-round): leave it to MPI.
        static_cast<void>(staging_.release());
    }
}

void PackedBackend::start(std::uint64_t /*round*/)
{
    if (send_) {
        counter_.reset();
        ready_.reset();
        fill_ = 0;
        completed_ = 0;
        in_flight_.store(0, std::memory_order_relaxed);
        issued_.store(0, std::memory_order_relaxed);
        sent_parts_.store(0, std::memory_order_relaxed);
        flush_error_.store(MPI_SUCCESS, std::memory_order_relaxed);
        return;
    }
    for (int p = 0; p < partitions_; ++p) {
        arrived_[p].store(0, std::memory_order_relaxed);
    }
    remaining_ = partitions_;
    MPIPCL_CHECK_MPI(PMPI_Start(&recv_));
    receiving_ = true;
}

void PackedBackend::flush() noexcept
{
    // A burst coalesces: while max_in_flight_ sends are in flight, ready partitions wait in
    // ready_ for reap() to see one complete, unless the round's last partition is ready.
    // sync: seq_cst loads after the caller's push, against reap()'s decrement then its
    // flush(): one of the two sees the other (Dekker), so nothing waits for a later pass.
    if (in_flight_.load() >= max_in_flight_ && ready_.pushed() < partitions_) {
        return;
    }
    int h = -1;
    if (!ready_.try_begin(&h)) {
        return;  // nothing queued, or another thread drains (and takes what we queued)
    }
    do {
        send_list(h);
    } while (ready_.next_batch(&h));
}

void PackedBackend::send_list(int head) noexcept
{
    int n = 0;
    for (int u = head; u != -1; u = ready_.next(u)) {
        ++n;
    }
    void* region = user_;
    std::int64_t bytes = total_;
    if (n < partitions_) {
        // Not the whole round in one message (which goes from the user's buffer as it is):
        // header and partitions into staging. A message as long as the whole round gets a pad
        // word, so the receiver tells the two apart by size.
        unsigned char* const at = staging_.get() + fill_;
        unsigned char* data = at + kWord * (n + 1);
        write_word(at, n);
        std::int64_t i = 0;
        for (int u = head; u != -1; u = ready_.next(u), ++i) {
            write_word(at + kWord * (i + 1), u);
            std::memcpy(data + i * part_, user_ + static_cast<std::int64_t>(u) * part_,
                        static_cast<std::size_t>(part_));
        }
        bytes = message_bytes(n, part_);
        bytes += bytes == total_ ? kWord : 0;
        fill_ += bytes;
        MPIPCL_ASSERT(fill_ <= staging_bytes_, "a round's messages fit the staging buffer");
        region = at;
    }
    const int k = issued_.load(std::memory_order_relaxed);
    in_flight_.fetch_add(1);
    int rc = MPI_SUCCESS;
    {
        const auto gate = self_send_gate(self_);
        rc = PMPI_Isend(region, static_cast<int>(bytes), MPI_BYTE, peer_, tag_, comm_, &reqs_[k]);
    }
    if (rc != MPI_SUCCESS) {
        reqs_[k] = MPI_REQUEST_NULL;  // nothing to test; progress() reports the error
        in_flight_.fetch_sub(1);
        flush_error_.store(rc, std::memory_order_relaxed);
    } else {
        data_traffic().sent(peer_, 1);
    }
    // sync: release publishes reqs_[k] to the engine's reap (acquire).
    issued_.store(k + 1, std::memory_order_release);
    sent_parts_.fetch_add(n, std::memory_order_release);
}

void PackedBackend::reap()
{
    // sync: acquire pairs with send_list's release.
    const int issued = issued_.load(std::memory_order_acquire);
    if (completed_ == issued) {
        return;
    }
    int out = 0;
    MPIPCL_CHECK_MPI(PMPI_Testsome(issued - completed_, &reqs_[completed_], &out, indices_.data(),
                                   MPI_STATUSES_IGNORE));
    if (out != MPI_UNDEFINED && out > 0) {
        // sync: seq_cst, then flush() in progress() (see flush).
        in_flight_.fetch_sub(out);
    }
    while (completed_ < issued && reqs_[completed_] == MPI_REQUEST_NULL) {
        ++completed_;
    }
}

bool PackedBackend::arrived(int p) const noexcept
{
    return covered_arrived(bounds_, recv_part_bytes_, first_, last_, arrived_.get(), p);
}

bool PackedBackend::progress()
{
    if (send_) {
        if (const int rc = flush_error_.load(std::memory_order_relaxed); rc != MPI_SUCCESS) {
            throw Error(rc, "sending an internal packed message failed");
        }
        reap();
        flush();
        // sync: acquire pairs with send_list's releases; sent_parts_ first, so a full count
        // means issued_ below is final.
        const int parts = sent_parts_.load(std::memory_order_acquire);
        return parts == partitions_ && completed_ == issued_.load(std::memory_order_acquire);
    }
    while (receiving_) {
        int flag = 0;
        MPI_Status st;
        const int rc = PMPI_Test(&recv_, &flag, &st);
        if (rc != MPI_SUCCESS) {
            receiving_ = false;
            data_traffic().received(peer_);  // it matched a message (one too long, say)
            throw Error(rc, "receiving an internal packed message failed");
        }
        if (flag == 0) {
            break;
        }
        receiving_ = false;
        data_traffic().received(peer_);
        unpack(st);
        if (remaining_ > 0) {
            MPIPCL_CHECK_MPI(PMPI_Start(&recv_));
            receiving_ = true;
        }
    }
    return remaining_ == 0;
}

void PackedBackend::unpack(const MPI_Status& status)
{
    int bytes = 0;
    MPIPCL_CHECK_MPI(PMPI_Get_count(&status, MPI_BYTE, &bytes));
    const unsigned char* const msg = staging_.get();
    if (bytes == total_ && remaining_ == partitions_) {
        // The whole round in one message, in order and without a header.
        std::memcpy(user_, msg, static_cast<std::size_t>(total_));
        for (int p = 0; p < partitions_; ++p) {
            // sync: release publishes the copied bytes to lock-free Parrived readers.
            arrived_[p].store(1, std::memory_order_release);
        }
        remaining_ = 0;
        return;
    }
    const std::int64_t n = bytes >= kWord ? read_word(msg) : 0;
    std::int64_t expect = message_bytes(n, part_);
    expect += expect == total_ ? kWord : 0;  // the pad word (see send_list)
    if (n < 1 || n > remaining_ || expect != bytes) {
        throw Error(ErrId::Internal, "malformed internal packed message (size or count)");
    }
    const unsigned char* data = msg + kWord * (n + 1);
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int32_t p = read_word(msg + kWord * (i + 1));
        if (p < 0 || p >= partitions_ || arrived_[p].load(std::memory_order_relaxed) != 0) {
            throw Error(ErrId::Internal, "malformed internal packed message (partition number)");
        }
        std::memcpy(user_ + static_cast<std::int64_t>(p) * part_, data + i * part_,
                    static_cast<std::size_t>(part_));
        // sync: release publishes the copied bytes to lock-free Parrived readers.
        arrived_[p].store(1, std::memory_order_release);
    }
    remaining_ -= static_cast<int>(n);
}

void PackedBackend::abort_round() noexcept
{
    if (send_ || !receiving_) {
        return;
    }
    cancel_receive(&recv_, peer_, self_);
    receiving_ = false;
}

void PackedBackend::describe(char* out, std::size_t n) const noexcept
{
    if (send_) {
        char queue[48];
        describe_queue(queue, sizeof queue);
        std::snprintf(out, n,
                      "persistent packed send: partitions=%d ready=%d sent=%d messages=%d "
                      "completed=%d in_flight=%d %s error=%d",
                      partitions_, ready_.pushed(), sent_parts_.load(std::memory_order_relaxed),
                      issued_.load(std::memory_order_relaxed), completed_,
                      in_flight_.load(std::memory_order_relaxed), queue,
                      flush_error_.load(std::memory_order_relaxed));
    } else {
        std::snprintf(out, n, "persistent packed recv: partitions=%d remaining=%d receiving=%d",
                      partitions_, remaining_, receiving_ ? 1 : 0);
    }
}

}  // namespace mpipcl::persistent
