// SPDX-License-Identifier: BSD-3-Clause
// The endpoint of a new transfer: the library's handle on the datatype, its density, the peer
// and communicator keys.
#include "common/error.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::progress {

MPI_Datatype own_type(MPI_Datatype type, bool* owned)
{
    int ni = 0;
    int na = 0;
    int nd = 0;
    int combiner = MPI_COMBINER_NAMED;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        throw Error(ErrId::BadType, "invalid datatype");
    }
    *owned = combiner != MPI_COMBINER_NAMED;
    if (!*owned) {
        return type;
    }
    // MPI has no "is committed" query; a persistent send of one element to MPI_PROC_NULL on
    // the private communicator (MPI_ERRORS_RETURN) refuses an uncommitted type on Open MPI and
    // MPICH alike (Open MPI's MPI_Pack_size would crash instead). Init paths only.
    // (A non-null buffer: both MPIs refuse NULL with count 1 even though nothing is read.)
    static char dummy[1];
    MPI_Request probe = MPI_REQUEST_NULL;
    if (PMPI_Send_init(dummy, 1, type, MPI_PROC_NULL, 0, Engine::instance().private_comm(),
                       &probe) != MPI_SUCCESS) {
        throw Error(ErrId::BadType, "the datatype is not committed");
    }
    PMPI_Request_free(&probe);
    MPI_Datatype dup = MPI_DATATYPE_NULL;
    MPIPCL_CHECK_MPI(PMPI_Type_dup(type, &dup));
    return dup;
}

namespace {
/// Whether @p type is dense (Endpoint::dense): lower bound 0, extent == size, and a named type
/// or a chain of duplicates and contiguous runs of one, so its bytes lie in type-signature
/// order. Any other constructor answers false (only the packed layout needs a dense type).
bool dense_type(MPI_Datatype type)
{
    MPI_Count size = 0;
    MPI_Count lb = 0;
    MPI_Count extent = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS || lb != 0 || extent != size) {
        return false;
    }
    MPI_Datatype t = type;
    bool dense = false;
    for (;;) {
        int ni = 0;
        int na = 0;
        int nd = 0;
        int combiner = MPI_COMBINER_NAMED;
        if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
            break;
        }
        if (combiner == MPI_COMBINER_NAMED) {
            dense = true;
            break;
        }
        int ints[1] = {0};
        MPI_Aint addrs[1] = {0};
        MPI_Datatype inner = MPI_DATATYPE_NULL;
        const bool chain = (combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_CONTIGUOUS) &&
                           ni <= 1 && na == 0 && nd == 1;
        if (!chain || PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, &inner) != MPI_SUCCESS) {
            break;
        }
        if (t != type) {
            PMPI_Type_free(&t);  // a handle get_contents returned (never a named type)
        }
        t = inner;
    }
    int ni = 0;
    int na = 0;
    int nd = 0;
    int combiner = MPI_COMBINER_NAMED;
    if (t != type && PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
        combiner != MPI_COMBINER_NAMED) {
        PMPI_Type_free(&t);
    }
    return dense;
}
}  // namespace

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
