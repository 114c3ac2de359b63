// SPDX-License-Identifier: BSD-3-Clause
// Doorbells of the event and offload progress modes (after SmartInterrupts, paper 003): one
// futex word per process in a segment that the processes of a node share
// (MPI_Win_allocate_shared on the node communicator). A process's progress thread sleeps on its
// own word when it has nothing it can do now; its own application threads ring it
// (MPI_Pready*, MPI_Start*, MPI_Wait*), and so does a peer on the same node that sends it data
// or a control message, or completes a round with it. A ring is an atomic increment, plus a
// futex wake-up only while the thread sleeps.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace mpipcl::progress {

class Doorbells {
   public:
    /// Collective over @p world (the private duplicate of MPI_COMM_WORLD), in MPI_Init*. Where
    /// the node segment cannot be made, the bell is private: only this process rings it, and
    /// the progress thread's bounded sleeps find what its peers did.
    void init(MPI_Comm world);
    /// Collective, in MPI_Finalize (after the progress thread stopped).
    void finalize();
    /// Rings the bell of MPI_COMM_WORLD rank @p world_rank if it is on this node's segment
    /// (this process's own included); otherwise nothing.
    void ring(int world_rank) noexcept
    {
        if (world_rank >= 0 && static_cast<std::size_t>(world_rank) < by_world_.size()) {
            if (Slot* s = by_world_[static_cast<std::size_t>(world_rank)]) {
                ring_slot(s);
            }
        }
    }
    void ring_self() noexcept { ring_slot(self_); }
    /// Whether MPI_COMM_WORLD rank @p world_rank can ring this process's bell.
    bool reaches(int world_rank) const noexcept
    {
        return world_rank >= 0 && static_cast<std::size_t>(world_rank) < by_world_.size() &&
               by_world_[static_cast<std::size_t>(world_rank)] != nullptr;
    }
    /// The own bell's ring count: read it before the pass that found nothing, then sleep().
    std::uint32_t rings() const noexcept
    {
        // sync: acquire pairs with ring_slot's increment: what the ringer did before it is
        // visible to the pass that follows.
        return self_->rings.load(std::memory_order_acquire);
    }
    /// Sleeps until the bell rang after @p seen was read, or @p timeout_ns passed. Sleepers:
    /// the progress thread, and application threads waiting in MPI_Wait* (a ring wakes all).
    void sleep(std::uint32_t seen, std::int64_t timeout_ns) noexcept;

   private:
    struct alignas(64) Slot {
        std::atomic<std::uint32_t> rings{0};
        std::atomic<std::uint32_t> sleeping{0};  ///< threads asleep on it
    };
    void ring_slot(Slot* s) noexcept;
    /// @p p rounded up to a slot boundary (a cache line).
    static void* aligned(void* p) noexcept;

    MPI_Win win_ = MPI_WIN_NULL;
    bool shared_ = false;  ///< the slots live in the node segment (shared futexes)
    Slot local_;           ///< the private bell (no segment)
    Slot* self_ = &local_;
    std::vector<Slot*> by_world_;  ///< MPI_COMM_WORLD rank -> its slot, null off this node
};

}  // namespace mpipcl::progress
