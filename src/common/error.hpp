// SPDX-License-Identifier: BSD-3-Clause
// Error codes (registered under the standard MPI classes), the Error exception used on setup
// paths, and api_guard, which turns everything into an MPI code at the C boundary.
#pragma once

#include <mpi.h>

#include <exception>
#include <new>
#include <string>
#include <utility>

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
    /// Wraps a code returned by a PMPI call.
    Error(int mpi_code, std::string what) : code_(mpi_code), what_(std::move(what)) {}
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
/// Must not be called with a lock held.
int raise_error(MPI_Comm comm, int code, const char* fn) noexcept;

/// Logs an error's detail at level Info (the class goes to the error handler).
void log_error_detail(const char* fn, const char* what) noexcept;

/// Runs @p body (returning an MPI code), maps exceptions to codes and raises errors on @p comm.
template <class F>
int api_guard(MPI_Comm comm, const char* fn, F&& body) noexcept
{
    int rc = MPI_SUCCESS;
    try {
        rc = body();
    } catch (const Error& e) {
        rc = e.code();
        log_error_detail(fn, e.what());
    } catch (const std::bad_alloc&) {
        rc = MPI_ERR_NO_MEM;
    } catch (...) {
        rc = MPI_ERR_INTERN;
    }
    return rc == MPI_SUCCESS ? rc : raise_error(comm, rc, fn);
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
