// SPDX-License-Identifier: BSD-3-Clause
// Partition map and the byte-range mapping used by MPI_Parrived.
#include "common/partition_map.hpp"

#include <algorithm>
#include <numeric>

#include "common/assert.hpp"

namespace mpipcl {

int range_of_byte(const std::vector<std::int64_t>& bounds, std::int64_t offset)
{
    MPIPCL_ASSERT(bounds.size() >= 2, "a map has at least one range");
    // First boundary strictly greater than offset, minus one.
    auto it = std::upper_bound(bounds.begin(), bounds.end() - 1, offset);
    return static_cast<int>(it - bounds.begin()) - 1;
}

int PartitionMap::message_of_byte(std::int64_t offset) const
{
    return range_of_byte(begin, offset);
}

PartitionMap make_partition_map(int send_partitions, std::int64_t send_part_bytes,
                                std::int64_t recv_elem_bytes, int max_messages)
{
    PartitionMap l;
    l.total_bytes = static_cast<std::int64_t>(send_partitions) * send_part_bytes;
    if (l.total_bytes == 0) {
        l.begin = {0, 0};
        l.part_begin = {0, send_partitions};
        return l;
    }
    // A boundary after k partitions is usable when k*send_part_bytes is a multiple of the
    // receiver's element size: exactly when k is a multiple of g.
    std::int64_t g = 1;
    if (recv_elem_bytes > 0) {
        g = recv_elem_bytes / std::gcd(send_part_bytes, recv_elem_bytes);
    }
    MPIPCL_ASSERT(
        send_partitions % g == 0,
        "the caller guarantees a total that is a multiple of the receiver's element size");
    const std::int64_t units = send_partitions / g;
    const std::int64_t m = std::max<std::int64_t>(1, std::min<std::int64_t>(max_messages, units));
    l.begin.resize(m + 1);
    l.part_begin.resize(m + 1);
    for (std::int64_t j = 0; j <= m; ++j) {
        const std::int64_t unit = j * units / m;
        l.part_begin[j] = static_cast<int>(unit * g);
        l.begin[j] = unit * g * send_part_bytes;
    }
    return l;
}

void covering_ranges(const std::vector<std::int64_t>& bounds, std::int64_t recv_part_bytes, int p,
                     int* first, int* last)
{
    const int ranges = static_cast<int>(bounds.size()) - 1;
    if (recv_part_bytes == 0 || bounds.back() == 0) {
        *first = 0;
        *last = ranges - 1;
        return;
    }
    const std::int64_t lo = static_cast<std::int64_t>(p) * recv_part_bytes;
    *first = range_of_byte(bounds, lo);
    *last = range_of_byte(bounds, lo + recv_part_bytes - 1);
}

void all_covering_ranges(const std::vector<std::int64_t>& bounds, std::int64_t recv_part_bytes,
                         int partitions, std::vector<int>* first, std::vector<int>* last)
{
    first->resize(partitions);
    last->resize(partitions);
    if (recv_part_bytes == 0 || bounds.back() == 0) {
        std::fill(first->begin(), first->end(), 0);
        std::fill(last->begin(), last->end(), static_cast<int>(bounds.size()) - 2);
        return;
    }
    RangeCursor lo(bounds);
    RangeCursor hi(bounds);
    for (int p = 0; p < partitions; ++p) {
        const std::int64_t b0 = static_cast<std::int64_t>(p) * recv_part_bytes;
        (*first)[p] = lo.at(b0);
        (*last)[p] = hi.at(b0 + recv_part_bytes - 1);
    }
}

}  // namespace mpipcl
