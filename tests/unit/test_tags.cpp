// SPDX-License-Identifier: BSD-3-Clause
// Data-tag range allocation on the private communicator.
#include <gtest/gtest.h>

#include "progress/tags.hpp"

using mpipcl::progress::TagAllocator;

TEST(Tags, RangesDoNotOverlap)
{
    TagAllocator t;
    t.reset(1, 100);
    const int a = t.allocate(10);
    const int b = t.allocate(10);
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 11);
}

TEST(Tags, WrapsAroundAndSkipsLiveRanges)
{
    TagAllocator t;
    t.reset(1, 30);
    const int a = t.allocate(10);  // 1..10
    const int b = t.allocate(10);  // 11..20
    const int c = t.allocate(10);  // 21..30
    EXPECT_EQ(c, 21);
    EXPECT_EQ(t.allocate(1), -1);  // full
    t.release(b);
    EXPECT_EQ(t.allocate(5), 11);  // reuses the freed hole after wrapping
    EXPECT_EQ(t.allocate(5), 16);
    EXPECT_EQ(t.allocate(1), -1);
    t.release(a);
    t.release(c);
    EXPECT_EQ(t.allocate(20), -1);  // no 20 consecutive free tags: 1..10 and 21..30
    EXPECT_EQ(t.allocate(10), 21);
}

TEST(Tags, RejectsImpossibleSizes)
{
    TagAllocator t;
    t.reset(1, 10);
    EXPECT_EQ(t.allocate(0), -1);
    EXPECT_EQ(t.allocate(11), -1);
    EXPECT_EQ(t.allocate(10), 1);
}
