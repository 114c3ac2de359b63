// SPDX-License-Identifier: BSD-3-Clause
// MPI helpers shared by the benchmark programs: error checks, backend info, backend probing.
#include "mpi_util.hpp"

#include <mpipcl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace mpipcl::bench {

namespace {

constexpr int kProbeTag = 7;
constexpr int kReasonLength = 256;

bool all_agree(MPI_Comm comm, bool ok)
{
    int mine = ok ? 1 : 0;
    int all = 0;
    check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    return all == 1;
}

}  // namespace

void fail(const char* what, int rc)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "[rank %d] %s failed: %s\n", rank, what, error_string(rc).c_str());
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

void sleep_wait(MPI_Request* request, int sleep_us)
{
    for (int flag = 0;;) {
        check(MPI_Test(request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        if (flag != 0) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    }
}

std::string error_string(int rc)
{
    std::array<char, MPI_MAX_ERROR_STRING> text{};
    int length = 0;
    if (MPI_Error_string(rc, text.data(), &length) != MPI_SUCCESS) {
        return "MPI error " + std::to_string(rc);
    }
    return text.data();  // some MPIs count the terminating NUL in length
}

std::string mpi_library_version()
{
    std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
    int length = 0;
    check(MPI_Get_library_version(text.data(), &length), "MPI_Get_library_version");
    std::string version(text.data());  // Open MPI counts the terminating NUL in length
    version = version.substr(0, version.find('\n'));
    std::replace(version.begin(), version.end(), '\t', ' ');
    while (!version.empty() && (version.back() == ' ' || version.back() == '\r')) {
        version.pop_back();
    }
    return version;
}

BackendInfo::BackendInfo(const std::string& backend)
{
    check(MPI_Info_create(&info_), "MPI_Info_create");
    check(MPI_Info_set(info_, "mpipcl_backend", backend.c_str()), "MPI_Info_set");
}

BackendInfo::~BackendInfo() { MPI_Info_free(&info_); }

Probe probe_backend(MPI_Comm comm, const std::string& backend, int partitions)
{
    int rank = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    std::string reason;
    auto step = [&](int rc, const char* call) {
        if (rc != MPI_SUCCESS && reason.empty()) {
            reason = std::string(call) + ": " + error_string(rc);
        }
        return rc == MPI_SUCCESS;
    };

    bool ok = true;
    if (backend == "native" && !MPIPCL_MPI_HAS_PARTITIONED) {
        ok = false;  // mpipcl would run its persistent backend under native's name
        reason = "this MPI has no partitioned calls of its own";
    } else if (backend != "native") {
        int interposed = 0;
        MPIX_Pcl_interposed(&interposed);
        ok = interposed != 0;
        if (!ok) {
            reason = "mpipcl's MPI wrappers are not interposed (link order or LD_PRELOAD)";
        }
    }
    std::vector<char> buffer(static_cast<std::size_t>(partitions));
    const BackendInfo info(backend);
    MPI_Request request = MPI_REQUEST_NULL;
    if (ok) {
        ok = rank == 0 ? step(MPI_Psend_init(buffer.data(), partitions, 1, MPI_BYTE, 1, kProbeTag,
                                             comm, info.get(), &request),
                              "MPI_Psend_init")
                       : step(MPI_Precv_init(buffer.data(), partitions, 1, MPI_BYTE, 0, kProbeTag,
                                             comm, info.get(), &request),
                              "MPI_Precv_init");
    }
    bool active = false;
    bool supported = all_agree(comm, ok);
    if (supported) {
        ok = active = step(MPI_Start(&request), "MPI_Start");
        for (int p = 0; ok && rank == 0 && p < partitions; ++p) {
            ok = step(MPI_Pready(p, request), "MPI_Pready");
        }
        supported = all_agree(comm, ok);
        if (supported) {
            ok = step(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
            active = !ok;
            supported = all_agree(comm, ok);
        }
        if (supported && (backend == "persistent" || backend == "rma")) {
            // A hint mpipcl cannot honour falls back (rma without a window): the pair must
            // really use the backend the mode is named after.
            const char* got = nullptr;
            ok = step(MPIX_Pcl_backend(request, &got), "MPIX_Pcl_backend") && got == backend;
            if (!ok && reason.empty()) {
                reason = "mpipcl_backend=" + backend + " falls back to " + got +
                         " (MPIPCL_LOG_LEVEL=info says why)";
            }
            supported = all_agree(comm, ok);
        }
    }
    // An active request cannot be freed (erroneous): after a failed round it is left behind.
    if (request != MPI_REQUEST_NULL && !active) {
        MPI_Request_free(&request);
    }

    Probe probe;
    probe.supported = supported;
    if (!supported) {
        std::array<char, kReasonLength> mine{};
        std::snprintf(mine.data(), mine.size(), "%s", reason.c_str());
        std::vector<char> all(2 * kReasonLength);
        check(MPI_Gather(mine.data(), kReasonLength, MPI_CHAR, all.data(), kReasonLength, MPI_CHAR,
                         0, comm),
              "MPI_Gather");
        for (int r = 0; rank == 0 && r < 2 && probe.reason.empty(); ++r) {
            if (all[static_cast<std::size_t>(r * kReasonLength)] != '\0') {
                probe.reason = "rank " + std::to_string(r) + ": " +
                               std::string(&all[static_cast<std::size_t>(r * kReasonLength)]);
            }
        }
    }
    return probe;
}

}  // namespace mpipcl::bench
