// SPDX-License-Identifier: BSD-3-Clause
// Linux futexes on 32-bit atomic words: the sleeping waits of the event and offload progress
// modes (docs/design.md, "Progress modes"). A private futex serves the threads of one process;
// a shared one (a word in memory mapped by several processes) lets a process on the same node
// wake another's thread.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace mpipcl {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex word is a plain lock-free 32-bit atomic");

namespace futex_detail {
inline long call(std::atomic<std::uint32_t>* word, int op, std::uint32_t val,
                 const timespec* timeout) noexcept
{
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, val, timeout, nullptr, 0);
}
}  // namespace futex_detail

/// Sleeps while *@p word == @p expected, at most @p timeout_ns (< 0: no bound), or until a
/// futex_wake on the word (or a signal, or a spurious wake-up: callers re-check their
/// condition). @p shared: the word may be mapped in other processes.
inline void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                       std::int64_t timeout_ns, bool shared = false) noexcept
{
    timespec ts{};
    const timespec* t = nullptr;
    if (timeout_ns >= 0) {
        ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
        ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
        t = &ts;
    }
    futex_detail::call(word, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected, t);
}

/// Wakes up to @p count sleepers of @p word (INT_MAX: all).
inline void futex_wake(std::atomic<std::uint32_t>* word, int count = INT_MAX,
                       bool shared = false) noexcept
{
    futex_detail::call(word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE,
                       static_cast<std::uint32_t>(count), nullptr);
}

}  // namespace mpipcl
