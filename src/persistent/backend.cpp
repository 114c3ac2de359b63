// SPDX-License-Identifier: BSD-3-Clause
// Persistent point-to-point data path.
#include "persistent/backend.hpp"

#include <climits>

#include "common/error.hpp"

namespace mpipcl::persistent {

using requests::Agreement;
using requests::Kind;
using requests::Request;

namespace {
Layout layout_of(const Agreement& a)
{
    return make_layout(a.send_partitions, a.send_part_bytes, a.recv_elem_bytes, a.messages);
}

int checked_int(std::int64_t n)
{
    if (n > INT_MAX) {
        throw Error(ErrId::BadCount, "an internal message exceeds INT_MAX elements; "
                                     "raise mpipcl_messages");
    }
    return static_cast<int>(n);
}
}  // namespace

int tags_needed(const Agreement& a) { return layout_of(a).messages(); }

std::unique_ptr<requests::Backend> create(Request& req, const Agreement& a, MPI_Comm comm)
{
    return std::make_unique<PersistentBackend>(req, a, comm);
}

PersistentBackend::PersistentBackend(Request& req, const Agreement& a, MPI_Comm comm)
    : send_(req.kind() == Kind::Send), layout_(layout_of(a))
{
    const auto& ep = req.endpoint();
    const int m_count = layout_.messages();
    reqs_.assign(m_count, MPI_REQUEST_NULL);
    auto* base = static_cast<char*>(ep.buf);
    try {
        if (send_) {
            part_msg_.resize(ep.partitions);
            remaining_ = std::make_unique<std::atomic<int>[]>(m_count);
            next_ = std::make_unique<std::atomic<int>[]>(m_count);
            for (int m = 0; m < m_count; ++m) {
                const int p0 = layout_.part_begin[m];
                const int p1 = layout_.part_begin[m + 1];
                for (int p = p0; p < p1; ++p) {
                    part_msg_[p] = m;
                }
                const std::int64_t elems =
                    layout_.total_bytes == 0 ? 0 : static_cast<std::int64_t>(p1 - p0) * ep.count;
                char* ptr = base == nullptr
                                ? nullptr
                                : base + static_cast<MPI_Aint>(p0) * ep.count * ep.extent;
                MPIPCL_CHECK_MPI(PMPI_Send_init(ptr, checked_int(elems), ep.datatype,
                                                ep.peer_world, a.tag_base + m, comm, &reqs_[m]));
            }
        } else {
            arrived_ = std::make_unique<std::atomic<std::uint8_t>[]>(m_count);
            indices_.resize(m_count);
            for (int m = 0; m < m_count; ++m) {
                std::int64_t first_elem = 0;
                std::int64_t elems = 0;
                if (layout_.total_bytes != 0) {
                    first_elem = layout_.begin[m] / ep.elem_bytes;
                    elems = (layout_.begin[m + 1] - layout_.begin[m]) / ep.elem_bytes;
                }
                char* ptr = base == nullptr ? nullptr : base + first_elem * ep.extent;
                MPIPCL_CHECK_MPI(PMPI_Recv_init(ptr, checked_int(elems), ep.datatype,
                                                ep.peer_world, a.tag_base + m, comm, &reqs_[m]));
            }
            first_.resize(ep.partitions);
            last_.resize(ep.partitions);
            for (int p = 0; p < ep.partitions; ++p) {
                recv_partition_messages(layout_, ep.part_bytes(), p, &first_[p], &last_[p]);
            }
        }
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
    for (auto& r : reqs_) {
        if (r != MPI_REQUEST_NULL) {
            PMPI_Request_free(&r);
        }
    }
}

void PersistentBackend::start()
{
    const int m_count = layout_.messages();
    if (send_) {
        for (int m = 0; m < m_count; ++m) {
            remaining_[m].store(layout_.part_begin[m + 1] - layout_.part_begin[m],
                                std::memory_order_relaxed);
        }
        head_.store(-1, std::memory_order_relaxed);
        started_.store(0, std::memory_order_relaxed);
        flush_error_.store(MPI_SUCCESS, std::memory_order_relaxed);
        return;
    }
    for (int m = 0; m < m_count; ++m) {
        arrived_[m].store(0, std::memory_order_relaxed);
    }
    arrived_count_ = 0;
    MPIPCL_CHECK_MPI(PMPI_Startall(m_count, reqs_.data()));
}

void PersistentBackend::partition_ready(int p) noexcept
{
    const int m = part_msg_[p];
    // sync: acq_rel chains every Pready thread's buffer writes to the one that sees zero.
    if (remaining_[m].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        push_ready(m);
    }
}

void PersistentBackend::push_ready(int m) noexcept
{
    int h = head_.load(std::memory_order_relaxed);
    do {
        next_[m].store(h, std::memory_order_relaxed);
        // sync: release publishes next_[m] and the partition data to the flusher's acquire.
    } while (!head_.compare_exchange_weak(h, m, std::memory_order_release,
                                          std::memory_order_relaxed));
}

void PersistentBackend::flush() noexcept
{
    constexpr int kBatch = 64;
    MPI_Request batch[kBatch];
    // sync: acquire pairs with push_ready's release; one flusher at a time (draining_).
    while (head_.load(std::memory_order_acquire) != -1) {
        if (draining_.exchange(true, std::memory_order_acquire)) {
            return;  // the current flusher re-checks head_ after it lets go
        }
        int h = head_.exchange(-1, std::memory_order_acq_rel);
        while (h != -1) {
            int n = 0;
            while (h != -1 && n < kBatch) {
                batch[n++] = reqs_[h];
                h = next_[h].load(std::memory_order_relaxed);
            }
            const int rc = PMPI_Startall(n, batch);
            if (rc != MPI_SUCCESS) {
                flush_error_.store(rc, std::memory_order_relaxed);
            }
            // sync: release so the engine's Testall sees the started requests.
            started_.fetch_add(n, std::memory_order_release);
        }
        draining_.store(false, std::memory_order_release);
    }
}

bool PersistentBackend::arrived(int p) const noexcept
{
    for (int m = first_[p]; m <= last_[p]; ++m) {
        // sync: acquire pairs with progress()'s release after the receive completed.
        if (arrived_[m].load(std::memory_order_acquire) == 0) {
            return false;
        }
    }
    return true;
}

bool PersistentBackend::progress()
{
    const int m_count = layout_.messages();
    if (send_) {
        flush();
        if (const int rc = flush_error_.load(std::memory_order_relaxed); rc != MPI_SUCCESS) {
            throw Error(rc, "starting an internal send failed");
        }
        if (started_.load(std::memory_order_acquire) < m_count) {
            return false;
        }
        int flag = 0;
        MPIPCL_CHECK_MPI(PMPI_Testall(m_count, reqs_.data(), &flag, MPI_STATUSES_IGNORE));
        return flag != 0;
    }
    if (arrived_count_ == m_count) {
        return true;
    }
    int out = 0;
    MPIPCL_CHECK_MPI(
        PMPI_Testsome(m_count, reqs_.data(), &out, indices_.data(), MPI_STATUSES_IGNORE));
    if (out != MPI_UNDEFINED) {
        for (int i = 0; i < out; ++i) {
            // sync: release publishes the received bytes to lock-free Parrived readers.
            arrived_[indices_[i]].store(1, std::memory_order_release);
        }
        arrived_count_ += out;
    }
    return arrived_count_ == m_count;
}

void PersistentBackend::abort_round()
{
    if (send_) {
        return;
    }
    for (int m = 0; m < layout_.messages(); ++m) {
        if (arrived_[m].load(std::memory_order_relaxed) == 0) {
            PMPI_Cancel(&reqs_[m]);
            PMPI_Wait(&reqs_[m], MPI_STATUS_IGNORE);
        }
    }
}

}  // namespace mpipcl::persistent
