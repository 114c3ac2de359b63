// SPDX-License-Identifier: BSD-3-Clause
// Pure mapping logic: how partitions are grouped into internal messages, and which messages a
// receive partition depends on (byte ranges, so uneven partition counts map correctly).
#pragma once

#include <cstdint>
#include <vector>

namespace mpipcl::persistent {

/// The agreed split of one partitioned transfer into internal messages. Both sides compute it
/// from the same inputs, so only the inputs travel in the handshake.
struct Layout {
    std::int64_t total_bytes = 0;
    /// M+1 byte offsets into the type-signature stream: message m is [begin[m], begin[m+1]).
    std::vector<std::int64_t> begin;
    /// M+1 send-partition boundaries: message m carries send partitions [part_begin[m], part_begin[m+1]).
    std::vector<int> part_begin;

    int messages() const { return static_cast<int>(begin.size()) - 1; }
    /// Index of the message that holds byte @p offset (0 <= offset < total_bytes).
    int message_of_byte(std::int64_t offset) const;
};

/// Builds the layout of @p send_partitions partitions of @p send_part_bytes bytes each into at
/// most @p max_messages messages whose boundaries are multiples of @p recv_elem_bytes (so the
/// receiver can take each message with its own datatype) and fall on send-partition boundaries
/// (so each message can leave as soon as its partitions are ready). The caller guarantees that
/// send_partitions * send_part_bytes is a multiple of recv_elem_bytes. A zero-byte transfer is
/// one zero-byte message.
Layout make_layout(int send_partitions, std::int64_t send_part_bytes,
                   std::int64_t recv_elem_bytes, int max_messages);

/// Automatic message count: one per send partition, but no message below @p min_bytes and at
/// most @p cap messages.
int auto_messages(int send_partitions, std::int64_t total_bytes, std::int64_t min_bytes, int cap);

/// The inclusive message range [first, last] that receive partition @p p of @p recv_part_bytes
/// bytes depends on. An empty partition depends on every message.
void recv_partition_messages(const Layout& layout, std::int64_t recv_part_bytes, int p,
                             int* first, int* last);

}  // namespace mpipcl::persistent
