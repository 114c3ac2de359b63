// SPDX-License-Identifier: BSD-3-Clause
// MPI helpers shared by the benchmark programs: error checks, backend info, backend probing.
#pragma once

#include <mpi.h>

#include <string>

namespace mpipcl::bench {

/// Prints "[rank r] <what> failed: <MPI error string>" to stderr and aborts the job (code 3).
[[noreturn]] void fail(const char* what, int rc);

/// Calls fail() unless rc is MPI_SUCCESS.
inline void check(int rc, const char* what)
{
    if (rc != MPI_SUCCESS) {
        fail(what, rc);
    }
}

/// Completes @p request by testing it every @p sleep_us microseconds, sleeping in between: a
/// rank that only waits leaves its core to those that compute (MPI_Wait may poll a core).
void sleep_wait(MPI_Request* request, int sleep_us = 100);

/// The text of an MPI error code.
[[nodiscard]] std::string error_string(int rc);

/// The first line of MPI_Get_library_version.
[[nodiscard]] std::string mpi_library_version();

/// An MPI_Info holding "mpipcl_backend" = backend; freed on destruction.
class BackendInfo {
   public:
    explicit BackendInfo(const std::string& backend);
    ~BackendInfo();
    BackendInfo(const BackendInfo&) = delete;
    BackendInfo& operator=(const BackendInfo&) = delete;
    [[nodiscard]] MPI_Info get() const { return info_; }

   private:
    MPI_Info info_ = MPI_INFO_NULL;
};

/// Whether a partitioned backend works between ranks 0 (sender) and 1 (receiver) of comm.
struct Probe {
    bool supported = false;
    std::string reason;  ///< why not, on rank 0 only
};

/**
 * Runs one tiny partitioned round (init, Start, Pready of every partition, Wait, free) with
 * info "mpipcl_backend" = backend, agreeing with the peer after each step, so a backend that
 * fails lazily (e.g. at window creation) is caught too. "persistent" and "rma" also require
 * mpipcl's wrappers to be interposed. comm must have exactly two ranks and MPI_ERRORS_RETURN.
 * Collective over comm.
 */
[[nodiscard]] Probe probe_backend(MPI_Comm comm, const std::string& backend, int partitions);

}  // namespace mpipcl::bench
