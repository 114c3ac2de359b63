// SPDX-License-Identifier: BSD-3-Clause
// The six MPI-4.0 partitioned calls: argument checks, registry lookup, error translation.
#include <mpi.h>

#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "mpipcl.h"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"
#include "requests/registry.hpp"
#include "requests/request.hpp"
#include "rma/rma.hpp"

using mpipcl::api_guard;
using mpipcl::ErrId;
using mpipcl::Error;
using mpipcl::error_code;
using mpipcl::raise_error;
using mpipcl::progress::Engine;
using mpipcl::requests::Endpoint;
using mpipcl::requests::HandleRegistry;
using mpipcl::requests::Kind;
using mpipcl::requests::Request;

namespace {

int tag_upper_bound(MPI_Comm comm)
{
    int* ub = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
    return flag ? *ub : 32767;
}

int partitioned_init(Kind kind, const void* buf, int partitions, MPI_Count count,
                     MPI_Datatype datatype, int peer, int tag, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request, const char* fn)
{
    const MPI_Comm err_comm = comm == MPI_COMM_NULL ? mpipcl::default_error_comm() : comm;
    return api_guard(err_comm, fn, [&]() -> int {
        Engine& engine = Engine::instance();
        if (!engine.initialized()) {
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
        mpipcl::RequestOptions opts = mpipcl::request_options(info);
        if (opts.backend == mpipcl::BackendKind::Native) {
#if MPIPCL_MPI_HAS_PARTITIONED
            return kind == Kind::Send
                       ? PMPI_Psend_init(buf, partitions, count, datatype, peer, tag, comm, info,
                                         request)
                       : PMPI_Precv_init(const_cast<void*>(buf), partitions, count, datatype,
                                         peer, tag, comm, info, request);
#else
            throw Error(ErrId::Unsupported,
                        "mpipcl_backend=native: this MPI library has no partitioned calls");
#endif
        }
        if (opts.backend == mpipcl::BackendKind::Rma && !mpipcl::rma::available()) {
            // Asked for by this request: an error. Only the process default (MPIPCL_BACKEND):
            // the persistent backend, with one warning.
            if (opts.backend_from_info) {
                throw Error(ErrId::Unsupported, std::string("mpipcl_backend=rma: ") +
                                                    mpipcl::rma::unavailable_reason());
            }
            static std::once_flag warned;
            std::call_once(warned, [] {
                MPIPCL_LOG(Warn, "MPIPCL_BACKEND=rma: %s; using the persistent backend",
                           mpipcl::rma::unavailable_reason());
            });
            opts.backend = mpipcl::BackendKind::Persistent;
        }
        Endpoint ep;
        ep.buf = const_cast<void*>(buf);
        ep.partitions = partitions;
        ep.count = count;
        ep.datatype = datatype;
        ep.peer = peer;
        ep.tag = tag;
        ep.comm = comm;
        ep.elem_bytes = type_size;
        ep.extent = static_cast<MPI_Aint>(extent);
        if (peer != MPI_PROC_NULL) {
            ep.comm_key = mpipcl::progress::comm_key(comm);
            ep.peer_world = mpipcl::progress::world_rank_of(comm, peer);
        }
        auto req = std::make_shared<Request>(kind, ep, opts, engine.next_id());
        // A handle minted by MPI cannot collide with any live MPI request.
        MPI_Request handle = MPI_REQUEST_NULL;
        MPIPCL_CHECK_MPI(
            PMPI_Recv_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &handle));
        req->set_handle(handle);
        auto& reg = HandleRegistry::instance();
        reg.insert(handle, req);
        try {
            if (!req->null_peer()) {
                engine.add(req);
            }
        } catch (...) {
            reg.erase(handle);
            PMPI_Request_free(&handle);
            throw;
        }
        *request = handle;
        return MPI_SUCCESS;
    });
}

/// Raises @p rc on the request's communicator.
int raise_on(const Request& r, int rc, const char* fn)
{
    return rc == MPI_SUCCESS ? rc : raise_error(r.endpoint().comm, rc, fn);
}

#if !MPIPCL_MPI_HAS_PARTITIONED
int not_partitioned(const char* fn)
{
    return raise_error(mpipcl::default_error_comm(), error_code(ErrId::WrongKind), fn);
}
#endif

}  // namespace

extern "C" {

MPIPCL_API int MPI_Psend_init(const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                   int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return partitioned_init(Kind::Send, buf, partitions, count, datatype, dest, tag, comm, info,
                            request, "MPI_Psend_init");
}

MPIPCL_API int MPI_Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request)
{
    return partitioned_init(Kind::Recv, buf, partitions, count, datatype, source, tag, comm, info,
                            request, "MPI_Precv_init");
}

MPIPCL_API int MPI_Pready(int partition, MPI_Request request)
{
    Request* r = HandleRegistry::instance().find(request);
    if (r == nullptr) {
#if MPIPCL_MPI_HAS_PARTITIONED
        return PMPI_Pready(partition, request);
#else
        return not_partitioned("MPI_Pready");
#endif
    }
    return raise_on(*r, r->pready(partition), "MPI_Pready");
}

MPIPCL_API int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    Request* r = HandleRegistry::instance().find(request);
    if (r == nullptr) {
#if MPIPCL_MPI_HAS_PARTITIONED
        return PMPI_Pready_range(partition_low, partition_high, request);
#else
        return not_partitioned("MPI_Pready_range");
#endif
    }
    if (partition_low > partition_high || partition_low < 0 ||
        partition_high >= r->endpoint().partitions) {
        return raise_on(*r, error_code(ErrId::BadPartition), "MPI_Pready_range");
    }
    // Mark them all, then issue the MPI work once (one Startall / one Put run and flush).
    int rc = MPI_SUCCESS;
    for (int p = partition_low; p <= partition_high && rc == MPI_SUCCESS; ++p) {
        rc = r->pready(p, false);
    }
    r->flush_ready();
    return raise_on(*r, rc, "MPI_Pready_range");
}

MPIPCL_API int MPI_Pready_list(int length, MPIPCL_PREADY_LIST_CONST int array_of_partitions[],
                    MPI_Request request)
{
    Request* r = HandleRegistry::instance().find(request);
    if (r == nullptr) {
#if MPIPCL_MPI_HAS_PARTITIONED
        return PMPI_Pready_list(length, array_of_partitions, request);
#else
        return not_partitioned("MPI_Pready_list");
#endif
    }
    if (length < 0 || (length > 0 && array_of_partitions == nullptr)) {
        return raise_on(*r, error_code(ErrId::NullArg), "MPI_Pready_list");
    }
    // Check the whole list (range, duplicates) before marking anything.
    const int parts = r->endpoint().partitions;
    std::vector<char> seen;
    for (int i = 0; i < length; ++i) {
        const int p = array_of_partitions[i];
        if (p < 0 || p >= parts) {
            return raise_on(*r, error_code(ErrId::BadPartition), "MPI_Pready_list");
        }
        if (length > 16) {
            if (seen.empty()) {
                seen.assign(parts, 0);
            }
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
    int rc = MPI_SUCCESS;
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
    Request* r = HandleRegistry::instance().find(request);
    if (r == nullptr) {
#if MPIPCL_MPI_HAS_PARTITIONED
        return PMPI_Parrived(request, partition, flag);
#else
        return not_partitioned("MPI_Parrived");
#endif
    }
    return raise_on(*r, r->parrived(partition, flag), "MPI_Parrived");
}

MPIPCL_API int MPIX_Pbuf_prepare(MPI_Request request)
{
    if (request == MPI_REQUEST_NULL) {
        return MPI_SUCCESS;
    }
    Request* r = HandleRegistry::instance().find(request);
    if (r == nullptr) {
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
