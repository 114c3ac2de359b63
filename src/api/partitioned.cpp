// SPDX-License-Identifier: BSD-3-Clause
// The six MPI-4.0 partitioned calls and the library's MPIX_P* queries: argument checks,
// registry lookup, error translation.
#include <mpi.h>

#include <limits>
#include <vector>

#include "api/checks.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "mpipcl.h"
#include "progress/engine.hpp"
#include "requests/registry.hpp"
#include "requests/request.hpp"

using mpipcl::api_guard;
using mpipcl::ApiCall;
using mpipcl::ErrId;
using mpipcl::Error;
using mpipcl::error_code;
using mpipcl::Kind;
using mpipcl::requests::HandleRegistry;
using mpipcl::requests::InitArgs;
using mpipcl::requests::raise_on;
using mpipcl::requests::Request;

namespace {

int tag_upper_bound(MPI_Comm comm)
{
    int* ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
    return flag ? *ub : 32767;
}

/// The checks of an init call's peer and tag on @p comm (not null). Throws Error.
void check_envelope(Kind kind, int peer, int tag, MPI_Comm comm)
{
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
}

}  // namespace

namespace mpipcl::api {

bool library_initialized() { return mpipcl::progress::Engine::instance().initialized(); }

MPI_Count check_buffer(int partitions, MPI_Count count, MPI_Datatype datatype, InitArgs* args)
{
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
    args->partitions = partitions;
    args->count = count;
    args->datatype = datatype;
    args->type_size = type_size;
    args->extent = static_cast<MPI_Aint>(extent);
    return bytes;
}

}  // namespace mpipcl::api

namespace {

using mpipcl::api::check_buffer;
using mpipcl::api::library_initialized;

int partitioned_init(Kind kind, const void* buf, int partitions, MPI_Count count,
                     MPI_Datatype datatype, int peer, int tag, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request, const char* fn)
{
    return api_guard(fn, [&](ApiCall& call) -> int {
        call.on(comm);
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
        InitArgs args;
        check_envelope(kind, peer, tag, comm);
        const MPI_Count bytes = check_buffer(partitions, count, datatype, &args);
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
        args.peer = peer;
        args.tag = tag;
        args.comm = comm;
        MPI_Request handle = MPI_REQUEST_NULL;
        Request::create(args, &handle);
        *request = handle;
        return MPI_SUCCESS;
    });
}

#if MPIPCL_MPI_HAS_PARTITIONED
constexpr bool kHasNative = true;
/// The MPI's own partitioned call, for a handle that is not ours.
#define MPIPCL_NATIVE(expr) [&] { return (expr); }
#else
constexpr bool kHasNative = false;
#define MPIPCL_NATIVE(expr) [] { return MPI_SUCCESS; }  // never called
#endif

/// A (light) reference on @p request when it is ours. Otherwise empty, and *rc is the answer:
/// the MPI's own call @p native, or an error (wrong kind) when the MPI has none or another
/// thread is freeing the handle right now. Inlined: it is on the per-partition path.
template <class Native>
[[gnu::always_inline]] inline HandleRegistry::Ref ours(MPI_Request request, ApiCall& call, int* rc,
                                                       Native&& native)
{
    bool closing = false;
    HandleRegistry::Ref r = HandleRegistry::instance().acquire_light(request, &closing);
    if (!r) {
        *rc = closing || !kHasNative ? call.raise(ErrId::WrongKind) : native();
    }
    return r;
}

/// MPI_Pready_list's check of the whole list (range, duplicates) before anything is marked.
int check_list(int length, const int* list, int parts)
{
    std::vector<char> seen;
    if (length > 16) {
        seen.assign(parts, 0);
    }
    for (int i = 0; i < length; ++i) {
        const int p = list[i];
        if (p < 0 || p >= parts) {
            return error_code(ErrId::BadPartition);
        }
        if (length > 16) {
            if (seen[p]++) {
                return error_code(ErrId::DuplicatePready);
            }
        } else {
            for (int j = 0; j < i; ++j) {
                if (list[j] == p) {
                    return error_code(ErrId::DuplicatePready);
                }
            }
        }
    }
    return MPI_SUCCESS;
}

}  // namespace

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
    return api_guard("MPI_Pready", [&](ApiCall& call) -> int {
        int rc = MPI_SUCCESS;
        HandleRegistry::Ref r =
            ours(request, call, &rc, MPIPCL_NATIVE(PMPI_Pready(partition, request)));
        return r ? raise_on(call, *r, r->pready(partition)) : rc;
    });
}

MPIPCL_API int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    return api_guard("MPI_Pready_range", [&](ApiCall& call) -> int {
        int rc = MPI_SUCCESS;
        HandleRegistry::Ref r =
            ours(request, call, &rc,
                 MPIPCL_NATIVE(PMPI_Pready_range(partition_low, partition_high, request)));
        if (!r) {
            return rc;
        }
        // A request that takes no Pready (a receive, a collective's non-contributor) answers
        // for itself below: the wrong kind, whatever the range.
        if (r->ready_partitions() > 0 && (partition_low > partition_high || partition_low < 0 ||
                                          partition_high >= r->ready_partitions())) {
            return raise_on(call, *r, error_code(ErrId::BadPartition));
        }
        // Mark them all (a word of ready bits at a time), then issue the MPI work once (one
        // Startall / one Put run and flush).
        return raise_on(call, *r, r->pready_range(partition_low, partition_high));
    });
}

MPIPCL_API int MPI_Pready_list(int length, MPIPCL_PREADY_LIST_CONST int array_of_partitions[],
                               MPI_Request request)
{
    return api_guard("MPI_Pready_list", [&](ApiCall& call) -> int {
        int rc = MPI_SUCCESS;
        HandleRegistry::Ref r =
            ours(request, call, &rc,
                 MPIPCL_NATIVE(PMPI_Pready_list(length, array_of_partitions, request)));
        if (!r) {
            return rc;
        }
        call.on(r->comm());  // also for the check's allocation failing
        if (length < 0 || (length > 0 && array_of_partitions == nullptr)) {
            return call.raise(ErrId::NullArg);
        }
        rc = r->ready_partitions() == 0
                 ? error_code(ErrId::WrongKind)
                 : check_list(length, array_of_partitions, r->ready_partitions());
        if (rc != MPI_SUCCESS) {
            return call.raise(rc);
        }
        for (int i = 0; i < length && rc == MPI_SUCCESS; ++i) {
            rc = r->pready(array_of_partitions[i], false);
        }
        r->flush_ready();
        return call.raise(rc);
    });
}

MPIPCL_API int MPI_Parrived(MPI_Request request, int partition, int* flag)
{
    return api_guard("MPI_Parrived", [&](ApiCall& call) -> int {
        if (flag == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        if (request == MPI_REQUEST_NULL) {
            *flag = 1;
            return MPI_SUCCESS;
        }
        int rc = MPI_SUCCESS;
        HandleRegistry::Ref r =
            ours(request, call, &rc, MPIPCL_NATIVE(PMPI_Parrived(request, partition, flag)));
        return r ? raise_on(call, *r, r->parrived(partition, flag)) : rc;
    });
}

MPIPCL_API int MPIX_Pcl_backend(MPI_Request request, const char** name)
{
    return api_guard("MPIX_Pcl_backend", [&](ApiCall& call) -> int {
        if (name == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        HandleRegistry::Ref r = HandleRegistry::instance().acquire(request);
        if (!r) {
            return call.raise(ErrId::WrongKind);
        }
        *name = mpipcl::backend_name(r->backend());
        return MPI_SUCCESS;
    });
}

MPIPCL_API int MPIX_Pbuf_prepare(MPI_Request request)
{
    return api_guard("MPIX_Pbuf_prepare", [&](ApiCall& call) -> int {
        if (request == MPI_REQUEST_NULL) {
            return MPI_SUCCESS;
        }
        HandleRegistry::Ref r = HandleRegistry::instance().acquire(request);
        if (!r) {
            return call.raise(ErrId::WrongKind);
        }
        call.on(r->comm());
        return call.raise(r->prepare());
    });
}

MPIPCL_API int MPIX_Pbuf_prepareall(int count, MPI_Request requests[])
{
    return api_guard("MPIX_Pbuf_prepareall", [&](ApiCall& call) -> int {
        if (count < 0 || (count > 0 && requests == nullptr)) {
            return call.raise(ErrId::NullArg);
        }
        for (int i = 0; i < count; ++i) {
            if (const int rc = MPIX_Pbuf_prepare(requests[i]); rc != MPI_SUCCESS) {
                return rc;
            }
        }
        return MPI_SUCCESS;
    });
}

}  // extern "C"
