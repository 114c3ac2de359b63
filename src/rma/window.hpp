// SPDX-License-Identifier: BSD-3-Clause
// The process's one dynamic RMA window (created collectively in MPI_Init*, on the library's
// private communicator, under one lock_all epoch for its whole life), the registry of memory
// attached to it, and a pool of 64-bit slots in attached memory for flags and descriptions.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpipcl::rma {

/// A run of zeroed 64-bit slots in attached window memory.
struct Slots {
    std::uint64_t* ptr = nullptr;
    std::size_t count = 0;
};

class Window {
   public:
    static Window& instance();

    /// Collective over @p comm (MPI_Init*): MPI_Win_create_dynamic + MPI_Win_lock_all. A
    /// failure is logged and leaves the window unavailable (see unavailable_reason()).
    void init(MPI_Comm comm) noexcept;
    /// Collective (MPI_Finalize): detaches everything, MPI_Win_unlock_all, MPI_Win_free.
    void finalize() noexcept;

    bool available() const { return win_ != MPI_WIN_NULL; }
    const std::string& unavailable_reason() const { return reason_; }
    MPI_Win win() const { return win_; }
    /// MPI_WIN_SEPARATE: local reads of remotely written memory need MPI_Win_sync first.
    bool separate_model() const { return separate_; }

    /// Makes [base, base+len) remotely accessible: attaches it, or reuses an attached region
    /// that contains it (reference counted). Returns false when it partially overlaps an
    /// attached region (MPI forbids overlapping attachments), when the attachment budget is
    /// used up (see max_attach()) or when MPI_Win_attach fails. On success *key identifies
    /// the region.
    bool attach(const void* base, std::size_t len, std::uintptr_t* key);
    /// Drops one reference taken by attach(); detaches the region with the last one.
    void release(std::uintptr_t key) noexcept;

    /// @p n zeroed slots (n >= 1) in attached memory; ptr == nullptr when a new chunk would be
    /// needed and cannot be attached (budget, MPI failure). Throws Error (allocation).
    Slots alloc_slots(std::size_t n);
    /// Most attachments we make at once (0 = no limit known). Open MPI 4.1's osc rdma refuses
    /// attachments beyond osc_rdma_max_attach, and after such a refusal Puts to this process
    /// hang (its region table stays locked), so we never ask beyond the limit: it is read with
    /// the MPI_T interface at init, or set with MPIPCL_RMA_MAX_ATTACH.
    int max_attach() const { return max_attach_; }
    void free_slots(const Slots& s) noexcept;

   private:
    Window() = default;
    struct Region {
        std::uintptr_t hi;
        int refs;
    };
    struct Chunk {
        std::uint64_t* mem = nullptr;
        std::size_t slots = 0;
        std::size_t used = 0;
        std::map<std::size_t, std::size_t> free;  ///< offset -> length, coalesced
    };
    void free_chunk_locked(Chunk& c) noexcept;
    /// One more attachment fits in the budget (mu_ held).
    bool budget_locked() const { return max_attach_ == 0 || attached_ < max_attach_; }

    MPI_Win win_ = MPI_WIN_NULL;
    bool separate_ = false;
    int max_attach_ = 0;
    int attached_ = 0;  ///< regions + chunks (mu_)
    std::string reason_ = "the RMA window was not created (MPI not initialized through mpipcl)";

    std::mutex mu_;                             ///< guards regions_ and chunks_
    std::map<std::uintptr_t, Region> regions_;  ///< attached user memory, by start address
    std::vector<std::unique_ptr<Chunk>> chunks_;
};

}  // namespace mpipcl::rma
