// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/tree.hpp"

#include <cstddef>
#include <unordered_map>
#include <unordered_set>

namespace mpipcl {

namespace {
/// The binomial links of relative rank @p vr among @p size, as relative ranks.
TreeLinks binomial_relative(int vr, int size)
{
    TreeLinks t;
    t.parent = vr == 0 ? -1 : (vr & (vr - 1));
    for (int m = 1; m < size; m <<= 1) {
        if ((vr & m) != 0) {
            break;
        }
        if (vr + m < size) {
            t.children.push_back(vr + m);
        }
    }
    return t;
}
}  // namespace

TreeLinks binomial_tree(int rank, int root, int size)
{
    TreeLinks t = binomial_relative((rank - root + size) % size, size);
    if (t.parent >= 0) {
        t.parent = (t.parent + root) % size;
    }
    for (int& c : t.children) {
        c = (c + root) % size;
    }
    return t;
}

TreeLinks node_tree(int rank, int root, const std::vector<int>& node_of, Inside inside)
{
    const int size = static_cast<int>(node_of.size());
    const auto node = [&](int r) { return node_of[static_cast<std::size_t>(r)]; };
    // Ranks are visited in the order of relative ranks (root, root + 1, ...). The leaders:
    // the first rank met on each node. index: node -> its place in leaders. local: the ranks
    // of this rank's node in that order (its leader first).
    std::vector<int> leaders;
    std::unordered_map<int, int> index;
    std::vector<int> local;
    int li = 0;  // this rank's place in local
    for (int i = 0; i < size; ++i) {
        const int r = (root + i) % size;
        if (index.emplace(node(r), static_cast<int>(leaders.size())).second) {
            leaders.push_back(r);
        }
        if (node(r) == node(rank)) {
            li = r == rank ? static_cast<int>(local.size()) : li;
            local.push_back(r);
        }
    }
    const int n_local = static_cast<int>(local.size());
    const TreeLinks in =
        inside == Inside::Flat ? TreeLinks{li == 0 ? -1 : 0, {}} : binomial_relative(li, n_local);
    TreeLinks t;
    t.parent = in.parent < 0 ? -1 : local[static_cast<std::size_t>(in.parent)];
    if (inside == Inside::Flat && li == 0) {
        t.children.assign(local.begin() + 1, local.end());
    }
    for (const int c : in.children) {
        t.children.push_back(local[static_cast<std::size_t>(c)]);
    }
    if (li == 0) {
        const TreeLinks up = binomial_relative(index[node(rank)], static_cast<int>(leaders.size()));
        t.parent = up.parent < 0 ? -1 : leaders[static_cast<std::size_t>(up.parent)];
        for (const int c : up.children) {
            t.children.push_back(leaders[static_cast<std::size_t>(c)]);
        }
    }
    return t;
}

bool nodes_contiguous(const std::vector<int>& node_of)
{
    std::unordered_set<int> left;  // the nodes whose range ended
    for (std::size_t r = 1; r < node_of.size(); ++r) {
        if (node_of[r] != node_of[r - 1]) {
            left.insert(node_of[r - 1]);
            if (left.count(node_of[r]) != 0) {
                return false;
            }
        }
    }
    return true;
}

}  // namespace mpipcl
