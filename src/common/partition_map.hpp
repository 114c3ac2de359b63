// SPDX-License-Identifier: BSD-3-Clause
// The partition map shared by both backends: how send partitions are grouped into internal
// units (persistent messages, RMA put units), and which byte ranges a receive partition
// depends on (by bytes, so uneven partition counts map correctly).
#pragma once

#include <cstdint>
#include <vector>

#include "common/assert.hpp"

namespace mpipcl {

/// The agreed split of one partitioned transfer into internal units. Both sides compute it
/// from the same inputs, so only the inputs travel in the handshake.
struct PartitionMap {
    std::int64_t total_bytes = 0;
    /// M+1 byte offsets into the type-signature stream: unit m is [begin[m], begin[m+1]).
    std::vector<std::int64_t> begin;
    /// M+1 send-partition boundaries: unit m carries send partitions
    /// [part_begin[m], part_begin[m+1]).
    std::vector<int> part_begin;

    int messages() const { return static_cast<int>(begin.size()) - 1; }
    /// Index of the unit that holds byte @p offset (0 <= offset < total_bytes).
    int message_of_byte(std::int64_t offset) const;
};

/// Builds the map of @p send_partitions partitions of @p send_part_bytes bytes each into at
/// most @p max_messages units whose boundaries are multiples of @p recv_elem_bytes (so the
/// receiver can take each unit with its own datatype) and fall on send-partition boundaries
/// (so each unit can leave as soon as its partitions are ready). The caller guarantees that
/// send_partitions * send_part_bytes is a multiple of recv_elem_bytes. A zero-byte transfer is
/// one zero-byte unit.
PartitionMap make_partition_map(int send_partitions, std::int64_t send_part_bytes,
                                std::int64_t recv_elem_bytes, int max_messages);

/// Index i of the range [bounds[i], bounds[i+1]) that holds @p offset (bounds sorted, size >= 2).
int range_of_byte(const std::vector<std::int64_t>& bounds, std::int64_t offset);

/// The inclusive range [first, last] of the ranges in @p bounds (F+1 byte offsets) that receive
/// partition @p p of @p recv_part_bytes bytes overlaps: bytes [p*Rb, (p+1)*Rb). An empty
/// partition (or transfer) depends on every range. The one byte-range rule behind
/// MPI_Parrived, for persistent messages and RMA flags alike.
void covering_ranges(const std::vector<std::int64_t>& bounds, std::int64_t recv_part_bytes, int p,
                     int* first, int* last);

/// range_of_byte() for offsets that never decrease (a sweep): amortised O(1) per lookup,
/// where a binary search per partition mispredicts its branches and dominates a request's
/// set-up with thousands of partitions (mpipcl-gbench InitFree/<backend>/partitions:4096).
/// @p bounds must outlive the cursor.
class RangeCursor {
   public:
    explicit RangeCursor(const std::vector<std::int64_t>& bounds)
        : bounds_(bounds), ranges_(static_cast<int>(bounds.size()) - 1)
    {
    }
    /// As range_of_byte(bounds, offset); @p offset not below the previous call's.
    int at(std::int64_t offset) noexcept
    {
        MPIPCL_ASSERT(offset >= bounds_[r_], "the offsets of a sweep never decrease");
        while (r_ + 1 < ranges_ && bounds_[r_ + 1] <= offset) {
            ++r_;
        }
        return r_;
    }

   private:
    const std::vector<std::int64_t>& bounds_;
    int ranges_;
    int r_ = 0;
};

/// covering_ranges() for receive partitions 0 .. @p partitions - 1 at once, into @p first
/// and @p last (resized): one sweep, O(partitions + ranges).
void all_covering_ranges(const std::vector<std::int64_t>& bounds, std::int64_t recv_part_bytes,
                         int partitions, std::vector<int>* first, std::vector<int>* last);

}  // namespace mpipcl
