// SPDX-License-Identifier: BSD-3-Clause
// RMA backend: the byte-block combinators behind datatype flattening.
#include <gtest/gtest.h>

#include "rma/blocks.hpp"

using mpipcl::rma::Block;
using mpipcl::rma::BlockList;
using mpipcl::rma::Flat;

namespace {
BlockList basic(std::int64_t size)
{
    BlockList b(16);
    b.add(0, size);
    return b;
}
}  // namespace

TEST(RmaBlocks, AdjacentBlocksMergeAndEmptyOnesVanish)
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

TEST(RmaBlocks, TypeMapOrderIsKeptNotSorted)
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

TEST(RmaBlocks, VectorOfAGappedChild)
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

TEST(RmaBlocks, GapFreeRunsStayOneBlockHoweverLong)
{
    BlockList out(1);
    ASSERT_TRUE(out.append_run(basic(8), 8, 0, 1000000));
    ASSERT_EQ(out.blocks().size(), 1u);
    EXPECT_EQ(out.blocks()[0], (Block{0, 8000000}));
}

TEST(RmaBlocks, OverflowStopsAtTheCap)
{
    BlockList child(2);
    child.add(0, 1);
    BlockList out(3);
    EXPECT_FALSE(out.append_run(child, 2, 0, 4));  // 4 separate blocks > cap 3
    EXPECT_TRUE(out.overflow());
    EXPECT_FALSE(out.add(100, 1));
}

TEST(RmaBlocks, SubarrayCOrder)
{
    // 4x5 array of 4-byte ints, the 2x3 box at (1, 2): rows 1 and 2, columns 2..4.
    BlockList out(16);
    ASSERT_TRUE(mpipcl::rma::append_subarray(out, basic(4), 4, {4, 5}, {2, 3}, {1, 2}, true));
    const std::vector<Block> want = {{(1 * 5 + 2) * 4, 12}, {(2 * 5 + 2) * 4, 12}};
    EXPECT_EQ(out.blocks(), want);
}

TEST(RmaBlocks, SubarrayFortranOrder)
{
    // Fortran order: dimension 0 varies fastest. sizes {4, 5}, box {2, 3} at {1, 2}.
    BlockList out(16);
    ASSERT_TRUE(mpipcl::rma::append_subarray(out, basic(4), 4, {4, 5}, {2, 3}, {1, 2}, false));
    // Column j (2..4) holds elements j*4 + 1 .. j*4 + 2.
    const std::vector<Block> want = {
        {(2 * 4 + 1) * 4, 8}, {(3 * 4 + 1) * 4, 8}, {(4 * 4 + 1) * 4, 8}};
    EXPECT_EQ(out.blocks(), want);
}

TEST(RmaBlocks, SubarrayThreeDimensionsAndEmptyBox)
{
    BlockList out(64);
    ASSERT_TRUE(
        mpipcl::rma::append_subarray(out, basic(1), 1, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, true));
    EXPECT_EQ(out.blocks().size(), 4u);
    EXPECT_EQ(out.bytes(), 8);
    EXPECT_EQ(out.blocks()[0], (Block{13, 2}));
    BlockList none(4);
    EXPECT_TRUE(mpipcl::rma::append_subarray(none, basic(1), 1, {3, 3}, {0, 3}, {0, 0}, true));
    EXPECT_TRUE(none.blocks().empty());
}

TEST(RmaBlocks, FlatContiguity)
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

namespace {
/// Every block of @p f lies in [0, f.true_extent).
bool inside_true_extent(const Flat& f)
{
    for (const Block& b : f.blocks) {
        if (b.disp < 0 || b.disp + b.len > f.true_extent) {
            return false;
        }
    }
    return true;
}
}  // namespace

TEST(RmaBlocks, FromFirstByteAddressesASubarrayBoxAtItsFirstInt)
{
    // 8x8 ints, a 4x4 box at (2,2): lb 0, extent 256, true_lb 72, true_extent 112.
    BlockList out(16);
    ASSERT_TRUE(mpipcl::rma::append_subarray(out, basic(4), 4, {8, 8}, {4, 4}, {2, 2}, true));
    Flat f;
    f.blocks = out.blocks();
    f.size = out.bytes();
    f.lb = 0;
    f.extent = 256;
    f.true_lb = 72;
    f.true_extent = 112;
    ASSERT_EQ(f.blocks.front(), (Block{72, 16}));
    EXPECT_FALSE(inside_true_extent(f));  // addressed from lb, the range starts 72 B early

    const Flat g = mpipcl::rma::from_first_byte(f);
    ASSERT_EQ(g.blocks.size(), 4u);
    EXPECT_EQ(g.blocks[0], (Block{0, 16}));
    EXPECT_EQ(g.blocks[3], (Block{96, 16}));
    EXPECT_EQ(g.lb, 0);
    EXPECT_EQ(g.true_lb, 0);
    EXPECT_EQ(g.extent, 256);
    EXPECT_EQ(g.true_extent, 112);
    EXPECT_EQ(g.size, 64);
    EXPECT_TRUE(inside_true_extent(g));
    // Element i touches the same bytes: A + true_lb + i*extent + g's blocks == A + i*extent + f's.
    for (std::size_t b = 0; b < f.blocks.size(); ++b) {
        EXPECT_EQ(f.true_lb + g.blocks[b].disp, f.blocks[b].disp);
        EXPECT_EQ(g.blocks[b].len, f.blocks[b].len);
    }
}

TEST(RmaBlocks, FromFirstByteKeepsTypeMapOrderAndIgnoresTheResizedLb)
{
    // A struct whose type map runs backwards, resized to lb -8: blocks {40,8}, {24,4}.
    Flat f;
    f.blocks = {{40, 8}, {24, 4}};
    f.size = 12;
    f.lb = -8;
    f.extent = 64;
    f.true_lb = 24;
    f.true_extent = 24;
    const Flat g = mpipcl::rma::from_first_byte(f);
    ASSERT_EQ(g.blocks.size(), 2u);
    EXPECT_EQ(g.blocks[0], (Block{16, 8}));
    EXPECT_EQ(g.blocks[1], (Block{0, 4}));
    EXPECT_EQ(g.lb, 0);
    EXPECT_EQ(g.extent, 64);
    EXPECT_TRUE(inside_true_extent(g));
    EXPECT_FALSE(g.contiguous());
}

TEST(RmaBlocks, FromFirstByteOfAnAlreadyAlignedTypeChangesNothingButLb)
{
    Flat f;
    f.blocks = {{0, 4}, {8, 4}};
    f.size = 8;
    f.extent = 12;
    f.true_extent = 12;
    const Flat g = mpipcl::rma::from_first_byte(f);
    EXPECT_EQ(g.blocks, f.blocks);
    EXPECT_EQ(g.extent, f.extent);
}
