// SPDX-License-Identifier: BSD-3-Clause
// MPIPCL_ASSERT: checks an internal invariant in debug builds (NDEBUG not defined); compiled
// out otherwise, its expression then never evaluated. Not for user input or MPI return codes:
// those get MPI error classes (common/error.hpp).
#pragma once

namespace mpipcl::detail {

/// Logs "assertion failed" with @p file:@p line, @p expr and @p msg at level Error (whatever
/// MPIPCL_LOG_LEVEL says), then ends the job: PMPI_Abort while MPI is up, else std::abort.
[[noreturn]] void assert_fail(const char* file, int line, const char* expr,
                              const char* msg) noexcept;

}  // namespace mpipcl::detail

#ifdef NDEBUG
#define MPIPCL_ASSERT(expr, msg) static_cast<void>(false && (expr))  // compiled, never run
#else
#define MPIPCL_ASSERT(expr, msg)   \
    ((expr) ? static_cast<void>(0) \
            : ::mpipcl::detail::assert_fail(__FILE__, __LINE__, #expr, (msg)))
#endif
