// SPDX-License-Identifier: BSD-3-Clause
// RMA backend: put units, notification flags and the flags a receive partition waits for.
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "rma/notify.hpp"

using mpipcl::rma::FlagMode;
using mpipcl::rma::make_notify_map;
using mpipcl::rma::NotifyMap;

namespace {

/// Invariants of any map: flags tile the stream, the per-unit flag ranges are exactly the
/// overlapping flags, and the per-flag countdowns count the overlapping units.
void check_invariants(const NotifyMap& m, std::int64_t total)
{
    ASSERT_GE(m.flags(), 1);
    EXPECT_EQ(m.flag_begin.front(), 0);
    EXPECT_EQ(m.flag_begin.back(), total);
    ASSERT_EQ(static_cast<int>(m.unit_flag_first.size()), m.unit_count());
    std::vector<int> overlaps(m.flags(), 0);
    for (int u = 0; u < m.unit_count(); ++u) {
        const std::int64_t lo = m.units.begin[u];
        const std::int64_t hi = m.units.begin[u + 1];
        for (int f = 0; f < m.flags(); ++f) {
            const bool overlap = total == 0 || (lo < m.flag_begin[f + 1] && m.flag_begin[f] < hi);
            const bool listed = f >= m.unit_flag_first[u] && f <= m.unit_flag_last[u];
            EXPECT_EQ(overlap, listed) << "unit " << u << " flag " << f;
            overlaps[f] += overlap;
        }
    }
    for (int f = 0; f < m.flags(); ++f) {
        EXPECT_EQ(m.flag_units[f], overlaps[f]) << "flag " << f;
        EXPECT_GE(m.flag_units[f], 1) << "flag " << f << " would never be set";
        if (total > 0) {
            EXPECT_LT(m.flag_begin[f], m.flag_begin[f + 1]) << "empty flag " << f;
        }
    }
}

/// Receive partition p's flags cover exactly its byte range (no flag outside it is missing,
/// and flags that do not touch it are not waited for).
void check_recv_mapping(const NotifyMap& m, int r, std::int64_t rb)
{
    for (int p = 0; p < r; ++p) {
        int first = -1;
        int last = -1;
        m.recv_partition_flags(rb, p, &first, &last);
        ASSERT_LE(0, first);
        ASSERT_LE(first, last);
        ASSERT_LT(last, m.flags());
        if (rb == 0) {
            continue;
        }
        const std::int64_t lo = p * rb;
        const std::int64_t hi = lo + rb;
        EXPECT_LE(m.flag_begin[first], lo);
        EXPECT_GT(m.flag_begin[first + 1], lo);
        EXPECT_LT(m.flag_begin[last], hi);
        EXPECT_GE(m.flag_begin[last + 1], hi);
    }
}

}  // namespace

TEST(RmaNotify, GcdFlagsAlignWithBothPartitionings)
{
    // 16 x 64 B sent, 32 x 32 B received: gcd 16 flags of 64 B.
    NotifyMap m = make_notify_map(16, 64, 1, 32, 32, FlagMode::Gcd, 0);
    EXPECT_EQ(m.unit_count(), 16);
    ASSERT_EQ(m.flags(), 16);
    for (int f = 0; f <= 16; ++f) {
        EXPECT_EQ(m.flag_begin[f], f * 64);
    }
    check_invariants(m, 1024);
    check_recv_mapping(m, 32, 32);
    int first = 0;
    int last = 0;
    m.recv_partition_flags(32, 5, &first, &last);  // bytes 160..191 -> flag 2
    EXPECT_EQ(first, 2);
    EXPECT_EQ(last, 2);
}

TEST(RmaNotify, CoprimeCountsGiveOneGcdFlag)
{
    NotifyMap m = make_notify_map(33, 17 * 4, 4, 17, 33 * 4, FlagMode::Gcd, 0);
    EXPECT_EQ(m.flags(), 1);
    EXPECT_EQ(m.flag_units[0], m.unit_count());
    check_invariants(m, 33 * 17 * 4);
    check_recv_mapping(m, 17, 33 * 4);
}

TEST(RmaNotify, PartitionModeGivesOneFlagPerReceivePartition)
{
    NotifyMap m = make_notify_map(33, 17 * 4, 4, 17, 33 * 4, FlagMode::Partition, 0);
    ASSERT_EQ(m.flags(), 17);
    check_invariants(m, 33 * 17 * 4);
    check_recv_mapping(m, 17, 33 * 4);
    // Receive partition 1 (bytes 132..263) needs send partitions 1..3 (68 B each): units 1..3.
    EXPECT_EQ(m.flag_units[1], 3);
    int first = 0;
    int last = 0;
    m.recv_partition_flags(33 * 4, 1, &first, &last);
    EXPECT_EQ(first, 1);
    EXPECT_EQ(last, 1);
}

TEST(RmaNotify, MessageModeFollowsTheUnits)
{
    // mpipcl_messages = 4 over 16 send partitions: 4 units of 4 partitions, a flag each.
    NotifyMap m = make_notify_map(16, 100, 4, 8, 200, FlagMode::Message, 4);
    EXPECT_EQ(m.unit_count(), 4);
    ASSERT_EQ(m.flags(), 4);
    EXPECT_EQ(m.flag_begin, m.units.begin);
    for (int u = 0; u < 4; ++u) {
        EXPECT_EQ(m.unit_flag_first[u], u);
        EXPECT_EQ(m.unit_flag_last[u], u);
        EXPECT_EQ(m.flag_units[u], 1);
    }
    check_recv_mapping(m, 8, 200);
}

TEST(RmaNotify, UnitsRespectTheReceiverElementSize)
{
    // Send partitions of 4 B, receive elements of 24 B: a unit holds 6 send partitions.
    NotifyMap m = make_notify_map(48, 4, 24, 4, 48, FlagMode::Partition, 0);
    EXPECT_EQ(m.unit_count(), 8);
    for (int u = 0; u <= m.unit_count(); ++u) {
        EXPECT_EQ(m.units.begin[u] % 24, 0);
    }
    check_invariants(m, 192);
    check_recv_mapping(m, 4, 48);
}

TEST(RmaNotify, ZeroBytesIsOneFlagForEverything)
{
    for (FlagMode mode : {FlagMode::Gcd, FlagMode::Partition, FlagMode::Message}) {
        NotifyMap m = make_notify_map(7, 0, 4, 3, 0, mode, 0);
        ASSERT_EQ(m.flags(), 1);
        EXPECT_EQ(m.unit_count(), 1);
        EXPECT_EQ(m.flag_units[0], 1);
        check_recv_mapping(m, 3, 0);
    }
}

TEST(RmaNotify, SweepInvariants)
{
    const std::tuple<int, int, std::int64_t> cases[] = {
        {1, 16, 4096},       {16, 1, 4096},  {16, 32, 8192}, {32, 16, 8192}, {4096, 512, 131072},
        {512, 4096, 131072}, {33, 17, 6732}, {17, 33, 6732}, {7, 7, 28000},  {6, 4, 96}};
    for (const auto& [s, r, total] : cases) {
        for (FlagMode mode : {FlagMode::Gcd, FlagMode::Partition, FlagMode::Message}) {
            for (int messages : {0, 1, 3}) {
                SCOPED_TRACE(::testing::Message() << s << "/" << r << " mode "
                                                  << static_cast<int>(mode) << " m " << messages);
                NotifyMap m = make_notify_map(s, total / s, 4, r, total / r, mode, messages);
                check_invariants(m, total);
                check_recv_mapping(m, r, total / r);
                if (mode == FlagMode::Gcd) {
                    EXPECT_EQ(m.flags(), std::gcd(s, r));
                } else if (mode == FlagMode::Partition) {
                    EXPECT_EQ(m.flags(), r);
                }
            }
        }
    }
}
