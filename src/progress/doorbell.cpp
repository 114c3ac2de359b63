// SPDX-License-Identifier: BSD-3-Clause
// The node segment of the doorbells, and ringing and sleeping on them.
#include "progress/doorbell.hpp"

#include <climits>
#include <cstdint>
#include <new>

#include "common/futex.hpp"
#include "common/log.hpp"

namespace mpipcl::progress {

namespace {

/// Logs @p what as failed unless @p rc is MPI_SUCCESS; true if it failed.
bool failed(int rc, const char* what)
{
    if (rc != MPI_SUCCESS) {
        MPIPCL_LOG(Warn, "doorbells: %s failed (%d); each bell stays private", what, rc);
        return true;
    }
    return false;
}

}  // namespace

void* Doorbells::aligned(void* p) noexcept
{
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<void*>((a + alignof(Slot) - 1) & ~std::uintptr_t{alignof(Slot) - 1});
}

void Doorbells::init(MPI_Comm world)
{
    int me = 0;
    int size = 1;
    PMPI_Comm_rank(world, &me);
    PMPI_Comm_size(world, &size);
    by_world_.assign(static_cast<std::size_t>(size), nullptr);
    self_ = &local_;
    by_world_[static_cast<std::size_t>(me)] = self_;
    MPI_Comm node = MPI_COMM_NULL;
    if (failed(PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
               "MPI_Comm_split_type")) {
        return;
    }
    int n = 1;
    PMPI_Comm_size(node, &n);
    std::vector<int> world_of(static_cast<std::size_t>(n), 0);
    void* base = nullptr;
    // Every step is collective over the node: all members fail or succeed together, except
    // the allocation, whose result is agreed on before anyone uses the segment.
    int ok = PMPI_Allgather(&me, 1, MPI_INT, world_of.data(), 1, MPI_INT, node) == MPI_SUCCESS;
    // Two slots' room each: the MPI aligns a process's part to 8 or 16 bytes only, and the
    // slot is placed at the first cache-line boundary inside it.
    if (ok &&
        failed(PMPI_Win_allocate_shared(2 * sizeof(Slot), 1, MPI_INFO_NULL, node, &base, &win_),
               "MPI_Win_allocate_shared")) {
        win_ = MPI_WIN_NULL;
        ok = 0;
    }
    if (ok) {
        new (aligned(base)) Slot();  // before any peer may ring it: the reduction below orders it
    }
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, node);
    for (int r = 0; all != 0 && r < n; ++r) {
        MPI_Aint bytes = 0;
        int unit = 0;
        void* slot = nullptr;
        PMPI_Win_shared_query(win_, r, &bytes, &unit, &slot);
        by_world_[static_cast<std::size_t>(world_of[static_cast<std::size_t>(r)])] =
            static_cast<Slot*>(aligned(slot));
    }
    if (all != 0) {
        self_ = static_cast<Slot*>(aligned(base));
        shared_ = true;
    } else if (win_ != MPI_WIN_NULL) {
        PMPI_Win_free(&win_);
    }
    PMPI_Comm_free(&node);
}

void Doorbells::finalize()
{
    by_world_.clear();
    self_ = &local_;
    shared_ = false;
    if (win_ != MPI_WIN_NULL) {
        PMPI_Win_free(&win_);
    }
}

void Doorbells::ring_slot(Slot* s) noexcept
{
    // sync: seq_cst increment then load, against sleep()'s seq_cst increment of sleeping then
    // the kernel's compare of the word (Dekker): either the sleeper's compare sees the new
    // count (and does not sleep) or this load sees it asleep (and wakes every sleeper).
    s->rings.fetch_add(1);
    if (s->sleeping.load() != 0) {
        futex_wake(&s->rings, INT_MAX, shared_);
    }
}

void Doorbells::sleep(std::uint32_t seen, std::int64_t timeout_ns) noexcept
{
    self_->sleeping.fetch_add(1);
    futex_wait(&self_->rings, seen, timeout_ns, shared_);
    self_->sleeping.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace mpipcl::progress
