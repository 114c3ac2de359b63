// SPDX-License-Identifier: BSD-3-Clause
// The trees the partitioned collectives move partitions along: which rank is this rank's
// parent and which are its children. Pure logic: no MPI calls.
#pragma once

#include <vector>

namespace mpipcl {

/// One rank's links in a tree over the ranks 0..size-1 of a communicator.
struct TreeLinks {
    int parent = -1;            ///< -1 at the root
    std::vector<int> children;  ///< in combining order (see node_tree)
};

/// The binomial tree rooted at @p root: over relative ranks vr = (rank - root) mod size, the
/// parent clears vr's lowest set bit; the children are vr + 2^i for every 2^i below that bit
/// (all of them, at the root).
TreeLinks binomial_tree(int rank, int root, int size);

/// How the ranks of one node hang from their leader in node_tree.
enum class Inside {
    Flat,      ///< all are children of the leader: one hop (bcast: the copies run in parallel)
    Binomial,  ///< a binomial tree rooted at the leader (reduction: the combining is spread)
};

/// The tree that follows the nodes: @p node_of[r] names the node of rank r (any value, equal
/// for ranks on one node). Ranks are taken in the order of relative ranks (root, root + 1,
/// ... mod size); the first one met on each node is its leader (the root, on its own node).
/// The leaders form a binomial tree over the nodes in the order they were met, and the other
/// ranks of a node hang from its leader as @p inside says. So a partition crosses each node
/// boundary once. A leader's children are those inside its node, then the leaders of its
/// child nodes, each in relative-rank order. With one rank per node, or with Inside::Binomial
/// on one node, this is binomial_tree.
TreeLinks node_tree(int rank, int root, const std::vector<int>& node_of, Inside inside);

/// The ranks of every node form one contiguous range (block placement). Then node_tree rooted
/// at rank 0 combines in rank order: own value, then each child's subtree in the order of
/// TreeLinks::children, covers ascending contiguous ranks, as a non-commutative reduction
/// needs (a leader is then its node's lowest rank, and its node's other ranks follow it).
bool nodes_contiguous(const std::vector<int>& node_of);

}  // namespace mpipcl
