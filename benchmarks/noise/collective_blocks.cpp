// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench --collective gather|allgather|alltoall|neighbor: the blocks and each mode's calls.
#include "collective_blocks.hpp"

#include <mpi.h>
#include <mpipcl.h>

#include "mpi_util.hpp"

namespace mpipcl::bench {

namespace {

/// The signatures allgather, alltoall and neighbor share (gather has a root besides).
using InitFn = int (*)(const void*, int, MPI_Count, MPI_Datatype, void*, int, MPI_Count,
                       MPI_Datatype, MPI_Comm, MPI_Info, MPI_Request*);
using WholeFn = int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm);
using StartFn = int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm,
                        MPI_Request*);

/// Each mode's call of a rootless block-wise collective.
struct Calls {
    InitFn init;
    WholeFn whole;
    StartFn start;
    const char* whole_name;
    const char* start_name;
};

Calls calls_of(CollectiveKind kind)
{
    switch (kind) {
        case CollectiveKind::allgather:
            return {MPIX_Pallgather_init, MPI_Allgather, MPI_Iallgather, "MPI_Allgather",
                    "MPI_Iallgather"};
        case CollectiveKind::alltoall:
            return {MPIX_Palltoall_init, MPI_Alltoall, MPI_Ialltoall, "MPI_Alltoall",
                    "MPI_Ialltoall"};
        default:
            return {MPIX_Pneighbor_alltoall_init, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall,
                    "MPI_Neighbor_alltoall", "MPI_Ineighbor_alltoall"};
    }
}

/// The neighbours of a cartesian communicator in MPI_Neighbor_alltoall's order: per dimension
/// the lower, then the upper one.
std::vector<int> cart_neighbours(MPI_Comm comm)
{
    int ndims = 0;
    check(MPI_Cartdim_get(comm, &ndims), "MPI_Cartdim_get");
    std::vector<int> neighbours(2 * static_cast<std::size_t>(ndims));
    for (int d = 0; d < ndims; ++d) {
        const auto k = 2 * static_cast<std::size_t>(d);
        check(MPI_Cart_shift(comm, d, 1, &neighbours[k], &neighbours[k + 1]), "MPI_Cart_shift");
    }
    return neighbours;
}

}  // namespace

bool is_blockwise(CollectiveKind kind)
{
    return kind == CollectiveKind::gather || kind == CollectiveKind::allgather ||
           kind == CollectiveKind::alltoall || kind == CollectiveKind::neighbor;
}

MPI_Comm collective_comm(CollectiveKind kind, MPI_Comm comm)
{
    if (kind != CollectiveKind::neighbor) {
        return comm;
    }
    int size = 0;
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int dims[2] = {0, 0};
    check(MPI_Dims_create(size, 2, dims), "MPI_Dims_create");
    const int ndims = dims[1] == 1 ? 1 : 2;
    int periods[2] = {1, 1};
    MPI_Comm grid = MPI_COMM_NULL;
    check(MPI_Cart_create(comm, ndims, dims, periods, 0, &grid), "MPI_Cart_create");
    check(MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    return grid;
}

BlockLayout block_layout(CollectiveKind kind, MPI_Comm comm, int root, bool list_order)
{
    int rank = 0;
    int size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    BlockLayout layout;
    if (!is_blockwise(kind)) {
        layout.sources = {{root, 0}};
        return layout;
    }
    std::vector<int> from(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
        from[static_cast<std::size_t>(r)] = r;
    }
    if (kind == CollectiveKind::neighbor) {
        from = cart_neighbours(comm);
    } else if (kind == CollectiveKind::gather && rank != root) {
        from.clear();
    }
    layout.recv_blocks = static_cast<int>(from.size());
    layout.send_blocks = kind == CollectiveKind::alltoall   ? size
                         : kind == CollectiveKind::neighbor ? layout.recv_blocks
                                                            : 1;
    for (std::size_t k = 0; k < from.size(); ++k) {
        // alltoall: rank r sends us its block rank; neighbor: what arrives from the lower
        // neighbour (block 2d) is the one it sends up (2d + 1), and the other way round.
        std::size_t block = kind == CollectiveKind::alltoall ? static_cast<std::size_t>(rank) : 0;
        if (kind == CollectiveKind::neighbor) {
            block = list_order && from[k] == from[k ^ 1u] ? k : k ^ 1u;
        }
        layout.sources.emplace_back(from[k], static_cast<int>(block));
    }
    return layout;
}

bool ineighbor_pairs_in_list_order(MPI_Comm grid)
{
    const std::size_t n = cart_neighbours(grid).size();
    std::vector<int> sent(n);
    std::vector<int> got(n, -1);
    for (std::size_t k = 0; k < n; ++k) {
        sent[k] = static_cast<int>(k);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ineighbor_alltoall(sent.data(), 1, MPI_INT, got.data(), 1, MPI_INT, grid, &request),
          "MPI_Ineighbor_alltoall");
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    int list_order = 0;
    for (std::size_t k = 0; k < n; ++k) {
        list_order |= got[k] == static_cast<int>(k) ? 1 : 0;  // MPI-4.1: k ^ 1
    }
    check(MPI_Allreduce(MPI_IN_PLACE, &list_order, 1, MPI_INT, MPI_LOR, grid), "MPI_Allreduce");
    return list_order != 0;
}

int block_init(const BlockBuffers& b, MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    const auto n = static_cast<MPI_Count>(b.per_part);
    if (b.kind == CollectiveKind::gather) {
        return MPIX_Pgather_init(b.send, b.partitions, n, MPI_DOUBLE, b.recv, b.partitions, n,
                                 MPI_DOUBLE, b.root, comm, info, request);
    }
    return calls_of(b.kind).init(b.send, b.partitions, n, MPI_DOUBLE, b.recv, b.partitions, n,
                                 MPI_DOUBLE, comm, info, request);
}

void block_whole(const BlockBuffers& b, MPI_Comm comm)
{
    const int n = static_cast<int>(b.per_part) * b.partitions;
    if (b.kind == CollectiveKind::gather) {
        check(MPI_Gather(b.send, n, MPI_DOUBLE, b.recv, n, MPI_DOUBLE, b.root, comm), "MPI_Gather");
        return;
    }
    const Calls calls = calls_of(b.kind);
    check(calls.whole(b.send, n, MPI_DOUBLE, b.recv, n, MPI_DOUBLE, comm), calls.whole_name);
}

void block_start_part(const BlockBuffers& b, int p, MPI_Datatype strided, MPI_Comm comm,
                      MPI_Request* request)
{
    const std::size_t first = static_cast<std::size_t>(p) * b.per_part;
    const double* send = b.send + first;
    double* recv = b.recv == nullptr ? nullptr : b.recv + first;
    if (b.kind == CollectiveKind::gather) {
        check(MPI_Igather(send, 1, strided, recv, 1, strided, b.root, comm, request),
              "MPI_Igather");
        return;
    }
    const Calls calls = calls_of(b.kind);
    check(calls.start(send, 1, strided, recv, 1, strided, comm, request), calls.start_name);
}

MPI_Datatype strided_type(int partitions, std::size_t per_part)
{
    MPI_Datatype part = MPI_DATATYPE_NULL;
    MPI_Datatype strided = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(static_cast<int>(per_part), MPI_DOUBLE, &part),
          "MPI_Type_contiguous");
    const auto extent =
        static_cast<MPI_Aint>(static_cast<std::size_t>(partitions) * per_part * sizeof(double));
    check(MPI_Type_create_resized(part, 0, extent, &strided), "MPI_Type_create_resized");
    check(MPI_Type_free(&part), "MPI_Type_free");
    check(MPI_Type_commit(&strided), "MPI_Type_commit");
    return strided;
}

}  // namespace mpipcl::bench
