// SPDX-License-Identifier: BSD-3-Clause
// The collectives' trees: binomial and along the nodes; spanning, node crossings, rank order.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "collectives/tree.hpp"

using mpipcl::binomial_tree;
using mpipcl::Inside;
using mpipcl::node_tree;
using mpipcl::nodes_contiguous;
using mpipcl::TreeLinks;

namespace {

using TreeFn = std::function<TreeLinks(int rank)>;

std::vector<TreeLinks> all_links(int size, const TreeFn& fn)
{
    std::vector<TreeLinks> t;
    for (int r = 0; r < size; ++r) {
        t.push_back(fn(r));
    }
    return t;
}

/// Every rank but the root has a parent that lists it once as a child; every rank reaches
/// the root; the root has none.
void expect_spanning(const std::vector<TreeLinks>& t, int root)
{
    const int size = static_cast<int>(t.size());
    std::vector<int> as_child(t.size(), 0);
    for (int r = 0; r < size; ++r) {
        for (const int c : t[r].children) {
            ASSERT_GE(c, 0);
            ASSERT_LT(c, size);
            EXPECT_EQ(t[c].parent, r) << "child " << c << " of " << r;
            ++as_child[c];
        }
    }
    for (int r = 0; r < size; ++r) {
        EXPECT_EQ(as_child[r], r == root ? 0 : 1) << "rank " << r;
        int hops = 0;
        for (int v = r; v != root && hops <= size; v = t[v].parent) {
            ASSERT_GE(t[v].parent, 0) << "rank " << v << " has no parent";
            ++hops;
        }
        EXPECT_LE(hops, size) << "rank " << r << " does not reach the root";
    }
    EXPECT_EQ(t[root].parent, -1);
}

/// own, then each child's subtree in the order of children: the order a reduction combines.
void combine_order(const std::vector<TreeLinks>& t, int r, std::vector<int>* out)
{
    out->push_back(r);
    for (const int c : t[r].children) {
        combine_order(t, c, out);
    }
}

int crossings(const std::vector<TreeLinks>& t, const std::vector<int>& nodes)
{
    int n = 0;
    for (std::size_t r = 0; r < t.size(); ++r) {
        n += t[r].parent >= 0 && nodes[r] != nodes[t[r].parent] ? 1 : 0;
    }
    return n;
}

const std::vector<std::vector<int>> kLayouts = {
    {0},
    {0, 0, 0, 0},
    {0, 1, 2, 3, 4},
    {0, 0, 2, 2},                 // blocks of 2
    {0, 1, 0, 1},                 // round robin
    {0, 0, 0, 3, 3, 3, 3, 3},     // 3 + 5
    {5, 5, 7, 7, 7, 9, 1, 1, 1},  // node ids need not be ranks
    {0, 1, 2, 0, 1, 2, 0},        // round robin, uneven
};

int distinct(const std::vector<int>& nodes)
{
    std::vector<int> seen;
    for (const int n : nodes) {
        bool found = false;
        for (const int s : seen) {
            found = found || s == n;
        }
        if (!found) {
            seen.push_back(n);
        }
    }
    return static_cast<int>(seen.size());
}

}  // namespace

TEST(Tree, BinomialOfFourFromZero)
{
    const auto t = all_links(4, [](int r) { return binomial_tree(r, 0, 4); });
    EXPECT_EQ(t[0].children, (std::vector<int>{1, 2}));
    EXPECT_EQ(t[2].children, (std::vector<int>{3}));
    EXPECT_EQ(t[3].parent, 2);
}

TEST(Tree, BinomialSpansFromEveryRoot)
{
    for (int size = 1; size <= 13; ++size) {
        for (int root = 0; root < size; ++root) {
            expect_spanning(all_links(size, [&](int r) { return binomial_tree(r, root, size); }),
                            root);
        }
    }
}

TEST(Tree, NodeTreeSpansAndCrossesEachBoundaryOnce)
{
    for (const auto& nodes : kLayouts) {
        const int size = static_cast<int>(nodes.size());
        for (int root = 0; root < size; ++root) {
            for (const Inside in : {Inside::Flat, Inside::Binomial}) {
                const auto t =
                    all_links(size, [&](int r) { return node_tree(r, root, nodes, in); });
                expect_spanning(t, root);
                EXPECT_EQ(crossings(t, nodes), distinct(nodes) - 1) << "root " << root;
            }
        }
    }
}

TEST(Tree, OneNodeIsFlat)
{
    const std::vector<int> nodes(5, 0);
    const auto t = all_links(5, [&](int r) { return node_tree(r, 2, nodes, Inside::Flat); });
    EXPECT_EQ(t[2].children, (std::vector<int>{3, 4, 0, 1}));  // relative-rank order
    for (const int r : {0, 1, 3, 4}) {
        EXPECT_EQ(t[r].parent, 2);
        EXPECT_TRUE(t[r].children.empty());
    }
}

TEST(Tree, OneRankPerNodeOrBinomialInsideOneNodeIsBinomial)
{
    const std::vector<int> apart = {0, 1, 2, 3, 4, 5, 6};
    const std::vector<int> together(7, 4);
    for (int root = 0; root < 7; ++root) {
        for (int r = 0; r < 7; ++r) {
            const TreeLinks b = binomial_tree(r, root, 7);
            for (const TreeLinks& a : {node_tree(r, root, apart, Inside::Flat),
                                       node_tree(r, root, together, Inside::Binomial)}) {
                EXPECT_EQ(a.parent, b.parent) << r << " from " << root;
                EXPECT_EQ(a.children, b.children) << r << " from " << root;
            }
        }
    }
}

TEST(Tree, RoundRobinCrossesOnce)
{
    // Ranks 0, 2 on one node, 1, 3 on the other: the binomial tree crosses twice, this once.
    const std::vector<int> nodes = {0, 1, 0, 1};
    const auto t = all_links(4, [&](int r) { return node_tree(r, 0, nodes, Inside::Flat); });
    EXPECT_EQ(t[0].children, (std::vector<int>{2, 1}));
    EXPECT_EQ(t[3].parent, 1);
    EXPECT_EQ(crossings(all_links(4, [](int r) { return binomial_tree(r, 0, 4); }), nodes), 2);
}

TEST(Tree, ContiguousNodesCombineInRankOrder)
{
    for (const auto& nodes : kLayouts) {
        const int size = static_cast<int>(nodes.size());
        if (!nodes_contiguous(nodes)) {
            continue;
        }
        std::vector<int> want;
        for (int r = 0; r < size; ++r) {
            want.push_back(r);
        }
        for (const Inside in : {Inside::Flat, Inside::Binomial}) {
            const auto t = all_links(size, [&](int r) { return node_tree(r, 0, nodes, in); });
            std::vector<int> order;
            combine_order(t, 0, &order);
            EXPECT_EQ(order, want);
        }
    }
    for (int size = 1; size <= 13; ++size) {
        const auto t = all_links(size, [&](int r) { return binomial_tree(r, 0, size); });
        std::vector<int> order;
        combine_order(t, 0, &order);
        for (int r = 0; r < size; ++r) {
            EXPECT_EQ(order[r], r) << "binomial over " << size;
        }
    }
}

TEST(Tree, NodesContiguous)
{
    EXPECT_TRUE(nodes_contiguous({}));
    EXPECT_TRUE(nodes_contiguous({3}));
    EXPECT_TRUE(nodes_contiguous({0, 0, 2, 2}));
    EXPECT_TRUE(nodes_contiguous({5, 5, 7, 7, 7, 9, 1, 1, 1}));
    EXPECT_FALSE(nodes_contiguous({0, 1, 0, 1}));
    EXPECT_FALSE(nodes_contiguous({0, 0, 1, 1, 0}));
    EXPECT_FALSE(nodes_contiguous({0, 1, 2, 0, 1, 2, 0}));
}
