// SPDX-License-Identifier: BSD-3-Clause
// Backend factory: choice, fallback, message count and data tags.
#include "progress/backends.hpp"

#include <mutex>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "persistent/backend.hpp"
#include "rma/rma.hpp"

namespace mpipcl::progress::backends {

void init(MPI_Comm comm) noexcept { rma::init(comm); }

void finalize() noexcept { rma::finalize(); }

BackendKind resolve(RequestOptions* opts, std::int64_t total_bytes)
{
    if (opts->backend == BackendKind::Auto) {
        const std::int64_t rma_from = config().auto_rma_bytes;
        opts->backend = rma_from > 0 && total_bytes >= rma_from && rma::available()
                            ? BackendKind::Rma
                            : BackendKind::Persistent;
    }
    if (opts->backend == BackendKind::Rma && !rma::available()) {
        if (opts->backend_from_info) {
            throw Error(ErrId::Unsupported,
                        std::string("mpipcl_backend=rma: ") + rma::unavailable_reason());
        }
        static std::once_flag warned;
        std::call_once(warned, [] {
            MPIPCL_LOG(Warn, "MPIPCL_BACKEND=rma: %s; using the persistent backend",
                       rma::unavailable_reason());
        });
        opts->backend = BackendKind::Persistent;
    }
    return opts->backend;
}

Offer offer(const Endpoint& ep, const RequestOptions& opts)
{
    if (opts.backend == BackendKind::Rma) {
        if (rma::can_send(ep)) {
            return rma::make_offer(ep, opts);
        }
        MPIPCL_LOG(Info,
                   "the send datatype cannot be flattened for MPI_Put: asking for the "
                   "persistent backend");
    }
    return persistent::make_offer(ep, opts);
}

std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, Agreement* a,
                                TagAllocator* tags, MPI_Comm comm)
{
    if (a->backend == BackendKind::Rma) {
        if (auto b = rma::create(ep, opts, *a)) {
            return b;
        }
        a->backend = BackendKind::Persistent;  // receiver: this buffer/datatype cannot use RMA
    }
    if (a->messages <= 0) {
        a->messages =
            persistent::auto_messages(a->send_partitions, a->send_part_bytes * a->send_partitions,
                                      config().min_message_bytes, config().max_messages);
    }
    const bool recv = ep.kind == Kind::Recv;
    if (recv) {
        a->tag_base = tags->allocate(persistent::tags_needed(*a));
        if (a->tag_base < 0) {
            throw Error(ErrId::Internal, "out of data tags on the private communicator");
        }
    }
    try {
        return persistent::create(ep, *a, comm);
    } catch (...) {
        if (recv) {
            tags->release(a->tag_base);
        }
        throw;
    }
}

}  // namespace mpipcl::progress::backends
