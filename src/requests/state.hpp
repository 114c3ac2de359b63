// SPDX-License-Identifier: BSD-3-Clause
// The user-visible state machine of a partitioned request. Every transition is one CAS, so a
// check and the action it allows can never be split by another thread (e.g. two MPI_Start
// calls, or MPI_Start against MPI_Request_free).
//
//   Inactive --begin_start--> Starting --end_start--> Active --complete--> Inactive
//   Starting --abort_start--> Inactive            (the start failed)
//   Inactive --begin_free---> Freed               (terminal)
#pragma once

#include <atomic>
#include <cstdint>

namespace mpipcl::requests {

enum class State : std::uint8_t { Inactive, Starting, Active, Freed };

class StateMachine {
   public:
    State load() const noexcept { return s_.load(std::memory_order_acquire); }
    bool active() const noexcept { return load() == State::Active; }

    /// MPI_Start: Inactive -> Starting. False (erroneous call) in any other state.
    bool begin_start() noexcept { return move(State::Inactive, State::Starting); }
    /// The round is set up: Starting -> Active. The release publishes the round's reset state
    /// to every thread that then sees Active (Pready, Parrived, Test).
    bool end_start() noexcept { return move(State::Starting, State::Active); }
    /// The start failed: Starting -> Inactive.
    bool abort_start() noexcept { return move(State::Starting, State::Inactive); }
    /// A completion call reports the finished round: Active -> Inactive. Exactly one caller
    /// wins when several threads complete the same request.
    bool complete() noexcept { return move(State::Active, State::Inactive); }
    /// MPI_Request_free: Inactive -> Freed. False while a round is starting or active.
    bool begin_free() noexcept { return move(State::Inactive, State::Freed); }

   private:
    bool move(State from, State to) noexcept
    {
        // sync: acq_rel: acquire what the previous transition published, release ours.
        return s_.compare_exchange_strong(from, to, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
    }
    std::atomic<State> s_{State::Inactive};
};

}  // namespace mpipcl::requests
