// SPDX-License-Identifier: BSD-3-Clause
// The MPIPCL_DUMP_SIGNAL handler.
#include "progress/dump_signal.hpp"

#include "common/log.hpp"

namespace mpipcl::progress {

namespace {
extern "C" void on_dump_signal(int /*sig*/)
{
    g_dump_requested.store(true, std::memory_order_relaxed);
}
}  // namespace

void DumpSignal::install(int sig)
{
    sig_ = 0;
    if (sig == 0) {
        return;
    }
    struct sigaction sa {};
    sa.sa_handler = on_dump_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old_action_) != 0) {
        MPIPCL_LOG(Warn, "MPIPCL_DUMP_SIGNAL: cannot handle signal %d", sig);
        return;
    }
    sig_ = sig;
    MPIPCL_LOG(Info, "signal %d dumps the library's state", sig);
}

void DumpSignal::restore() noexcept
{
    if (sig_ != 0) {
        sigaction(sig_, &old_action_, nullptr);
        sig_ = 0;
    }
}

}  // namespace mpipcl::progress
