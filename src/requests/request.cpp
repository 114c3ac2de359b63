// SPDX-License-Identifier: BSD-3-Clause
// The request state machine: rounds, Pready/Parrived checks, completion and statuses.
#include "requests/request.hpp"

#include "common/error.hpp"
#include "progress/backoff.hpp"
#include "progress/engine.hpp"

namespace mpipcl::requests {

using progress::Engine;

Request::Request(Kind kind, const Endpoint& ep, const RequestOptions& opts, std::uint64_t id)
    : kind_(kind), ep_(ep), opts_(opts), id_(id)
{
    if (kind_ == Kind::Send) {
        part_state_ = std::make_unique<std::atomic<std::uint8_t>[]>(ep_.partitions);
        for (int i = 0; i < ep_.partitions; ++i) {
            part_state_[i].store(0, std::memory_order_relaxed);
        }
    }
}

Request::~Request() = default;

int Request::pready(int partition, bool flush) noexcept
{
    if (kind_ != Kind::Send) {
        return error_code(ErrId::WrongKind);
    }
    if (state() != State::Active) {
        return error_code(ErrId::NotStarted);
    }
    if (partition < 0 || partition >= ep_.partitions) {
        return error_code(ErrId::BadPartition);
    }
    std::uint8_t expected = 0;
    // sync: seq_cst pairs with pair_locked's store of ready_backend_ and its scan (Dekker):
    // either we see the backend, or the scan sees our 1, so the partition is counted once.
    if (!part_state_[partition].compare_exchange_strong(expected, 1)) {
        return error_code(ErrId::DuplicatePready);
    }
    if (Backend* b = ready_backend_.load()) {
        count_partition(b, partition);
        if (flush && Engine::instance().thread_multiple()) {
            b->flush();
        }
    }
    return MPI_SUCCESS;
}

void Request::flush_ready() noexcept
{
    Backend* b = ready_backend_.load(std::memory_order_acquire);
    if (b != nullptr && Engine::instance().thread_multiple()) {
        b->flush();
    }
}

void Request::count_partition(Backend* b, int p) noexcept
{
    std::uint8_t expected = 1;
    if (part_state_[p].compare_exchange_strong(expected, 2)) {
        b->partition_ready(p);
    }
}

int Request::parrived(int partition, int* flag) noexcept
{
    if (kind_ != Kind::Recv) {
        return error_code(ErrId::WrongKind);
    }
    if (partition < 0 || partition >= ep_.partitions) {
        return error_code(ErrId::BadPartition);
    }
    if (state() != State::Active || round_complete()) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    Backend* b = ready_backend_.load(std::memory_order_acquire);
    if (b != nullptr && b->arrived(partition)) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    // Not known yet: drive progress ourselves so a Parrived-only loop terminates.
    Engine::instance().progress();
    b = ready_backend_.load(std::memory_order_acquire);
    *flag = round_complete() || (b != nullptr && b->arrived(partition));
    return MPI_SUCCESS;
}

bool Request::try_complete(MPI_Status* status, int* err) noexcept
{
    *err = MPI_SUCCESS;
    if (state() == State::Active) {
        if (!peek(status)) {
            return false;
        }
        State expected = State::Active;
        if (state_.compare_exchange_strong(expected, State::Inactive)) {
            *err = round_error_;
            return true;
        }
        // Another thread completed it meanwhile (erroneous use): report it as inactive.
    }
    set_empty_status(status);
    return true;
}

bool Request::peek(MPI_Status* status) noexcept
{
    if (state() != State::Active) {
        set_empty_status(status);
        return true;
    }
    if (!round_complete()) {
        Engine::instance().progress();
        if (!round_complete()) {
            return false;
        }
    }
    fill_status(status);
    return true;
}

int Request::prepare() noexcept
{
    if (state() != State::Active) {
        return error_code(ErrId::NotStarted);
    }
    Engine& engine = Engine::instance();
    if (kind_ == Kind::Recv || null_peer()) {
        engine.progress();  // the Ready for this round left at Start (or leaves at pairing)
        return MPI_SUCCESS;
    }
    progress::Backoff b = progress::user_wait_backoff();
    while (peer_ready_round() < round() && !round_complete() &&
           pairing() != Pairing::Failed) {
        if (engine.progress()) {
            b.reset();
        } else {
            b.pause();
        }
    }
    return MPI_SUCCESS;
}

void Request::fill_status(MPI_Status* status) const noexcept
{
    if (status == MPI_STATUS_IGNORE) {
        return;
    }
    if (kind_ == Kind::Send) {
        set_empty_status(status);
        status->MPI_ERROR = round_error_;
        return;
    }
    status->MPI_SOURCE = ep_.peer;
    status->MPI_TAG = null_peer() ? MPI_ANY_TAG : ep_.tag;
    status->MPI_ERROR = round_error_;
    // Set as bytes: MPI_Get_count(datatype) then yields whole receive elements, and
    // MPI_Get_elements the basic elements, for derived datatypes too.
    const MPI_Count bytes =
        null_peer() || round_error_ != MPI_SUCCESS ? 0 : ep_.total_bytes();
    PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(status, 0);
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

// ---- engine side ----

void Request::begin_round_locked()
{
    if (kind_ == Kind::Send) {
        for (int i = 0; i < ep_.partitions; ++i) {
            part_state_[i].store(0, std::memory_order_relaxed);
        }
    }
    round_error_ = MPI_SUCCESS;
    complete_.store(false, std::memory_order_relaxed);
    // sync: relaxed; published with the Active store below.
    round_.store(round_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    ever_started_ = true;
    const int sticky = error_.load(std::memory_order_relaxed);
    if (null_peer() || sticky != MPI_SUCCESS) {
        round_error_ = sticky;
        complete_.store(true, std::memory_order_relaxed);
    } else if (backend_) {
        backend_->start();
    }
    // sync: release publishes the reset flags to the threads that will call Pready.
    state_.store(State::Active, std::memory_order_release);
}

void Request::pair_locked(const Agreement& a, std::unique_ptr<Backend> backend)
{
    agreement_ = a;
    backend_ = std::move(backend);
    pairing_.store(Pairing::Paired, std::memory_order_release);
    if (state() == State::Active && !round_complete()) {
        backend_->start();
    }
    // sync: seq_cst store, then scan (see pready): partitions marked before this point are
    // counted here, later ones by their own Pready.
    ready_backend_.store(backend_.get());
    if (kind_ == Kind::Send && state() == State::Active) {
        for (int i = 0; i < ep_.partitions; ++i) {
            count_partition(backend_.get(), i);
        }
    }
}

void Request::fail_locked(int code)
{
    error_.store(code, std::memory_order_relaxed);
    pairing_.store(Pairing::Failed, std::memory_order_release);
    if (state() == State::Active && !round_complete()) {
        round_error_ = code;
        mark_complete_locked();
    }
}

void Request::unpair_locked()
{
    if (backend_ && state() == State::Active && !round_complete()) {
        backend_->abort_round();
    }
    ready_backend_.store(nullptr);
    retired_.push_back(std::move(backend_));
    error_.store(MPI_SUCCESS, std::memory_order_relaxed);
    pairing_.store(Pairing::Unpaired, std::memory_order_release);
}

void Request::peer_ready_locked(std::uint64_t round)
{
    if (round <= peer_ready_.load(std::memory_order_relaxed)) {
        return;
    }
    // sync: release pairs with prepare()'s and the backend's acquire.
    peer_ready_.store(round, std::memory_order_release);
    if (backend_ && state() == State::Active && !round_complete()) {
        backend_->peer_ready();
    }
}

bool Request::progress_locked()
{
    if (round_complete()) {
        return true;
    }
    if (!backend_) {
        return false;
    }
    try {
        if (backend_->progress()) {
            mark_complete_locked();
        }
    } catch (const Error& e) {
        round_error_ = e.code();
        mark_complete_locked();
    }
    return round_complete();
}

void Request::mark_complete_locked()
{
    // sync: release makes the received data and round_error_ visible to the completer.
    complete_.store(true, std::memory_order_release);
}

}  // namespace mpipcl::requests
