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
using progress::Pairing;
using progress::Transfer;

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

Endpoint make_endpoint(const InitArgs& args, std::uint64_t comm_key)
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
        ep.peer_world = progress::world_rank_of(args.comm, args.peer);
    }
    return ep;
}

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
    auto coll = std::make_shared<Collective>(args);
    MPI_Request h = MPI_REQUEST_NULL;
    try {
        h = mint_handle();
        auto req = std::make_unique<Request>(coll->face(), h);
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

int Request::pready_not_send(int lo, int hi, bool flush) noexcept
{
    if (kind() != Kind::Coll || !coll().contributes()) {
        return error_code(ErrId::WrongKind);
    }
    if (!is_active()) {
        return error_code(ErrId::NotStarted);
    }
    if (lo < 0 || lo > hi || hi >= coll().partitions()) {
        return error_code(ErrId::BadPartition);
    }
    if (!Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    return coll().pready(lo, hi, flush);
}

int Request::parrived_not_recv(int partition, int* flag) noexcept
{
    if (kind() != Kind::Coll || !coll().receives()) {
        return error_code(ErrId::WrongKind);
    }
    if (partition < 0 || partition >= coll().partitions()) {
        return error_code(ErrId::BadPartition);
    }
    if (!Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    if (!is_active()) {
        *flag = 1;  // inactive: true, as for a point-to-point receive
        return MPI_SUCCESS;
    }
    return coll().parrived(partition, flag);
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
        if (kind() == Kind::Coll) {
            coll().start();
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
    if (kind() == Kind::Coll) [[unlikely]] {
        coll().flush_ready();
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
        // Wait for the engine lock rather than skip: once the data is there, one MPI_Test
        // must see the round complete even while another thread is inside the engine. This
        // transfer only, mostly: one MPI test per poll, not one per active transfer. A
        // collective's pass is a full one (its transfers and its task); in a wait loop it is
        // skipped while another thread is in a pass (Poll::Wait).
        if (kind() == Kind::Coll) {
            Engine::instance().progress(poll == Poll::Test);
        } else {
            Engine::instance().progress_for(*t_);
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
    if (kind() != Kind::Send || t_->null_peer()) {
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
    if (kind() == Kind::Coll) {
        coll().release();
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
    if (kind() != Kind::Recv) {
        set_empty_status(status);
        status->MPI_ERROR = err;
        return;
    }
    const Endpoint& ep = endpoint();
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
