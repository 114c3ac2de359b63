// SPDX-License-Identifier: BSD-3-Clause
// The process's data message counts.
#include "common/traffic.hpp"

namespace mpipcl {

namespace {
DataTraffic g_traffic;  // constant-initialized: no guard on the send path
}  // namespace

void DataTraffic::init(int size)
{
    const auto n = static_cast<std::size_t>(size);
    sent_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    received_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    for (std::size_t r = 0; r < n; ++r) {
        sent_[r].store(0, std::memory_order_relaxed);
        received_[r].store(0, std::memory_order_relaxed);
    }
    size_ = size;
}

DataTraffic& data_traffic() noexcept { return g_traffic; }

}  // namespace mpipcl
