// SPDX-License-Identifier: BSD-3-Clause
// The finalize drain of data messages.
#include "progress/data_drain.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/log.hpp"
#include "common/traffic.hpp"
#include "progress/protocol.hpp"

namespace mpipcl::progress {

namespace {
/// Data messages that private rank r sent here and that did not arrive, summed over r.
std::uint64_t missing(const DataTraffic& traffic, const std::vector<std::uint64_t>& expected)
{
    std::uint64_t n = 0;
    for (int r = 0; r < traffic.size(); ++r) {
        const std::uint64_t got = traffic.received_from(r);
        n += expected[r] > got ? expected[r] - got : 0;
    }
    return n;
}

/// Receives and drops the message @p st describes. False if MPI failed.
bool take(MPI_Comm comm, const MPI_Status& st, std::vector<unsigned char>* buf)
{
    int bytes = 0;
    if (PMPI_Get_count(&st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes < 0) {
        return false;
    }
    buf->resize(static_cast<std::size_t>(bytes) + 1);
    if (PMPI_Recv(buf->data(), bytes, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, comm,
                  MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return false;
    }
    MPIPCL_LOG(Debug, "finalize: dropped a message of %d bytes from rank %d, tag %d", bytes,
               st.MPI_SOURCE, st.MPI_TAG);
    return true;
}
}  // namespace

void drain_data_messages(MPI_Comm comm)
{
    DataTraffic& traffic = data_traffic();
    const int n = traffic.size();
    std::vector<std::uint64_t> sent(n);
    std::vector<std::uint64_t> expected(n, 0);
    for (int r = 0; r < n; ++r) {
        sent[r] = traffic.sent_to(r);
    }
    if (PMPI_Alltoall(sent.data(), 1, MPI_UINT64_T, expected.data(), 1, MPI_UINT64_T, comm) !=
        MPI_SUCCESS) {
        MPIPCL_LOG(Warn, "finalize: cannot count the pending data messages");
        return;
    }
    using Clock = std::chrono::steady_clock;
    Backoff backoff(kFinalizeDrainYieldUs, kFinalizeDrainMaxSleepUs);
    std::vector<unsigned char> buf;
    Clock::time_point last = Clock::now();
    while (const std::uint64_t left = missing(traffic, expected)) {
        int flag = 0;
        MPI_Status st;
        if (PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st) != MPI_SUCCESS) {
            MPIPCL_LOG(Warn, "finalize: cannot probe for %llu pending data messages",
                       static_cast<unsigned long long>(left));
            return;
        }
        if (flag) {
            if (!take(comm, st, &buf)) {
                MPIPCL_LOG(Warn, "finalize: cannot receive a pending data message");
                return;
            }
            if (st.MPI_TAG != kCtrlTag) {  // the control drain took every control message
                traffic.received(st.MPI_SOURCE);
            }
            backoff.reset();
            last = Clock::now();
        } else if (Clock::now() - last > std::chrono::milliseconds(kFinalizeDataDrainGiveUpMs)) {
            MPIPCL_LOG(Warn, "finalize: %llu data messages sent here never arrived; giving up",
                       static_cast<unsigned long long>(left));
            return;
        } else {
            backoff.pause();
        }
    }
}

}  // namespace mpipcl::progress
