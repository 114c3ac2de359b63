// SPDX-License-Identifier: BSD-3-Clause
// MPIPCL_DUMP_SIGNAL: a signal handler that asks the next progress pass to log the state of the
// library (a hang's post-mortem).
#pragma once

#include <signal.h>

#include <atomic>

namespace mpipcl::progress {

/// Set by the signal handler, consumed by the pass that dumps (a lock-free atomic: safe in a
/// signal handler).
inline std::atomic<bool> g_dump_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

/// The handler of one signal, installed at MPI_Init* and restored at MPI_Finalize.
class DumpSignal {
   public:
    /// Installs the handler for @p sig (0 = none); a signal that cannot be handled is logged.
    void install(int sig);
    /// Puts back the handler that was there before install().
    void restore() noexcept;

   private:
    int sig_ = 0;  ///< the signal whose handler we installed (0 = none)
    struct sigaction old_action_ {};
};

}  // namespace mpipcl::progress
