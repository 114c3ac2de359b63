// SPDX-License-Identifier: BSD-3-Clause
// MPIPCL_LOG: leveled, printf-style diagnostics on stderr, silent by default.
#pragma once

namespace mpipcl::log {

enum class Level : int { Error = 0, Warn = 1, Info = 2, Debug = 3, Trace = 4 };

/// Runtime level, read from MPIPCL_LOG_LEVEL by Config (default Warn).
extern int g_level;

/// Writes one "[mpipcl r<rank> t<tid>] ..." line to stderr. Thread safety: any thread.
void write(Level level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace mpipcl::log

#ifndef MPIPCL_MAX_LOG_LEVEL
#define MPIPCL_MAX_LOG_LEVEL 3
#endif

/// Arguments are not evaluated when the level is disabled.
#define MPIPCL_LOG(level, ...)                                                                  \
    do {                                                                                        \
        if (static_cast<int>(::mpipcl::log::Level::level) <= MPIPCL_MAX_LOG_LEVEL &&            \
            static_cast<int>(::mpipcl::log::Level::level) <= ::mpipcl::log::g_level) {          \
            ::mpipcl::log::write(::mpipcl::log::Level::level, __FILE__, __LINE__, __VA_ARGS__); \
        }                                                                                       \
    } while (0)
