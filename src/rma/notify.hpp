// SPDX-License-Identifier: BSD-3-Clause
// Pure mapping logic of the RMA backend: the put units (byte ranges Put together), the
// notification flags (byte ranges announced together) and which flags a receive partition
// waits for. Both sides compute the same map from the same inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "common/partition_map.hpp"

namespace mpipcl::rma {

/// How the byte stream is divided into notification flags.
enum class FlagMode : std::uint8_t {
    Gcd = 1,        ///< gcd(send partitions, receive partitions) equal ranges (default)
    Partition = 2,  ///< one flag per receive partition (finest useful MPI_Parrived)
    Message = 3,    ///< one flag per put unit ("internal message", as the persistent backend)
};

/// The agreed division of one transfer into put units and notification flags.
struct NotifyMap {
    std::int64_t total_bytes = 0;
    /// Put units: unit u is bytes [units.begin[u], units.begin[u+1]) and carries send
    /// partitions [units.part_begin[u], units.part_begin[u+1]).
    PartitionMap units;
    /// F+1 byte offsets: flag f announces bytes [flag_begin[f], flag_begin[f+1]).
    std::vector<std::int64_t> flag_begin;
    /// Sender: the flags unit u contributes to are [unit_flag_first[u], unit_flag_last[u]].
    std::vector<int> unit_flag_first;
    std::vector<int> unit_flag_last;
    /// Sender: the number of units flag f waits for (its per-round countdown).
    std::vector<int> flag_units;

    int flags() const { return static_cast<int>(flag_begin.size()) - 1; }
    int unit_count() const { return units.messages(); }
    /// Index of the flag that announces byte @p offset (0 <= offset < total_bytes).
    int flag_of_byte(std::int64_t offset) const;
    /// Receiver: the inclusive flag range [first, last] that receive partition @p p of
    /// @p recv_part_bytes bytes waits for. A zero-byte transfer has one flag, waited for by all.
    void recv_partition_flags(std::int64_t recv_part_bytes, int p, int* first, int* last) const;
};

/// Builds the map. Put units: at most @p messages units (0 = one per send partition where
/// legal), on send-partition boundaries that are multiples of @p recv_elem_bytes (see
/// make_partition_map). Flags: @p mode. The caller guarantees equal totals:
/// send_partitions * send_part_bytes == recv_partitions * recv_part_bytes.
NotifyMap make_notify_map(int send_partitions, std::int64_t send_part_bytes,
                          std::int64_t recv_elem_bytes, int recv_partitions,
                          std::int64_t recv_part_bytes, FlagMode mode, int messages);

}  // namespace mpipcl::rma
