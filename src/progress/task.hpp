// SPDX-License-Identifier: BSD-3-Clause
// Task: work an upper layer hangs on the progress passes. A partitioned collective
// (requests/collective.*) is a schedule of internal transfers; what moves a partition from one
// transfer to the next (forwarding an arrived partition, combining the partitions of several
// inputs) is a Task that every progress pass advances while the collective's round runs. The
// engine knows only this interface: nothing here includes upward.
#pragma once

namespace mpipcl::progress {

class Task {
   public:
    virtual ~Task() = default;
    /// engine lock held (a progress pass: the progress thread's, or one inside the
    /// application's MPI_Test*/MPI_Wait*/MPI_Parrived/MPI_Start calls). Does the work that is
    /// ready now, never blocks, never throws. True once this round needs no more passes.
    virtual bool advance_locked() noexcept = 0;
    /// engine lock held: until one of its transfers moves, advance_locked() has nothing to do
    /// (the progress thread may then pass rarely, see Engine::quiet).
    virtual bool waits_on_transfers() const noexcept { return false; }
};

}  // namespace mpipcl::progress
