// SPDX-License-Identifier: BSD-3-Clause
// Data messages (the persistent backend's point-to-point traffic on the private communicator)
// started towards and received from each process, for the finalize drain
// (progress/data_drain.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace mpipcl {

/// Per private rank: the data messages this process started towards it, and those it received
/// from it (receives that completed with a message; a cancelled receive does not count). The
/// finalize drain compares what each process sent here with what arrived and takes the rest:
/// a failed round cancels its receives, and its sender's messages may already be on the way,
/// or leave later. The counters are atomics because sends start in MPI_Pready threads, without
/// the engine lock.
class DataTraffic {
   public:
    /// MPI_Init*, before any backend exists: @p size processes, every count 0.
    void init(int size);
    /// @p n sends to private rank @p rank started.
    void sent(int rank, int n) noexcept
    {
        // sync: relaxed: read in MPI_Finalize, after every thread's MPI calls returned (the
        // application's duty) and after the progress thread was joined.
        sent_[rank].fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    }
    /// A message from private rank @p rank was received.
    void received(int rank) noexcept
    {
        // sync: relaxed, as in sent().
        received_[rank].fetch_add(1, std::memory_order_relaxed);
    }
    int size() const noexcept { return size_; }
    std::uint64_t sent_to(int rank) const noexcept
    {
        return sent_[rank].load(std::memory_order_relaxed);
    }
    std::uint64_t received_from(int rank) const noexcept
    {
        return received_[rank].load(std::memory_order_relaxed);
    }

   private:
    int size_ = 0;
    std::unique_ptr<std::atomic<std::uint64_t>[]> sent_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> received_;
};

/// The process's counts.
DataTraffic& data_traffic() noexcept;

}  // namespace mpipcl
