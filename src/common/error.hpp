// SPDX-License-Identifier: BSD-3-Clause
// Error codes (registered under the standard MPI classes), the Error exception used on setup
// paths, and api_guard, the one place where exceptions become MPI codes (at the C boundary).
#pragma once

#include <mpi.h>

#include <exception>
#include <new>
#include <string>
#include <utility>

#include "common/assert.hpp"

namespace mpipcl {

/// Library-specific conditions; each maps to a registered MPI error code of the given class.
enum class ErrId : int {
    BadPartition,     // MPI_ERR_ARG
    DuplicatePready,  // MPI_ERR_ARG
    BadPartitions,    // MPI_ERR_ARG: partitions <= 0
    NullArg,          // MPI_ERR_ARG
    NotStarted,       // MPI_ERR_REQUEST
    WrongKind,        // MPI_ERR_REQUEST
    ActiveRequest,    // MPI_ERR_REQUEST: free/cancel of an active request
    Truncate,         // MPI_ERR_TRUNCATE: sender has more data than fits
    SizeMismatch,     // MPI_ERR_COUNT: sender has less data than the receive buffer
    BadCount,         // MPI_ERR_COUNT
    BadType,          // MPI_ERR_TYPE
    BadRank,          // MPI_ERR_RANK
    BadTag,           // MPI_ERR_TAG
    BadComm,          // MPI_ERR_COMM
    BadBackend,       // MPI_ERR_INFO_VALUE
    Unsupported,      // MPI_ERR_UNSUPPORTED_OPERATION
    NotInitialized,   // MPI_ERR_OTHER
    Internal,         // MPI_ERR_INTERN
    BadRoot,          // MPI_ERR_ROOT
    BadOp,            // MPI_ERR_OP
    CollMismatch,     // MPI_ERR_ARG
    InPlace,          // MPI_ERR_BUFFER
    BadTopology,      // MPI_ERR_TOPOLOGY
    Count_
};

/// Registers the codes with PMPI_Add_error_code/_string. Called once in MPI_Init*.
void register_error_codes();

/// The MPI error code for @p id (its class until register_error_codes ran).
int error_code(ErrId id) noexcept;

/// Thrown on setup paths only; hot paths return codes.
class Error : public std::exception {
   public:
    Error(ErrId id, std::string what) : code_(error_code(id)), what_(std::move(what)) {}
    /// Wraps a code returned by a failed PMPI call.
    Error(int mpi_code, std::string what) : code_(mpi_code), what_(std::move(what))
    {
        MPIPCL_ASSERT(mpi_code != MPI_SUCCESS, "an Error always carries a failure");
    }
    int code() const noexcept { return code_; }
    const char* what() const noexcept override { return what_.c_str(); }

   private:
    int code_;
    std::string what_;
};

/// The communicator that receives errors tied to no object (MPI-4: SELF; MPI-3.1: WORLD).
inline MPI_Comm default_error_comm() noexcept
{
#if MPI_VERSION >= 4
    return MPI_COMM_SELF;
#else
    return MPI_COMM_WORLD;
#endif
}

/// Invokes @p comm's error handler for @p code (unless MPI_SUCCESS) and returns @p code.
/// Must not be called with a lock held. Cold: kept out of the per-partition calls' fast path.
[[gnu::cold]] int raise_error(MPI_Comm comm, int code, const char* fn) noexcept;

/// Logs an error's detail at level Info (the class goes to the error handler).
[[gnu::cold]] void log_error_detail(const char* fn, const char* what) noexcept;

/// The error side of one extern "C" call: its name, and the communicator whose error handler
/// its errors go to. That is MPI-4's default for errors tied to no object
/// (default_error_comm()) until the body names the request's or the call's communicator.
class ApiCall {
   public:
    explicit ApiCall(const char* fn) noexcept : fn_(fn) {}
    const char* name() const noexcept { return fn_; }
    /// From now on errors go to @p comm's handler (MPI_COMM_NULL: the default again).
    void on(MPI_Comm comm) noexcept { comm_ = comm; }
    /// Invokes the handler for @p code unless it is MPI_SUCCESS; returns @p code.
    int raise(int code) const noexcept
    {
        return code == MPI_SUCCESS ? code : raise_error(target(), code, fn_);
    }
    int raise(ErrId id) const noexcept { return raise(error_code(id)); }
    /// An exception that reached api_guard: logs @p what (level Info), then raises @p code.
    int raise_caught(int code, const char* what) const noexcept
    {
        log_error_detail(fn_, what);
        return raise(code);
    }

   private:
    MPI_Comm target() const noexcept
    {
        return comm_ == MPI_COMM_NULL ? default_error_comm() : comm_;
    }
    const char* fn_;
    MPI_Comm comm_ = MPI_COMM_NULL;
};

/// The body of every extern "C" entry point runs inside this guard: `return api_guard(
/// "MPI_X", [&](ApiCall& call) -> int { ... });`. The body returns an MPI code whose error
/// handler has already run: MPI_SUCCESS, call.raise(...), or the result of a PMPI call (the MPI
/// ran the handler itself). An exception never leaves: mpipcl::Error becomes its code,
/// std::bad_alloc MPI_ERR_NO_MEM, anything else MPI_ERR_INTERN; its detail is logged at level
/// Info and the code raised once on the call's communicator (ApiCall::on). The try block costs
/// nothing while nothing throws, so the per-partition calls use it too.
template <class F>
int api_guard(const char* fn, F&& body) noexcept
{
    ApiCall call(fn);
    try {
        return body(call);
    } catch (const Error& e) {
        return call.raise_caught(e.code(), e.what());
    } catch (const std::bad_alloc&) {
        return call.raise_caught(MPI_ERR_NO_MEM, "out of memory");
    } catch (const std::exception& e) {
        return call.raise_caught(MPI_ERR_INTERN, e.what());
    } catch (...) {
        return call.raise_caught(MPI_ERR_INTERN, "unknown exception");
    }
}

}  // namespace mpipcl

/// Evaluates a PMPI call and throws mpipcl::Error with the original code when it fails.
#define MPIPCL_CHECK_MPI(call)                                  \
    do {                                                        \
        int mpipcl_rc_ = (call);                                \
        if (mpipcl_rc_ != MPI_SUCCESS) {                        \
            throw ::mpipcl::Error(mpipcl_rc_, #call " failed"); \
        }                                                       \
    } while (0)
