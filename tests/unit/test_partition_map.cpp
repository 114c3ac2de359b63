// SPDX-License-Identifier: BSD-3-Clause
// The partition map (units on send-partition boundaries) and the byte-range mapping behind
// MPI_Parrived, shared by both backends.
#include <gtest/gtest.h>

#include <numeric>

#include "common/partition_map.hpp"
#include "persistent/backend.hpp"

using mpipcl::covering_ranges;
using mpipcl::PartitionMap;
using mpipcl::persistent::auto_messages;
using Layout = mpipcl::PartitionMap;

namespace {
Layout make_layout(int s, std::int64_t sb, std::int64_t relem, int m)
{
    return mpipcl::make_partition_map(s, sb, relem, m);
}
void recv_partition_messages(const Layout& l, std::int64_t rb, int p, int* first, int* last)
{
    covering_ranges(l.begin, rb, p, first, last);
}
}  // namespace

namespace {

/// Every invariant a layout must satisfy, for any input.
void check_invariants(const Layout& l, int s, std::int64_t sb, std::int64_t relem, int max_m)
{
    ASSERT_GE(l.messages(), 1);
    EXPECT_LE(l.messages(), std::max(1, max_m));
    EXPECT_EQ(l.begin.front(), 0);
    EXPECT_EQ(l.begin.back(), s * sb);
    EXPECT_EQ(l.part_begin.front(), 0);
    EXPECT_EQ(l.part_begin.back(), s);
    for (int m = 0; m < l.messages(); ++m) {
        if (l.total_bytes > 0) {
            EXPECT_LT(l.begin[m], l.begin[m + 1]) << "empty message " << m;
            EXPECT_LT(l.part_begin[m], l.part_begin[m + 1]);
        }
        EXPECT_EQ(l.begin[m], l.part_begin[m] * sb) << "boundary not on a send partition";
        if (relem > 0) {
            EXPECT_EQ(l.begin[m] % relem, 0) << "boundary splits a receive element";
        }
    }
}

}  // namespace

TEST(PartitionMap, OneMessagePerPartitionWhenAllowed)
{
    Layout l = make_layout(16, 4096, 4, 16);
    check_invariants(l, 16, 4096, 4, 16);
    EXPECT_EQ(l.messages(), 16);
    for (int m = 0; m < 16; ++m) {
        EXPECT_EQ(l.part_begin[m], m);
    }
}

TEST(PartitionMap, AggregatesToRequestedCount)
{
    Layout l = make_layout(4096, 8, 8, 8);
    check_invariants(l, 4096, 8, 8, 8);
    EXPECT_EQ(l.messages(), 8);
    EXPECT_EQ(l.part_begin[1], 512);
}

TEST(PartitionMap, UnevenCountsStillCoverEverything)
{
    for (int s : {1, 7, 16, 17, 33, 512, 4096}) {
        for (int m : {1, 3, 5, 16, 33, 10000}) {
            Layout l = make_layout(s, 12, 4, m);
            check_invariants(l, s, 12, 4, m);
        }
    }
}

TEST(PartitionMap, BoundariesRespectTheReceiversElementSize)
{
    // 6 send partitions of 4 bytes (ints) into 12-byte receive elements: only every third
    // partition boundary is usable.
    Layout l = make_layout(6, 4, 12, 6);
    check_invariants(l, 6, 4, 12, 6);
    EXPECT_EQ(l.messages(), 2);
}

TEST(PartitionMap, ZeroBytesIsOneEmptyMessage)
{
    Layout l = make_layout(16, 0, 4, 16);
    EXPECT_EQ(l.messages(), 1);
    EXPECT_EQ(l.total_bytes, 0);
    int first = -1;
    int last = -1;
    recv_partition_messages(l, 0, 3, &first, &last);
    EXPECT_EQ(first, 0);
    EXPECT_EQ(last, 0);
}

TEST(PartitionMap, MessageOfByte)
{
    Layout l = make_layout(4, 10, 1, 4);
    EXPECT_EQ(l.message_of_byte(0), 0);
    EXPECT_EQ(l.message_of_byte(9), 0);
    EXPECT_EQ(l.message_of_byte(10), 1);
    EXPECT_EQ(l.message_of_byte(39), 3);
}

// Receive partition p depends exactly on the messages overlapping its byte range.
TEST(PartitionMap, RecvPartitionMappingIsByByteRange)
{
    struct Case {
        int s, r;
    };
    for (Case c : {Case{1, 16}, Case{16, 1}, Case{16, 32}, Case{32, 16}, Case{33, 17}, Case{17, 33},
                   Case{4096, 512}, Case{512, 4096}}) {
        const std::int64_t total = static_cast<std::int64_t>(c.s) * c.r * 8;  // divisible by both
        const std::int64_t sb = total / c.s;
        const std::int64_t rb = total / c.r;
        Layout l = make_layout(c.s, sb, 1, c.s);
        for (int p = 0; p < c.r; ++p) {
            int first = -1;
            int last = -1;
            recv_partition_messages(l, rb, p, &first, &last);
            const std::int64_t lo = p * rb;
            const std::int64_t hi = lo + rb;
            for (int m = 0; m < l.messages(); ++m) {
                const bool overlaps = l.begin[m] < hi && l.begin[m + 1] > lo;
                EXPECT_EQ(overlaps, m >= first && m <= last)
                    << c.s << "/" << c.r << " partition " << p << " message " << m;
            }
        }
    }
}

// The one-sweep forms give what the per-lookup searches give, for every partition and byte.
TEST(PartitionMap, SweepsAgreeWithSearches)
{
    struct Case {
        int s, r, m;
    };
    for (Case c : {Case{1, 16, 1}, Case{16, 1, 16}, Case{16, 32, 5}, Case{33, 17, 33},
                   Case{17, 33, 4}, Case{4096, 512, 4096}, Case{512, 4096, 3}, Case{7, 7, 1}}) {
        const std::int64_t total = static_cast<std::int64_t>(c.s) * c.r * 8;
        const std::int64_t rb = total / c.r;
        Layout l = make_layout(c.s, total / c.s, 1, c.m);
        std::vector<int> first;
        std::vector<int> last;
        mpipcl::all_covering_ranges(l.begin, rb, c.r, &first, &last);
        ASSERT_EQ(first.size(), static_cast<std::size_t>(c.r));
        ASSERT_EQ(last.size(), static_cast<std::size_t>(c.r));
        for (int p = 0; p < c.r; ++p) {
            int f = -1;
            int g = -1;
            covering_ranges(l.begin, rb, p, &f, &g);
            EXPECT_EQ(first[p], f) << c.s << "/" << c.r << " partition " << p;
            EXPECT_EQ(last[p], g) << c.s << "/" << c.r << " partition " << p;
        }
        mpipcl::RangeCursor cursor(l.begin);
        for (std::int64_t b = 0; b < total; b += 3) {
            ASSERT_EQ(cursor.at(b), mpipcl::range_of_byte(l.begin, b)) << "byte " << b;
        }
    }
    // Zero-byte partitions (and transfers) depend on every range, as covering_ranges says.
    Layout empty = make_layout(4, 0, 1, 4);
    std::vector<int> first;
    std::vector<int> last;
    mpipcl::all_covering_ranges(empty.begin, 0, 3, &first, &last);
    for (int p = 0; p < 3; ++p) {
        int f = -1;
        int g = -1;
        covering_ranges(empty.begin, 0, p, &f, &g);
        EXPECT_EQ(first[p], f);
        EXPECT_EQ(last[p], g);
    }
}

TEST(PartitionMap, AutoMessages)
{
    EXPECT_EQ(auto_messages(16, 64 * 1024, 4096, 1024), 16);
    EXPECT_EQ(auto_messages(4096, 32 * 1024, 4096, 1024), 8);
    EXPECT_EQ(auto_messages(16, 0, 4096, 1024), 1);
    EXPECT_EQ(auto_messages(100000, 1 << 30, 4096, 1024), 1024);
}
