// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend's view of a flattened datatype: blocks addressed from the first touched byte.
#include "rma/blocks.hpp"

namespace mpipcl::rma {

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
