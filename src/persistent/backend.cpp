// SPDX-License-Identifier: BSD-3-Clause
// Persistent point-to-point data path.
#include "persistent/backend.hpp"

#include <climits>
#include <cstdio>
#include <mutex>

#include "common/backend_module.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/traffic.hpp"
#include "persistent/packed.hpp"

namespace mpipcl::persistent {

namespace {
PartitionMap map_of(const Agreement& a)
{
    return make_partition_map(a.send_partitions, a.send_part_bytes, a.recv_elem_bytes, a.messages);
}

int checked_int(std::int64_t n)
{
    if (n > INT_MAX) {
        throw Error(ErrId::BadCount,
                    "an internal message exceeds INT_MAX elements; raise mpipcl_messages");
    }
    return static_cast<int>(n);
}

/// @p base + @p bytes as an address: also right for MPI_BOTTOM (a null base with absolute
/// displacements in the datatype), where pointer arithmetic on null would be undefined.
void* offset_address(void* base, std::int64_t bytes)
{
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(base) +
                                   static_cast<std::uintptr_t>(bytes));
}
}  // namespace

namespace {
std::shared_mutex& self_gate()
{
    static std::shared_mutex gate;
    return gate;
}
}  // namespace

bool is_self(MPI_Comm comm, int peer) noexcept
{
    int rank = MPI_PROC_NULL;
    return PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == peer;
}

std::shared_lock<std::shared_mutex> self_send_gate(bool self) noexcept
{
    return self ? std::shared_lock<std::shared_mutex>(self_gate())
                : std::shared_lock<std::shared_mutex>();
}

void cancel_receive(MPI_Request* req, int peer, bool self) noexcept
{
    {
        std::unique_lock<std::shared_mutex> starts(self_gate(), std::defer_lock);
        if (self) {
            starts.lock();
        }
        PMPI_Cancel(req);
    }
    MPI_Status st;
    int cancelled = 0;
    if (PMPI_Wait(req, &st) == MPI_SUCCESS && PMPI_Test_cancelled(&st, &cancelled) == MPI_SUCCESS &&
        cancelled == 0) {
        data_traffic().received(peer);
    }
}

Offer make_offer(const Endpoint& ep, const RequestOptions& opts)
{
    Offer o;
    o.backend = BackendKind::Persistent;
    o.messages = opts.messages > 0
                     ? opts.messages
                     : auto_messages(ep.partitions, ep.total_bytes(), config().min_message_bytes,
                                     config().max_messages);
    return o;
}

int tags_needed(const Agreement& a) { return a.packed ? 1 : map_of(a).messages(); }

std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& /*opts*/,
                                const Agreement& a, MPI_Comm comm, const char** /*why_not*/)
{
    if (a.packed) {
        return std::make_unique<PackedBackend>(ep, a, comm);
    }
    return std::make_unique<PersistentBackend>(ep, a, comm);
}

}  // namespace mpipcl::persistent

namespace mpipcl {

// Always available, no process-wide resources, sends from any buffer and datatype.
constexpr BackendModule kPersistentModule = {
    BackendKind::Persistent,
    [](MPI_Comm) noexcept {},
    []() noexcept {},
    []() noexcept { return true; },
    []() noexcept { return ""; },
    [](const Endpoint&) noexcept { return true; },
    persistent::make_offer,
    persistent::create,
    persistent::tags_needed,
    persistent::auto_messages,
    persistent::packs,
};

}  // namespace mpipcl

namespace mpipcl::persistent {

PersistentBackend::PersistentBackend(const Endpoint& ep, const Agreement& a, MPI_Comm comm)
    : send_(ep.kind == Kind::Send),
      peer_(ep.peer_world),
      self_(is_self(comm, ep.peer_world)),
      map_(map_of(a)),
      window_(ep.kind == Kind::Recv && a.recv_window < map_.messages() ? a.recv_window : 0),
      tag_base_(a.tag_base),
      comm_(comm)
{
    const int m_count = map_.messages();
    reqs_.assign(m_count, MPI_REQUEST_NULL);
    try {
        if (send_) {
            counter_.init(map_.part_begin);
            ready_.resize(m_count);
            for (int m = 0; m < m_count; ++m) {
                const int p0 = map_.part_begin[m];
                const int p1 = map_.part_begin[m + 1];
                const std::int64_t elems =
                    map_.total_bytes == 0 ? 0 : static_cast<std::int64_t>(p1 - p0) * ep.count;
                void* ptr =
                    offset_address(ep.buf, static_cast<std::int64_t>(p0) * ep.count * ep.extent);
                MPIPCL_CHECK_MPI(PMPI_Send_init(ptr, checked_int(elems), ep.datatype, ep.peer_world,
                                                a.tag_base + m, comm, &reqs_[m]));
            }
        } else {
            arrived_ = std::make_unique<std::atomic<std::uint8_t>[]>(m_count);
            for (int m = 0; m < m_count; ++m) {
                std::int64_t first_elem = 0;
                std::int64_t elems = 0;
                if (map_.total_bytes != 0) {
                    first_elem = map_.begin[m] / ep.elem_bytes;
                    elems = (map_.begin[m + 1] - map_.begin[m]) / ep.elem_bytes;
                }
                void* ptr = offset_address(ep.buf, first_elem * ep.extent);
                MPIPCL_CHECK_MPI(PMPI_Recv_init(ptr, checked_int(elems), ep.datatype, ep.peer_world,
                                                a.tag_base + m, comm, &reqs_[m]));
            }
            recv_part_bytes_ = ep.part_bytes();
            if (ep.partitions <= kCachedPartitions) {
                all_covering_ranges(map_.begin, recv_part_bytes_, ep.partitions, &first_, &last_);
            }
        }
        indices_.resize(m_count);
        pending_.reserve(m_count);
        pending_msg_.reserve(m_count);
    } catch (...) {
        free_requests();
        throw;
    }
}

PersistentBackend::~PersistentBackend() { free_requests(); }

void PersistentBackend::free_requests() noexcept
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (finalized) {
        return;
    }
    // A receive still posted would take a message that nobody counts (the finalize drain
    // would wait for it): cancelled first.
    abort_round();
    for (auto& r : reqs_) {
        if (r != MPI_REQUEST_NULL) {
            PMPI_Request_free(&r);
        }
    }
}

void PersistentBackend::start(std::uint64_t /*round*/)
{
    const int m_count = map_.messages();
    pending_.clear();
    pending_msg_.clear();
    if (send_) {
        pend_all();
        counter_.reset();
        ready_.reset();
        started_.store(0, std::memory_order_relaxed);
        flush_error_.store(MPI_SUCCESS, std::memory_order_relaxed);
        return;
    }
    for (int m = 0; m < m_count; ++m) {
        arrived_[m].store(0, std::memory_order_relaxed);
    }
    remaining_.store(m_count, std::memory_order_relaxed);
    if (window_ > 0) {
        posted_.assign(static_cast<std::size_t>(m_count), 0);
        posted_count_ = 0;
        next_post_ = 0;
        probe_at_ = 0;
        moved_ = false;
        fill_window();
        return;
    }
    pend_all();
    MPIPCL_CHECK_MPI(m_count == 1 ? PMPI_Start(reqs_.data())
                                  : PMPI_Startall(m_count, reqs_.data()));
}

void PersistentBackend::pend_all()
{
    pending_.assign(reqs_.begin(), reqs_.end());
    pending_msg_.resize(reqs_.size());
    for (std::size_t m = 0; m < pending_msg_.size(); ++m) {
        pending_msg_[m] = static_cast<int>(m);
    }
}

void PersistentBackend::flush() noexcept
{
    constexpr int kBatch = 64;
    MPI_Request batch[kBatch];
    int h = -1;
    if (!ready_.try_begin(&h)) {
        return;  // nothing queued, or another thread drains (and takes what we queued)
    }
    do {
        while (h != -1) {
            int n = 0;
            while (h != -1 && n < kBatch) {
                batch[n++] = reqs_[h];
                h = ready_.next(h);
            }
            int rc = MPI_SUCCESS;
            {
                const auto gate = self_send_gate(self_);
                rc = n == 1 ? PMPI_Start(&batch[0]) : PMPI_Startall(n, batch);
            }
            if (rc != MPI_SUCCESS) {
                flush_error_.store(rc, std::memory_order_relaxed);
            } else {
                data_traffic().sent(peer_, n);
            }
            // sync: release so the engine's Testall sees the started requests.
            started_.fetch_add(n, std::memory_order_release);
        }
    } while (ready_.next_batch(&h));
}

void PersistentBackend::post(int m)
{
    MPIPCL_CHECK_MPI(PMPI_Start(&reqs_[m]));
    posted_[m] = 1;
    ++posted_count_;
    pending_.push_back(reqs_[m]);
    pending_msg_.push_back(m);
}

void PersistentBackend::fill_window()
{
    const int m_count = map_.messages();
    while (static_cast<int>(pending_.size()) < window_ && next_post_ < m_count) {
        if (posted_[next_post_] == 0) {
            post(next_post_);
        }
        ++next_post_;
    }
}

bool PersistentBackend::probe_unposted()
{
    const int m_count = map_.messages();
    int m = probe_at_;
    for (int k = 0; k < m_count && posted_[m] != 0; ++k) {
        m = m + 1 < m_count ? m + 1 : 0;
    }
    probe_at_ = m + 1 < m_count ? m + 1 : 0;
    int flag = 0;
    MPIPCL_CHECK_MPI(PMPI_Iprobe(peer_, tag_base_ + m, comm_, &flag, MPI_STATUS_IGNORE));
    if (flag == 0) {
        return false;
    }
    post(m);
    return true;
}

template <class Done>
void PersistentBackend::slide_window(Done&& done)
{
    // A probe costs an MPI progress call: a pass gives up after this many probes in a row
    // that found nothing (messages that come out of order are posted as long as probes find
    // them). MPI_Parrived's pass takes one step and its caller looks at the arrivals in
    // between; the progress thread and MPI_Wait/Test go on while receives complete
    // (t_drains; other threads read the flags meanwhile).
    constexpr int kProbeMissesPerPass = 2;
    int misses = kProbeMissesPerPass;
    int steps = t_drains ? INT_MAX : 1;
    while (posted_count_ < map_.messages() && steps-- > 0) {
        if (static_cast<int>(pending_.size()) < window_) {
            fill_window();
        } else if (misses == 0) {
            return;
        } else if (!probe_unposted()) {
            --misses;
            continue;
        }
        test_pending(done);
    }
}

bool PersistentBackend::arrived(int p) const noexcept
{
    return covered_arrived(map_.begin, recv_part_bytes_, first_, last_, arrived_.get(), p);
}

template <class Done>
void PersistentBackend::test_pending(Done&& done)
{
    if (pending_.empty()) {
        return;
    }
    int out = 0;
    if (pending_.size() == 1) {
        // One request (small transfers): MPI_Test is cheaper than the Testsome machinery.
        MPIPCL_CHECK_MPI(PMPI_Test(&pending_[0], &out, MPI_STATUS_IGNORE));
        if (out != 0) {
            done(pending_msg_[0]);
            pending_.clear();
            pending_msg_.clear();
        }
        return;
    }
    MPIPCL_CHECK_MPI(PMPI_Testsome(static_cast<int>(pending_.size()), pending_.data(), &out,
                                   indices_.data(), MPI_STATUSES_IGNORE));
    if (out == MPI_UNDEFINED || out == 0) {
        return;
    }
    for (int i = 0; i < out; ++i) {
        const int k = indices_[i];
        done(pending_msg_[k]);
        pending_[k] = MPI_REQUEST_NULL;  // completed: dropped below
    }
    std::size_t w = 0;
    for (std::size_t k = 0; k < pending_.size(); ++k) {
        if (pending_[k] != MPI_REQUEST_NULL) {
            pending_[w] = pending_[k];
            pending_msg_[w] = pending_msg_[k];
            ++w;
        }
    }
    pending_.resize(w);
    pending_msg_.resize(w);
}

bool PersistentBackend::progress()
{
    if (send_) {
        flush();
        if (const int rc = flush_error_.load(std::memory_order_relaxed); rc != MPI_SUCCESS) {
            throw Error(rc, "starting an internal send failed");
        }
        // sync: acquire pairs with flush()'s release: every counted request was started.
        if (started_.load(std::memory_order_acquire) < map_.messages()) {
            return false;
        }
        test_pending([](int) {});
        return pending_.empty();
    }
    const auto arrival = [this](int m) {
        // sync: release publishes the received bytes to lock-free Parrived readers.
        arrived_[m].store(1, std::memory_order_release);
        // The one writer holds the engine lock: a plain store, no locked read-modify-write.
        remaining_.store(remaining_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        data_traffic().received(peer_);
    };
    const int remaining = remaining_.load(std::memory_order_relaxed);
    const int posted = posted_count_;
    test_pending(arrival);
    if (window_ > 0) {
        slide_window(arrival);
        const int left = remaining_.load(std::memory_order_relaxed);
        moved_ = left > 0 && (left != remaining || posted_count_ != posted);
    }
    return remaining_.load(std::memory_order_relaxed) == 0;
}

bool PersistentBackend::sends_handed_over() const noexcept
{
    return send_ && !ready_.pending() &&
           flush_error_.load(std::memory_order_relaxed) == MPI_SUCCESS;
}

void PersistentBackend::describe(char* out, std::size_t n) const noexcept
{
    char queue[48];
    describe_queue(queue, sizeof queue);
    char pend[96] = "";  // the first few pending message numbers
    int used = 0;
    for (std::size_t k = 0; k < pending_msg_.size() && used < 80; ++k) {
        used += std::snprintf(pend + used, sizeof pend - static_cast<std::size_t>(used), "%s%d",
                              k == 0 ? "" : ",", pending_msg_[k]);
    }
    if (send_) {
        std::snprintf(out, n, "persistent send: messages=%d started=%d pending=%zu[%s] %s error=%d",
                      map_.messages(), started_.load(std::memory_order_relaxed), pending_.size(),
                      pend, queue, flush_error_.load(std::memory_order_relaxed));
    } else {
        std::snprintf(
            out, n, "persistent recv: messages=%d remaining=%d pending=%zu[%s] window=%d posted=%d",
            map_.messages(), remaining_.load(std::memory_order_relaxed), pending_.size(), pend,
            window_, posted_count_);
    }
}

void PersistentBackend::abort_round() noexcept
{
    if (send_) {
        return;
    }
    for (const int m : pending_msg_) {  // the receives still posted this round
        cancel_receive(&reqs_[m], peer_, self_);
    }
    moved_ = false;
    pending_.clear();
    pending_msg_.clear();
}

}  // namespace mpipcl::persistent
