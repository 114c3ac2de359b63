// SPDX-License-Identifier: BSD-3-Clause
// The endpoint of a new transfer: the library's handle on the datatype, its density, the peer
// and communicator keys.
#include "common/datatype.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::progress {

MPI_Datatype own_type(MPI_Datatype type, bool* owned)
{
    return mpipcl::own_type(type, Engine::instance().private_comm(), owned);
}

Endpoint make_endpoint(const TransferArgs& args, std::uint64_t comm_key)
{
    Endpoint ep;
    ep.kind = args.kind;
    ep.buf = const_cast<void*>(args.buf);
    ep.partitions = args.partitions;
    ep.count = args.count;
    ep.peer = args.peer;
    ep.tag = args.tag;
    ep.comm = args.comm;
    ep.elem_bytes = args.type_size;
    ep.extent = args.extent;
    ep.datatype = args.datatype;
    ep.dense = dense_type(args.datatype);
    if (args.peer != MPI_PROC_NULL) {
        ep.comm_key = comm_key != 0 ? comm_key : progress::comm_key(args.comm);
        ep.peer_world = world_rank_of(args.comm, args.peer);
    }
    return ep;
}

}  // namespace mpipcl::progress
