// SPDX-License-Identifier: BSD-3-Clause
// Backend helpers shared by both data paths.
#include "common/backend.hpp"

#include <cstdio>

namespace mpipcl {

void Backend::describe_queue(char* out, std::size_t n) const noexcept
{
    bool draining = false;
    const int head = ready_.debug_head(&draining);
    std::snprintf(out, n, "queue=%d%s", head, draining ? ",draining" : "");
}

}  // namespace mpipcl
