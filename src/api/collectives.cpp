// SPDX-License-Identifier: BSD-3-Clause
// The partitioned collectives' init calls (MPIX_P*_init): argument checks, then the request.
#include <mpi.h>

#include "api/checks.hpp"
#include "collectives/ops.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "mpipcl.h"
#include "requests/request.hpp"

using mpipcl::api_guard;
using mpipcl::ApiCall;
using mpipcl::ErrId;
using mpipcl::Error;
using mpipcl::collectives::CollArgs;
using mpipcl::collectives::CollKind;
using mpipcl::collectives::Side;
using mpipcl::requests::Request;

namespace {

int rank_of(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

/// What every collective init checks first: the library is up, @p request is not NULL,
/// @p comm is an intracommunicator. Returns its size. Throws Error.
int check_common(MPI_Comm comm, const MPI_Request* request)
{
    if (!mpipcl::api::library_initialized()) {
        throw Error(ErrId::NotInitialized, "MPI_Init did not go through libmpipcl");
    }
    if (request == nullptr) {
        throw Error(ErrId::NullArg, "request is NULL");
    }
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
        throw Error(ErrId::BadComm, "not an intracommunicator");
    }
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return size;
}

/// One side's buffer: partitions > 0, count >= 0, a valid datatype; returns its sizes and
/// *bytes its total. Throws Error.
Side check_side(int partitions, MPI_Count count, MPI_Datatype datatype, MPI_Count* bytes)
{
    if (partitions <= 0) {
        throw Error(ErrId::BadPartitions, "partitions <= 0");
    }
    if (count < 0) {
        throw Error(ErrId::BadCount, "count < 0");
    }
    mpipcl::progress::TransferArgs sizes;
    *bytes = mpipcl::api::check_buffer(partitions, count, datatype, &sizes);
    Side s;
    s.partitions = partitions;
    s.count = count;
    s.datatype = datatype;
    s.type_size = sizes.type_size;
    s.extent = sizes.extent;
    return s;
}

/// The options of @p info with the backend settled for @p bytes ("native" means persistent
/// here: no MPI has partitioned collectives). Throws Error.
mpipcl::RequestOptions collective_options(MPI_Info info, MPI_Count bytes)
{
    mpipcl::RequestOptions opts = mpipcl::request_options(info);
    if (mpipcl::requests::settle_backend(&opts, bytes) == mpipcl::BackendKind::Native) {
        opts.backend = mpipcl::BackendKind::Persistent;
    }
    return opts;
}

/// The checks of a bcast / reduce / allreduce init (@p a holds kind, buffers, op, root); fills
/// the sizes and options into @p a. Throws Error.
void check_tree(int partitions, MPI_Count count, MPI_Datatype datatype, MPI_Comm comm,
                MPI_Info info, const MPI_Request* request, CollArgs* a)
{
    const int size = check_common(comm, request);
    MPI_Count bytes = 0;
    a->send = check_side(partitions, count, datatype, &bytes);
    if (a->kind != CollKind::Allreduce && (a->root < 0 || a->root >= size)) {
        throw Error(ErrId::BadRoot, "root out of range");
    }
    if (a->kind != CollKind::Bcast && a->op == MPI_OP_NULL) {
        throw Error(ErrId::BadOp, "MPI_OP_NULL");
    }
    if (a->kind == CollKind::Reduce && a->sendbuf == MPI_IN_PLACE && a->root != rank_of(comm)) {
        throw Error(ErrId::InPlace, "MPI_IN_PLACE is the root's only");
    }
    if (a->kind != CollKind::Bcast) {
        if (const int rc = mpipcl::collectives::check_op(a->op, datatype); rc != MPI_SUCCESS) {
            throw Error(ErrId::BadOp, "the op is not defined on this datatype");
        }
    }
    a->comm = comm;
    a->options = collective_options(info, bytes);
}

int tree_init(CollArgs a, int partitions, MPI_Count count, MPI_Datatype datatype, MPI_Comm comm,
              MPI_Info info, MPI_Request* request, const char* fn)
{
    return api_guard(fn, [&](ApiCall& call) -> int {
        call.on(comm);
        check_tree(partitions, count, datatype, comm, info, request, &a);
        MPI_Request handle = MPI_REQUEST_NULL;
        Request::create_collective(a, &handle);
        *request = handle;
        return MPI_SUCCESS;
    });
}

/// The arguments of MPIX_Preduce_init / MPIX_Pallreduce_init that differ from a bcast's.
CollArgs reduction(CollKind kind, const void* sendbuf, void* recvbuf, MPI_Op op, int root)
{
    CollArgs a;
    a.kind = kind;
    a.sendbuf = sendbuf;
    a.recvbuf = recvbuf;
    a.op = op;
    a.root = root;
    return a;
}

/// The arguments of a block-wise collective's init, as given.
struct BlockCall {
    CollKind kind;
    const void* sendbuf;
    int send_partitions;
    MPI_Count send_count;
    MPI_Datatype sendtype;
    void* recvbuf;
    int recv_partitions;
    MPI_Count recv_count;
    MPI_Datatype recvtype;
    int root;
};

/// The checks of a block-wise collective's init; the arguments it is made from. Throws Error.
CollArgs check_block(const BlockCall& c, MPI_Comm comm, MPI_Info info, const MPI_Request* request)
{
    const int size = check_common(comm, request);
    const bool gather = c.kind == CollKind::Gather;
    if (gather && (c.root < 0 || c.root >= size)) {
        throw Error(ErrId::BadRoot, "root out of range");
    }
    const bool root = !gather || c.root == rank_of(comm);
    const bool in_place = c.sendbuf == MPI_IN_PLACE;
    if (in_place && !(c.kind == CollKind::Allgather || (gather && root))) {
        throw Error(ErrId::InPlace, "MPI_IN_PLACE is not allowed here");
    }
    int topo = MPI_UNDEFINED;
    if (c.kind == CollKind::Neighbor &&
        (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS ||
         (topo != MPI_CART && topo != MPI_GRAPH && topo != MPI_DIST_GRAPH))) {
        throw Error(ErrId::BadTopology, "no cartesian or graph topology");
    }
    CollArgs a;
    a.kind = c.kind;
    a.sendbuf = c.sendbuf;
    a.recvbuf = c.recvbuf;
    a.root = c.root;
    a.comm = comm;
    MPI_Count send_bytes = 0;
    MPI_Count recv_bytes = 0;
    if (!in_place) {
        a.send = check_side(c.send_partitions, c.send_count, c.sendtype, &send_bytes);
    }
    if (root) {  // a gather's receive side is the root's only
        a.recv = check_side(c.recv_partitions, c.recv_count, c.recvtype, &recv_bytes);
    }
    a.options = collective_options(info, in_place ? recv_bytes : send_bytes);
    return a;
}

int block_init(const BlockCall& c, MPI_Comm comm, MPI_Info info, MPI_Request* request,
               const char* fn)
{
    return api_guard(fn, [&](ApiCall& call) -> int {
        call.on(comm);
        const CollArgs a = check_block(c, comm, info, request);
        MPI_Request handle = MPI_REQUEST_NULL;
        Request::create_collective(a, &handle);
        *request = handle;
        return MPI_SUCCESS;
    });
}

}  // namespace

extern "C" {

MPIPCL_API int MPIX_Pbcast_init(void* buffer, int partitions, MPI_Count count,
                                MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                                MPI_Request* request)
{
    CollArgs a;
    a.kind = CollKind::Bcast;
    a.recvbuf = buffer;
    a.root = root;
    return tree_init(a, partitions, count, datatype, comm, info, request, "MPIX_Pbcast_init");
}

MPIPCL_API int MPIX_Preduce_init(const void* sendbuf, void* recvbuf, int partitions,
                                 MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                                 MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return tree_init(reduction(CollKind::Reduce, sendbuf, recvbuf, op, root), partitions, count,
                     datatype, comm, info, request, "MPIX_Preduce_init");
}

MPIPCL_API int MPIX_Pallreduce_init(const void* sendbuf, void* recvbuf, int partitions,
                                    MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return tree_init(reduction(CollKind::Allreduce, sendbuf, recvbuf, op, 0), partitions, count,
                     datatype, comm, info, request, "MPIX_Pallreduce_init");
}

MPIPCL_API int MPIX_Pgather_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                 MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                 MPI_Count recv_count, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return block_init({CollKind::Gather, sendbuf, send_partitions, send_count, sendtype, recvbuf,
                       recv_partitions, recv_count, recvtype, root},
                      comm, info, request, "MPIX_Pgather_init");
}

MPIPCL_API int MPIX_Pallgather_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                    MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                    MPI_Count recv_count, MPI_Datatype recvtype, MPI_Comm comm,
                                    MPI_Info info, MPI_Request* request)
{
    return block_init({CollKind::Allgather, sendbuf, send_partitions, send_count, sendtype, recvbuf,
                       recv_partitions, recv_count, recvtype, 0},
                      comm, info, request, "MPIX_Pallgather_init");
}

MPIPCL_API int MPIX_Palltoall_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                   MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                   MPI_Count recv_count, MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request* request)
{
    return block_init({CollKind::Alltoall, sendbuf, send_partitions, send_count, sendtype, recvbuf,
                       recv_partitions, recv_count, recvtype, 0},
                      comm, info, request, "MPIX_Palltoall_init");
}

MPIPCL_API int MPIX_Pneighbor_alltoall_init(const void* sendbuf, int send_partitions,
                                            MPI_Count send_count, MPI_Datatype sendtype,
                                            void* recvbuf, int recv_partitions,
                                            MPI_Count recv_count, MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return block_init({CollKind::Neighbor, sendbuf, send_partitions, send_count, sendtype, recvbuf,
                       recv_partitions, recv_count, recvtype, 0},
                      comm, info, request, "MPIX_Pneighbor_alltoall_init");
}

}  // extern "C"
