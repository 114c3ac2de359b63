// SPDX-License-Identifier: BSD-3-Clause
// Backend factory: choice, fallback, message count and data tags. It reaches the backends only
// through their module tables (common/backend_module.hpp), by BackendKind.
#include "progress/backends.hpp"

#include <mutex>
#include <string>

#include "common/backend_module.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/tuning.hpp"
#include "mpipcl_config.h"
#include "progress/comm_info.hpp"

namespace mpipcl::progress::backends {

namespace {

/// The kinds with a backend: rma (which may be unavailable) and persistent (the fallback).
constexpr BackendKind kBackends[] = {BackendKind::Persistent, BackendKind::Rma};

/// Whether mpipcl_backend=native can be honoured: the MPI has partitioned calls of its own.
constexpr bool kNativeAvailable = MPIPCL_MPI_HAS_PARTITIONED != 0;

/// A well-formed backend request this process cannot honour (rma without a window, native
/// without the MPI's calls) uses the persistent backend. One info line per process and
/// backend asked for, naming who asked (the info key or the environment) and why.
void fall_back(RequestOptions* opts, const char* why)
{
    static std::once_flag logged[2];
    const BackendKind asked = opts->backend;
    std::call_once(logged[asked == BackendKind::Rma ? 0 : 1], [&] {
        MPIPCL_LOG(Info, "%s=%s (%s) cannot be honoured: %s; using the persistent backend",
                   opts->backend_from_info ? "mpipcl_backend" : "MPIPCL_BACKEND",
                   backend_name(asked), opts->backend_from_info ? "info key" : "environment", why);
    });
    opts->backend = BackendKind::Persistent;
}

}  // namespace

void init(MPI_Comm comm) noexcept
{
    for (const BackendKind kind : kBackends) {
        backend_module(kind).init(comm);
    }
}

void finalize() noexcept
{
    for (const BackendKind kind : kBackends) {
        backend_module(kind).finalize();
    }
}

BackendKind resolve(RequestOptions* opts, std::int64_t total_bytes)
{
    const BackendModule& rma = backend_module(BackendKind::Rma);
    if (opts->backend == BackendKind::Auto) {
        const std::shared_ptr<const tuning::Table>& table = config().auto_table;
        const tuning::Rule* rule = table != nullptr ? table->find(total_bytes) : nullptr;
        opts->backend = rule != nullptr && rule->backend == BackendKind::Rma && rma.available()
                            ? BackendKind::Rma
                            : BackendKind::Persistent;
        if (rule != nullptr && rule->messages > 0 && opts->messages == 0) {
            opts->messages = rule->messages;
        }
        return opts->backend;
    }
    if (opts->backend == BackendKind::Rma && !rma.available()) {
        fall_back(opts, rma.unavailable_reason());
    }
    if (opts->backend == BackendKind::Native && !kNativeAvailable) {
        fall_back(opts, "this MPI library has no partitioned calls of its own");
    }
    return opts->backend;
}

BackendKind agree(BackendKind sender, BackendKind receiver) noexcept
{
    return sender == receiver ? receiver : BackendKind::Persistent;
}

namespace {
int recv_window(const Endpoint& ep, const Agreement& a, MPI_Comm comm)
{
    // Open MPI's shared-memory receiver copies every matched message of a peer in one
    // progress call (btl vader drains its queue, each single copy synchronous): with all
    // receives posted, messages that arrive together complete together, after the last one.
    // Posted a few at a time, each progress call copies only those, and MPI_Parrived sees the
    // partitions one by one (docs/design.md, "Receive window").
    const int window = config().recv_window;
    if (!kOnNodeReceiverCopies || window <= 0 || a.packed || a.messages <= window ||
        ep.total_bytes() / a.messages < kRecvWindowMinBytes) {
        return 0;
    }
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    const int node = node_of_world(me);
    return node >= 0 && node == node_of_world(ep.peer_world) ? window : 0;
}
}  // namespace

Offer offer(const Endpoint& ep, const RequestOptions& opts)
{
    if (opts.backend == BackendKind::Rma) {
        const BackendModule& rma = backend_module(BackendKind::Rma);
        if (rma.can_send(ep)) {
            return rma.make_offer(ep, opts);
        }
        MPIPCL_LOG(Info,
                   "the send datatype cannot be flattened for MPI_Put: asking for the "
                   "persistent backend");
    }
    return backend_module(BackendKind::Persistent).make_offer(ep, opts);
}

std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, Agreement* a,
                                TagAllocator* tags, MPI_Comm comm)
{
    if (a->backend == BackendKind::Rma) {
        const char* why_not = "the RMA backend built no backend";
        if (auto b = backend_module(BackendKind::Rma).create(ep, opts, *a, comm, &why_not)) {
            return b;
        }
        // Receiver: this buffer or datatype cannot use RMA.
        MPIPCL_LOG(Info, "rma request from rank %d uses the persistent backend: %s", ep.peer,
                   why_not);
        a->backend = BackendKind::Persistent;
    }
    const BackendModule& persistent = backend_module(BackendKind::Persistent);
    if (a->messages <= 0) {
        a->messages =
            persistent.auto_messages(a->send_partitions, a->send_part_bytes * a->send_partitions,
                                     config().min_message_bytes, config().max_messages);
    }
    const bool recv = ep.kind == Kind::Recv;
    if (recv) {
        a->packed = persistent.packs != nullptr && persistent.packs(ep, *a);
        a->recv_window = recv_window(ep, *a, comm);
        a->tag_base = tags->allocate(persistent.tags_needed(*a));
        if (a->tag_base < 0) {
            throw Error(ErrId::Internal, "out of data tags on the private communicator");
        }
    }
    try {
        const char* why_not = "no reason given";
        if (auto b = persistent.create(ep, opts, *a, comm, &why_not)) {
            return b;
        }
        throw Error(ErrId::Internal,
                    std::string("the persistent backend module built no backend: ") + why_not);
    } catch (...) {
        if (recv) {
            tags->release(a->tag_base);
        }
        throw;
    }
}

}  // namespace mpipcl::progress::backends
