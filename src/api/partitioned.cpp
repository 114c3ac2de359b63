// SPDX-License-Identifier: BSD-3-Clause
// The six MPI-4.0 partitioned calls: argument checks, registry lookup, error translation.
#include <mpi.h>

#include <limits>
#include <vector>

#include "common/config.hpp"
#include "common/error.hpp"
#include "mpipcl.h"
#include "progress/engine.hpp"
#include "requests/registry.hpp"
#include "requests/request.hpp"

using mpipcl::api_guard;
using mpipcl::ErrId;
using mpipcl::Error;
using mpipcl::error_code;
using mpipcl::Kind;
using mpipcl::raise_error;
using mpipcl::requests::HandleRegistry;
using mpipcl::requests::InitArgs;
using mpipcl::requests::Request;

namespace {

int tag_upper_bound(MPI_Comm comm)
{
    int* ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
    return flag ? *ub : 32767;
}

bool library_initialized() { return mpipcl::progress::Engine::instance().initialized(); }

int partitioned_init(Kind kind, const void* buf, int partitions, MPI_Count count,
                     MPI_Datatype datatype, int peer, int tag, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request, const char* fn)
{
    const MPI_Comm err_comm = comm == MPI_COMM_NULL ? mpipcl::default_error_comm() : comm;
    return api_guard(err_comm, fn, [&]() -> int {
        if (!library_initialized()) {
            throw Error(ErrId::NotInitialized, "MPI_Init did not go through libmpipcl");
        }
        if (request == nullptr) {
            throw Error(ErrId::NullArg, "request is NULL");
        }
        if (comm == MPI_COMM_NULL) {
            throw Error(ErrId::BadComm, "MPI_COMM_NULL");
        }
        if (partitions <= 0) {
            throw Error(ErrId::BadPartitions, "partitions <= 0");
        }
        if (count < 0) {
            throw Error(ErrId::BadCount, "count < 0");
        }
        int size = 0;
        if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) {
            throw Error(ErrId::BadComm, "invalid communicator");
        }
        if (kind == Kind::Recv && peer == MPI_ANY_SOURCE) {
            throw Error(ErrId::BadRank, "MPI_ANY_SOURCE in MPI_Precv_init");
        }
        if (peer != MPI_PROC_NULL && (peer < 0 || peer >= size)) {
            throw Error(ErrId::BadRank, "peer rank out of range");
        }
        if (kind == Kind::Recv && tag == MPI_ANY_TAG) {
            throw Error(ErrId::BadTag, "MPI_ANY_TAG in MPI_Precv_init");
        }
        if (tag < 0 || tag > tag_upper_bound(comm)) {
            throw Error(ErrId::BadTag, "tag out of range");
        }
        if (datatype == MPI_DATATYPE_NULL) {
            throw Error(ErrId::BadType, "MPI_DATATYPE_NULL");
        }
        MPI_Count type_size = 0;
        MPI_Count lb = 0;
        MPI_Count extent = 0;
        if (PMPI_Type_size_x(datatype, &type_size) != MPI_SUCCESS ||
            PMPI_Type_get_extent_x(datatype, &lb, &extent) != MPI_SUCCESS) {
            throw Error(ErrId::BadType, "invalid datatype");
        }
        // The whole buffer must be addressable and its size countable: partitions * count
        // elements, their bytes (MPI_Count) and their span (MPI_Aint).
        MPI_Count elems = 0;
        MPI_Count bytes = 0;
        MPI_Count span = 0;
        if (__builtin_mul_overflow(static_cast<MPI_Count>(partitions), count, &elems) ||
            __builtin_mul_overflow(elems, type_size, &bytes) ||
            __builtin_mul_overflow(elems, extent, &span) ||
            span > std::numeric_limits<MPI_Aint>::max() ||
            span < std::numeric_limits<MPI_Aint>::min()) {
            throw Error(ErrId::BadCount, "partitions * count * extent overflows MPI_Aint");
        }
        InitArgs args;
        args.options = mpipcl::request_options(info);
        if (mpipcl::requests::settle_backend(&args.options, bytes) == mpipcl::BackendKind::Native) {
#if MPIPCL_MPI_HAS_PARTITIONED
            return kind == Kind::Send ? PMPI_Psend_init(buf, partitions, count, datatype, peer, tag,
                                                        comm, info, request)
                                      : PMPI_Precv_init(const_cast<void*>(buf), partitions, count,
                                                        datatype, peer, tag, comm, info, request);
#else
            // settle_backend turns native into persistent on an MPI without the calls.
            throw Error(ErrId::Internal, "native backend on an MPI without partitioned calls");
#endif
        }
        args.kind = kind;
        args.buf = buf;
        args.partitions = partitions;
        args.count = count;
        args.datatype = datatype;
        args.peer = peer;
        args.tag = tag;
        args.comm = comm;
        args.type_size = type_size;
        args.extent = static_cast<MPI_Aint>(extent);
        MPI_Request handle = MPI_REQUEST_NULL;
        Request::create(args, &handle);
        *request = handle;
        return MPI_SUCCESS;
    });
}

/// Raises @p rc on the request's communicator.
int raise_on(const Request& r, int rc, const char* fn)
{
    return rc == MPI_SUCCESS ? rc : raise_error(r.comm(), rc, fn);
}

/// A handle of ours that another thread is freeing right now: erroneous use.
int being_freed(const char* fn)
{
    return raise_error(mpipcl::default_error_comm(), error_code(ErrId::WrongKind), fn);
}

#if !MPIPCL_MPI_HAS_PARTITIONED
int not_partitioned(const char* fn)
{
    return raise_error(mpipcl::default_error_comm(), error_code(ErrId::WrongKind), fn);
}
#endif

/// A (light) reference on @p request when it is ours. Otherwise empty, and *rc is the answer:
/// an error when another thread is freeing it, else what the MPI's own call @p native says.
template <class Native>
HandleRegistry::Ref ours(MPI_Request request, const char* fn, int* rc, Native&& native)
{
    bool closing = false;
    HandleRegistry::Ref r = HandleRegistry::instance().acquire_light(request, &closing);
    if (!r) {
        *rc = closing ? being_freed(fn) : native();
    }
    return r;
}

}  // namespace

/// The MPI's own partitioned call for a handle that is not ours (an error without one).
#if MPIPCL_MPI_HAS_PARTITIONED
#define MPIPCL_NATIVE(fn, call) [&] { return call; }
#else
#define MPIPCL_NATIVE(fn, call) [&] { return not_partitioned(fn); }
#endif

extern "C" {

MPIPCL_API int MPI_Psend_init(const void* buf, int partitions, MPI_Count count,
                              MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                              MPI_Info info, MPI_Request* request)
{
    return partitioned_init(Kind::Send, buf, partitions, count, datatype, dest, tag, comm, info,
                            request, "MPI_Psend_init");
}

MPIPCL_API int MPI_Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                              int source, int tag, MPI_Comm comm, MPI_Info info,
                              MPI_Request* request)
{
    return partitioned_init(Kind::Recv, buf, partitions, count, datatype, source, tag, comm, info,
                            request, "MPI_Precv_init");
}

MPIPCL_API int MPI_Pready(int partition, MPI_Request request)
{
    int rc = MPI_SUCCESS;
    HandleRegistry::Ref r = ours(request, "MPI_Pready", &rc,
                                 MPIPCL_NATIVE("MPI_Pready", PMPI_Pready(partition, request)));
    if (!r) {
        return rc;
    }
    return raise_on(*r, r->pready(partition), "MPI_Pready");
}

MPIPCL_API int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    int rc = MPI_SUCCESS;
    HandleRegistry::Ref r =
        ours(request, "MPI_Pready_range", &rc,
             MPIPCL_NATIVE("MPI_Pready_range",
                           PMPI_Pready_range(partition_low, partition_high, request)));
    if (!r) {
        return rc;
    }
    if (partition_low > partition_high || partition_low < 0 ||
        partition_high >= r->endpoint().partitions) {
        return raise_on(*r, error_code(ErrId::BadPartition), "MPI_Pready_range");
    }
    // Mark them all (a word of ready bits at a time), then issue the MPI work once (one
    // Startall / one Put run and flush).
    return raise_on(*r, r->pready_range(partition_low, partition_high), "MPI_Pready_range");
}

MPIPCL_API int MPI_Pready_list(int length, MPIPCL_PREADY_LIST_CONST int array_of_partitions[],
                               MPI_Request request)
{
    int rc = MPI_SUCCESS;
    HandleRegistry::Ref r = ours(
        request, "MPI_Pready_list", &rc,
        MPIPCL_NATIVE("MPI_Pready_list", PMPI_Pready_list(length, array_of_partitions, request)));
    if (!r) {
        return rc;
    }
    if (length < 0 || (length > 0 && array_of_partitions == nullptr)) {
        return raise_on(*r, error_code(ErrId::NullArg), "MPI_Pready_list");
    }
    // Check the whole list (range, duplicates) before marking anything.
    const int parts = r->endpoint().partitions;
    std::vector<char> seen;
    try {
        if (length > 16) {
            seen.assign(parts, 0);
        }
    } catch (const std::bad_alloc&) {
        return raise_on(*r, MPI_ERR_NO_MEM, "MPI_Pready_list");
    }
    for (int i = 0; i < length; ++i) {
        const int p = array_of_partitions[i];
        if (p < 0 || p >= parts) {
            return raise_on(*r, error_code(ErrId::BadPartition), "MPI_Pready_list");
        }
        if (length > 16) {
            if (seen[p]++) {
                return raise_on(*r, error_code(ErrId::DuplicatePready), "MPI_Pready_list");
            }
        } else {
            for (int j = 0; j < i; ++j) {
                if (array_of_partitions[j] == p) {
                    return raise_on(*r, error_code(ErrId::DuplicatePready), "MPI_Pready_list");
                }
            }
        }
    }
    for (int i = 0; i < length && rc == MPI_SUCCESS; ++i) {
        rc = r->pready(array_of_partitions[i], false);
    }
    r->flush_ready();
    return raise_on(*r, rc, "MPI_Pready_list");
}

MPIPCL_API int MPI_Parrived(MPI_Request request, int partition, int* flag)
{
    if (flag == nullptr) {
        return raise_error(mpipcl::default_error_comm(), error_code(ErrId::NullArg),
                           "MPI_Parrived");
    }
    if (request == MPI_REQUEST_NULL) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    HandleRegistry::Ref r =
        ours(request, "MPI_Parrived", &rc,
             MPIPCL_NATIVE("MPI_Parrived", PMPI_Parrived(request, partition, flag)));
    if (!r) {
        return rc;
    }
    return raise_on(*r, r->parrived(partition, flag), "MPI_Parrived");
}

MPIPCL_API int MPIX_Pcl_backend(MPI_Request request, const char** name)
{
    if (name == nullptr) {
        return raise_error(mpipcl::default_error_comm(), error_code(ErrId::NullArg),
                           "MPIX_Pcl_backend");
    }
    HandleRegistry::Ref r = HandleRegistry::instance().acquire(request);
    if (!r) {
        return raise_error(mpipcl::default_error_comm(), error_code(ErrId::WrongKind),
                           "MPIX_Pcl_backend");
    }
    *name = mpipcl::backend_name(r->backend());
    return MPI_SUCCESS;
}

MPIPCL_API int MPIX_Pbuf_prepare(MPI_Request request)
{
    if (request == MPI_REQUEST_NULL) {
        return MPI_SUCCESS;
    }
    HandleRegistry::Ref r = HandleRegistry::instance().acquire(request);
    if (!r) {
        return raise_error(mpipcl::default_error_comm(), error_code(ErrId::WrongKind),
                           "MPIX_Pbuf_prepare");
    }
    return raise_on(*r, r->prepare(), "MPIX_Pbuf_prepare");
}

MPIPCL_API int MPIX_Pbuf_prepareall(int count, MPI_Request requests[])
{
    if (count < 0 || (count > 0 && requests == nullptr)) {
        return raise_error(mpipcl::default_error_comm(), error_code(ErrId::NullArg),
                           "MPIX_Pbuf_prepareall");
    }
    for (int i = 0; i < count; ++i) {
        if (const int rc = MPIX_Pbuf_prepare(requests[i]); rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

}  // extern "C"
