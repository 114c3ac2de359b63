// SPDX-License-Identifier: BSD-3-Clause
// RMA backend: a flattened datatype addressed from its first touched byte (from_first_byte).
#include <gtest/gtest.h>

#include "rma/blocks.hpp"

using mpipcl::Block;
using mpipcl::Flat;

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
    mpipcl::BlockList one_int(1);
    one_int.add(0, 4);
    mpipcl::BlockList out(16);
    ASSERT_TRUE(mpipcl::append_subarray(out, one_int, 4, {8, 8}, {4, 4}, {2, 2}, true));
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
