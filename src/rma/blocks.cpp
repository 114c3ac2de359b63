// SPDX-License-Identifier: BSD-3-Clause
// Byte-block lists and the type-map combinators used to flatten datatypes.
#include "rma/blocks.hpp"

#include <algorithm>

namespace mpipcl::rma {

bool BlockList::add(std::int64_t disp, std::int64_t len)
{
    if (overflow_) {
        return false;
    }
    if (len <= 0) {
        return true;
    }
    if (!blocks_.empty() && blocks_.back().disp + blocks_.back().len == disp) {
        blocks_.back().len += len;
    } else if (blocks_.size() == cap_) {
        overflow_ = true;
        return false;
    } else {
        blocks_.push_back({disp, len});
    }
    bytes_ += len;
    return true;
}

bool BlockList::append(const BlockList& child, std::int64_t offset)
{
    for (const Block& b : child.blocks()) {
        if (!add(b.disp + offset, b.len)) {
            return false;
        }
    }
    return !overflow_;
}

bool BlockList::append_run(const BlockList& child, std::int64_t child_extent, std::int64_t offset,
                           std::int64_t n)
{
    if (n <= 0 || child.blocks().empty()) {
        return !overflow_;
    }
    const auto& cb = child.blocks();
    if (cb.size() == 1 && cb[0].len == child_extent) {
        // A gap-free child: the run is one block, however long.
        return add(cb[0].disp + offset, n * child_extent);
    }
    for (std::int64_t i = 0; i < n; ++i) {
        if (!append(child, offset + i * child_extent)) {
            return false;
        }
    }
    return true;
}

bool append_subarray(BlockList& out, const BlockList& child, std::int64_t child_extent,
                     const std::vector<std::int64_t>& sizes,
                     const std::vector<std::int64_t>& subsizes,
                     const std::vector<std::int64_t>& starts, bool c_order)
{
    const std::size_t nd = sizes.size();
    if (nd == 0 || subsizes.size() != nd || starts.size() != nd) {
        return false;
    }
    // Work in C order: dimension nd-1 varies fastest.
    std::vector<std::int64_t> sz(sizes), sub(subsizes), st(starts);
    if (!c_order) {
        std::reverse(sz.begin(), sz.end());
        std::reverse(sub.begin(), sub.end());
        std::reverse(st.begin(), st.end());
    }
    for (std::size_t d = 0; d < nd; ++d) {
        if (sub[d] <= 0) {
            return !out.overflow();
        }
    }
    // stride[d]: elements between consecutive indices of dimension d.
    std::vector<std::int64_t> stride(nd, 1);
    for (std::size_t d = nd - 1; d > 0; --d) {
        stride[d - 1] = stride[d] * sz[d];
    }
    std::vector<std::int64_t> idx(nd, 0);  // odometer over the outer nd-1 dimensions
    for (;;) {
        std::int64_t first = 0;
        for (std::size_t d = 0; d < nd; ++d) {
            first += (st[d] + idx[d]) * stride[d];
        }
        if (!out.append_run(child, child_extent, first * child_extent, sub[nd - 1])) {
            return false;
        }
        std::size_t d = nd - 1;
        for (;;) {
            if (d == 0) {
                return true;
            }
            --d;
            if (++idx[d] < sub[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

Flat from_first_byte(const Flat& f)
{
    Flat out = f;
    for (Block& b : out.blocks) {
        b.disp -= f.true_lb;
    }
    out.lb = 0;
    out.true_lb = 0;
    return out;
}

}  // namespace mpipcl::rma
