// SPDX-License-Identifier: BSD-3-Clause
// Put units and notification flags of the RMA backend (byte ranges on both sides).
#include "rma/notify.hpp"

#include <algorithm>
#include <numeric>

namespace mpipcl::rma {

int NotifyMap::flag_of_byte(std::int64_t offset) const { return range_of_byte(flag_begin, offset); }

void NotifyMap::recv_partition_flags(std::int64_t recv_part_bytes, int p, int* first,
                                     int* last) const
{
    covering_ranges(flag_begin, recv_part_bytes, p, first, last);
}

NotifyMap make_notify_map(int send_partitions, std::int64_t send_part_bytes,
                          std::int64_t recv_elem_bytes, int recv_partitions,
                          std::int64_t recv_part_bytes, FlagMode mode, int messages)
{
    NotifyMap m;
    m.total_bytes = static_cast<std::int64_t>(send_partitions) * send_part_bytes;
    m.units = make_partition_map(send_partitions, send_part_bytes, recv_elem_bytes,
                                 messages > 0 ? messages : send_partitions);
    const int units = m.units.messages();
    if (m.total_bytes == 0) {
        // Nothing to Put: one flag announces the (empty) round.
        m.flag_begin = {0, 0};
        m.unit_flag_first.assign(units, 0);
        m.unit_flag_last.assign(units, 0);
        m.flag_units = {units};
        return m;
    }
    switch (mode) {
        case FlagMode::Partition:
            m.flag_begin.resize(recv_partitions + 1);
            for (int p = 0; p <= recv_partitions; ++p) {
                m.flag_begin[p] = static_cast<std::int64_t>(p) * recv_part_bytes;
            }
            break;
        case FlagMode::Message:
            m.flag_begin = m.units.begin;
            break;
        case FlagMode::Gcd:
        default: {
            // gcd(S, R) ranges of T/g bytes: each holds whole send and whole receive partitions.
            const int g = std::gcd(send_partitions, recv_partitions);
            const std::int64_t step = m.total_bytes / g;
            m.flag_begin.resize(g + 1);
            for (int j = 0; j <= g; ++j) {
                m.flag_begin[j] = j * step;
            }
            break;
        }
    }
    m.unit_flag_first.resize(units);
    m.unit_flag_last.resize(units);
    m.flag_units.assign(m.flags(), 0);
    // Unit starts and ends only grow with u: two sweeps instead of two searches per unit.
    RangeCursor first_flag(m.flag_begin);
    RangeCursor last_flag(m.flag_begin);
    for (int u = 0; u < units; ++u) {
        const int f0 = first_flag.at(m.units.begin[u]);
        const int f1 = last_flag.at(m.units.begin[u + 1] - 1);
        m.unit_flag_first[u] = f0;
        m.unit_flag_last[u] = f1;
        for (int f = f0; f <= f1; ++f) {
            ++m.flag_units[f];
        }
    }
    return m;
}

}  // namespace mpipcl::rma
