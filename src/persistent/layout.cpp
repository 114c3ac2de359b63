// SPDX-License-Identifier: BSD-3-Clause
// Message layout and the byte-range mapping used by MPI_Parrived.
#include "persistent/layout.hpp"

#include <algorithm>
#include <numeric>

namespace mpipcl::persistent {

int Layout::message_of_byte(std::int64_t offset) const
{
    // First boundary strictly greater than offset, minus one.
    auto it = std::upper_bound(begin.begin(), begin.end() - 1, offset);
    return static_cast<int>(it - begin.begin()) - 1;
}

Layout make_layout(int send_partitions, std::int64_t send_part_bytes,
                   std::int64_t recv_elem_bytes, int max_messages)
{
    Layout l;
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
    const std::int64_t units = send_partitions / g;  // exact by the caller's guarantee
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

int auto_messages(int send_partitions, std::int64_t total_bytes, std::int64_t min_bytes, int cap)
{
    std::int64_t by_size = min_bytes > 0 ? total_bytes / min_bytes : send_partitions;
    std::int64_t m = std::min<std::int64_t>({send_partitions, by_size, cap});
    return static_cast<int>(std::max<std::int64_t>(1, m));
}

void recv_partition_messages(const Layout& layout, std::int64_t recv_part_bytes, int p,
                             int* first, int* last)
{
    if (recv_part_bytes == 0 || layout.total_bytes == 0) {
        *first = 0;
        *last = layout.messages() - 1;
        return;
    }
    const std::int64_t lo = static_cast<std::int64_t>(p) * recv_part_bytes;
    const std::int64_t hi = lo + recv_part_bytes - 1;
    *first = layout.message_of_byte(lo);
    *last = layout.message_of_byte(hi);
}

}  // namespace mpipcl::persistent
