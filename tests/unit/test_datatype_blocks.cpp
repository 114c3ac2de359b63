// SPDX-License-Identifier: BSD-3-Clause
// Datatype inspection: the byte-block combinators behind datatype flattening.
#include <gtest/gtest.h>

#include "common/datatype.hpp"

using mpipcl::Block;
using mpipcl::BlockList;
using mpipcl::Flat;

namespace {
BlockList basic(std::int64_t size)
{
    BlockList b(16);
    b.add(0, size);
    return b;
}
}  // namespace

TEST(DatatypeBlocks, AdjacentBlocksMergeAndEmptyOnesVanish)
{
    BlockList b(8);
    EXPECT_TRUE(b.add(0, 4));
    EXPECT_TRUE(b.add(4, 4));
    EXPECT_TRUE(b.add(12, 0));
    EXPECT_TRUE(b.add(16, 4));
    ASSERT_EQ(b.blocks().size(), 2u);
    EXPECT_EQ(b.blocks()[0], (Block{0, 8}));
    EXPECT_EQ(b.blocks()[1], (Block{16, 4}));
    EXPECT_EQ(b.bytes(), 12);
}

TEST(DatatypeBlocks, TypeMapOrderIsKeptNotSorted)
{
    // MPI_Type_indexed(3, {1,3,2}, {5,0,9}, MPI_INT): blocks stay in definition order.
    BlockList out(16);
    BlockList i4 = basic(4);
    const int lens[3] = {1, 3, 2};
    const int displs[3] = {5, 0, 9};
    for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(out.append_run(i4, 4, displs[k] * 4, lens[k]));
    }
    ASSERT_EQ(out.blocks().size(), 3u);
    EXPECT_EQ(out.blocks()[0], (Block{20, 4}));
    EXPECT_EQ(out.blocks()[1], (Block{0, 12}));
    EXPECT_EQ(out.blocks()[2], (Block{36, 8}));
}

TEST(DatatypeBlocks, VectorOfAGappedChild)
{
    // vector(2, 2, 3) of a child with one 4-byte block and extent 12 (resized int).
    BlockList child(4);
    child.add(0, 4);
    BlockList out(16);
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(out.append_run(child, 12, i * 3 * 12, 2));
    }
    const std::vector<Block> want = {{0, 4}, {12, 4}, {36, 4}, {48, 4}};
    EXPECT_EQ(out.blocks(), want);
}

TEST(DatatypeBlocks, GapFreeRunsStayOneBlockHoweverLong)
{
    BlockList out(1);
    ASSERT_TRUE(out.append_run(basic(8), 8, 0, 1000000));
    ASSERT_EQ(out.blocks().size(), 1u);
    EXPECT_EQ(out.blocks()[0], (Block{0, 8000000}));
}

TEST(DatatypeBlocks, OverflowStopsAtTheCap)
{
    BlockList child(2);
    child.add(0, 1);
    BlockList out(3);
    EXPECT_FALSE(out.append_run(child, 2, 0, 4));  // 4 separate blocks > cap 3
    EXPECT_TRUE(out.overflow());
    EXPECT_FALSE(out.add(100, 1));
}

TEST(DatatypeBlocks, SubarrayCOrder)
{
    // 4x5 array of 4-byte ints, the 2x3 box at (1, 2): rows 1 and 2, columns 2..4.
    BlockList out(16);
    ASSERT_TRUE(mpipcl::append_subarray(out, basic(4), 4, {4, 5}, {2, 3}, {1, 2}, true));
    const std::vector<Block> want = {{(1 * 5 + 2) * 4, 12}, {(2 * 5 + 2) * 4, 12}};
    EXPECT_EQ(out.blocks(), want);
}

TEST(DatatypeBlocks, SubarrayFortranOrder)
{
    // Fortran order: dimension 0 varies fastest. sizes {4, 5}, box {2, 3} at {1, 2}.
    BlockList out(16);
    ASSERT_TRUE(mpipcl::append_subarray(out, basic(4), 4, {4, 5}, {2, 3}, {1, 2}, false));
    // Column j (2..4) holds elements j*4 + 1 .. j*4 + 2.
    const std::vector<Block> want = {
        {(2 * 4 + 1) * 4, 8}, {(3 * 4 + 1) * 4, 8}, {(4 * 4 + 1) * 4, 8}};
    EXPECT_EQ(out.blocks(), want);
}

TEST(DatatypeBlocks, SubarrayThreeDimensionsAndEmptyBox)
{
    BlockList out(64);
    ASSERT_TRUE(mpipcl::append_subarray(out, basic(1), 1, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, true));
    EXPECT_EQ(out.blocks().size(), 4u);
    EXPECT_EQ(out.bytes(), 8);
    EXPECT_EQ(out.blocks()[0], (Block{13, 2}));
    BlockList none(4);
    EXPECT_TRUE(mpipcl::append_subarray(none, basic(1), 1, {3, 3}, {0, 3}, {0, 0}, true));
    EXPECT_TRUE(none.blocks().empty());
}

TEST(DatatypeBlocks, FlatContiguity)
{
    Flat f;
    f.size = 12;
    f.extent = 12;
    f.blocks = {{0, 12}};
    EXPECT_TRUE(f.contiguous());
    f.extent = 16;  // e.g. MPI_DOUBLE_INT: trailing padding
    EXPECT_FALSE(f.contiguous());
    Flat empty;
    EXPECT_TRUE(empty.contiguous());
}
