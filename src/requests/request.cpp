// SPDX-License-Identifier: BSD-3-Clause
// The request state machine: rounds, Pready/Parrived checks, completion and statuses.
#include "requests/request.hpp"

#include "common/assert.hpp"
#include "common/backoff.hpp"
#include "common/error.hpp"
#include "progress/backends.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"
#include "requests/registry.hpp"

namespace mpipcl::requests {

using progress::Engine;
using progress::make_endpoint;
using progress::own_type;
using progress::Pairing;
using progress::Transfer;

namespace {
/// A fresh user handle: minted by MPI, so it cannot collide with any live MPI request.
MPI_Request mint_handle()
{
    MPI_Request h = MPI_REQUEST_NULL;
    MPIPCL_CHECK_MPI(PMPI_Recv_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &h));
    return h;
}
}  // namespace

void Request::create(const InitArgs& args, MPI_Request* handle)
{
    Engine& engine = Engine::instance();
    Endpoint ep = make_endpoint(args, 0);
    bool owned = false;
    ep.datatype = own_type(args.datatype, &owned);
    std::shared_ptr<Transfer> t;
    try {
        t = std::make_shared<Transfer>(ep, args.options, engine.next_id(), owned);
    } catch (...) {
        if (owned) {
            PMPI_Type_free(&ep.datatype);
        }
        throw;
    }
    MPI_Request h = mint_handle();
    auto req = std::make_unique<Request>(t, h);
    auto& reg = HandleRegistry::instance();
    try {
        reg.insert(h, req.get());
    } catch (...) {
        PMPI_Request_free(&h);
        throw;
    }
    try {
        if (!t->null_peer()) {
            engine.add(t);
        }
    } catch (...) {
        HandleRegistry::Ref ref = reg.acquire(h);
        reg.close(ref);
        PMPI_Request_free(&h);
        throw;
    }
    req.release();  // owned by the registry entry until MPI_Request_free
    *handle = h;
}

void Request::create_collective(const CollArgs& args, MPI_Request* handle)
{
    std::shared_ptr<collectives::Collective> coll = collectives::make_collective(args);
    MPI_Request h = MPI_REQUEST_NULL;
    try {
        h = mint_handle();
        auto req = std::make_unique<Request>(coll, h);
        HandleRegistry::instance().insert(h, req.get());
        req.release();  // owned by the registry entry until MPI_Request_free
    } catch (...) {
        if (h != MPI_REQUEST_NULL) {
            PMPI_Request_free(&h);
        }
        coll->release();
        throw;
    }
    *handle = h;
}

Request::Request(std::shared_ptr<Transfer> t, MPI_Request handle)
    : t_(std::move(t)), handle_(handle)
{
}

Request::Request(std::shared_ptr<collectives::Collective> c, MPI_Request handle)
    : c_(std::move(c)), handle_(handle)
{
}

int Request::pready_collective(int lo, int hi, bool flush) noexcept
{
    if (c_ == nullptr || c_->ready_partitions() == 0) {
        return error_code(ErrId::WrongKind);
    }
    if (!is_active()) {
        return error_code(ErrId::NotStarted);
    }
    if (lo < 0 || lo > hi || hi >= c_->ready_partitions()) {
        return error_code(ErrId::BadPartition);
    }
    if (!Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    return c_->pready(lo, hi, flush);
}

int Request::parrived_collective(int partition, int* flag) noexcept
{
    if (c_->arrived_partitions() == 0) {
        return error_code(ErrId::WrongKind);
    }
    if (partition < 0 || partition >= c_->arrived_partitions()) {
        return error_code(ErrId::BadPartition);
    }
    if (!Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    if (!is_active()) {
        *flag = 1;  // inactive: true, as for a point-to-point receive
        return MPI_SUCCESS;
    }
    return c_->parrived(partition, flag);
}

Request::~Request() = default;

int Request::start()
{
    Engine& engine = Engine::instance();
    if (!engine.initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    if (!state_.begin_start()) {
        return error_code(ErrId::ActiveRequest);
    }
    try {
        if (c_) {
            c_->start();
        } else {
            engine.start(t_);
        }
    } catch (...) {
        const bool aborted = state_.abort_start();
        MPIPCL_ASSERT(aborted, "only this call moves a Starting request on");
        throw;  // api_guard makes it the call's error
    }
    const bool started = state_.end_start();
    MPIPCL_ASSERT(started, "only this call moves a Starting request on");
    return MPI_SUCCESS;
}

void Request::flush_ready() noexcept
{
    if (!Engine::instance().thread_multiple()) {
        return;
    }
    if (c_) [[unlikely]] {
        c_->flush_ready();
    } else {
        issue_queued();
    }
}

bool Request::try_complete(MPI_Status* status, int* err, Poll poll) noexcept
{
    *err = MPI_SUCCESS;
    if (!Engine::instance().initialized()) {
        *err = error_code(ErrId::NotInitialized);  // after MPI_Finalize
        return true;
    }
    if (is_active()) {
        if (!peek(status, poll)) {
            return false;
        }
        if (state_.complete()) {
            *err = round_error();
            return true;
        }
        // Another thread completed it meanwhile (erroneous use): report it as inactive.
    }
    set_empty_status(status);
    return true;
}

bool Request::peek(MPI_Status* status, Poll poll) noexcept
{
    if (!is_active()) {
        set_empty_status(status);
        return true;
    }
    if (!round_complete()) {
        // MPI_Test waits for the engine lock rather than skip: once the data is there, one
        // MPI_Test must see the round complete even while another thread is inside the
        // engine. A wait loop (Poll::Wait) skips its pass while another thread is in one, and
        // looks again: blocked on the lock it would sleep, and pay a wake-up after it. This
        // transfer only, mostly: one MPI test per poll, not one per active transfer. A
        // collective's pass is a full one (its transfers and its task).
        const DrainScope drain;
        if (c_) {
            Engine::instance().progress(poll == Poll::Test);
        } else {
            Engine::instance().progress_for(*t_, poll == Poll::Test);
        }
        if (!round_complete()) {
            return false;
        }
    }
    fill_status(status);
    return true;
}

int Request::prepare() noexcept
{
    if (!is_active()) {
        return error_code(ErrId::NotStarted);
    }
    Engine& engine = Engine::instance();
    if (c_ || kind() != Kind::Send || t_->null_peer()) {
        engine.progress();  // the Ready for this round left at Start (or leaves at pairing)
        return MPI_SUCCESS;
    }
    Backoff b = user_wait_backoff();
    // Backends whose data waits for the receiver anyway (persistent: MPI matching) have no
    // Ready to wait for: once paired, the call returns.
    while (t_->peer_ready_round() < t_->round() && t_->needs_peer_ready() &&
           !t_->round_complete() && t_->pairing() != Pairing::Failed) {
        if (engine.progress()) {
            b.reset();
        } else {
            b.pause();
        }
    }
    return MPI_SUCCESS;
}

void Request::release()
{
    Engine& engine = Engine::instance();
    if (!engine.initialized()) {
        // After MPI_Finalize the engine released the backend already.
        throw Error(ErrId::NotInitialized, "MPI_Request_free after MPI_Finalize");
    }
    if (c_) {
        c_->release();
        return;
    }
    engine.remove(t_);
}

void Request::fill_status(MPI_Status* status) const noexcept
{
    if (status == MPI_STATUS_IGNORE) {
        return;
    }
    const int err = round_error();
    if (c_ || kind() != Kind::Recv) {
        set_empty_status(status);
        status->MPI_ERROR = err;
        return;
    }
    const Endpoint& ep = t_->endpoint();
    status->MPI_SOURCE = ep.peer;
    status->MPI_TAG = t_->null_peer() ? MPI_ANY_TAG : ep.tag;
    status->MPI_ERROR = err;
    // Set as bytes: MPI_Get_count(datatype) then yields whole receive elements, and
    // MPI_Get_elements the basic elements, for derived datatypes too.
    const MPI_Count bytes = t_->null_peer() || err != MPI_SUCCESS ? 0 : ep.total_bytes();
    PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(status, 0);
}

BackendKind settle_backend(RequestOptions* opts, std::int64_t total_bytes)
{
    return progress::backends::resolve(opts, total_bytes);
}

void set_empty_status(MPI_Status* status) noexcept
{
    if (status == MPI_STATUS_IGNORE) {
        return;
    }
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
}

}  // namespace mpipcl::requests
