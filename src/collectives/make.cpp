// SPDX-License-Identifier: BSD-3-Clause
// The factory of the partitioned collectives: the schedule for each kind.
#include "collectives/block_collective.hpp"
#include "collectives/collective.hpp"
#include "collectives/tree_collective.hpp"

namespace mpipcl::collectives {

std::shared_ptr<Collective> make_collective(const CollArgs& a)
{
    switch (a.kind) {
        case CollKind::Bcast:
        case CollKind::Reduce:
        case CollKind::Allreduce:
            return std::make_shared<TreeCollective>(a);
        default:
            return std::make_shared<BlockCollective>(a);
    }
}

}  // namespace mpipcl::collectives
