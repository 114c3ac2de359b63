// SPDX-License-Identifier: BSD-3-Clause
// MPIX_Request: the one internal partitioned request type, the user's half of a partitioned
// operation. It owns the user-visible state machine (state.hpp) and the checks of
// MPI_Pready*/MPI_Parrived/completion; the engine's half is either a progress::Transfer
// (point-to-point: pairing, backend, rounds) it shares with the engine, or a
// collectives::Collective (a partitioned collective's schedule of internal transfers).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "collectives/collective.hpp"
#include "common/backend.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "progress/engine.hpp"
#include "progress/transfer.hpp"
#include "requests/state.hpp"

namespace mpipcl::requests {

/// The status of a null or inactive request: MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, count 0.
void set_empty_status(MPI_Status* status) noexcept;

/// What MPI_Psend_init / MPI_Precv_init were given (checked by the API layer).
using InitArgs = progress::TransferArgs;
using collectives::CollArgs;

/// Who polls a request for completion. Test: one call (MPI_Test*, MPI_Request_get_status),
/// which waits for the engine lock, so that it sees a completed round even while another
/// thread is in a pass. Wait: one poll of a loop (MPI_Wait, MPI_Waitall); a collective's poll
/// skips its pass while another thread is in one (that pass advances the collective, and the
/// loop polls again), rather than queue behind the progress thread on the engine lock.
enum class Poll : std::uint8_t { Test, Wait };

class Request {
   public:
    /// Creates a request (datatype duplicated, engine told) and registers it under a fresh
    /// handle, returned in *handle. Throws Error / std::bad_alloc (nothing left behind).
    static void create(const InitArgs& args, MPI_Request* handle);
    /// The same for a partitioned collective (MPIX_Pbcast_init & co.): its internal transfers
    /// are made and told to the engine. Throws Error / std::bad_alloc (nothing left behind).
    static void create_collective(const CollArgs& args, MPI_Request* handle);

    /// A point-to-point request over @p t.
    Request(std::shared_ptr<progress::Transfer> t, MPI_Request handle);
    /// A partitioned collective's request over @p c.
    Request(std::shared_ptr<collectives::Collective> c, MPI_Request handle);
    ~Request();
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;

    /// A partitioned collective's request (no transfer of its own).
    bool is_collective() const noexcept { return c_ != nullptr; }
    /// Send or Recv (point-to-point only).
    Kind kind() const { return t_->kind(); }
    MPI_Comm comm() const noexcept { return c_ ? c_->comm() : t_->endpoint().comm; }
    MPI_Request handle() const { return handle_; }
    State state() const { return state_.load(); }
    bool is_active() const { return state_.active(); }
    /// The partitions MPI_Pready* may mark (0 where this request takes none: a receive).
    int ready_partitions() const noexcept
    {
        return c_                         ? c_->ready_partitions()
               : t_->kind() == Kind::Send ? t_->endpoint().partitions
                                          : 0;
    }
    /// The backend in use (agreed with the peer once paired, else the one asked for).
    BackendKind backend() const noexcept { return c_ ? c_->backend() : t_->backend_kind(); }
    /// A receive with all but the last of this round's data in (progress::Transfer::finishing;
    /// never a collective): MPI_Wait then polls rather than sleeps (event mode).
    bool finishing() const noexcept { return c_ == nullptr && t_->finishing(); }
    /// Point-to-point with two or more pieces of this round still to come
    /// (progress::Transfer::expects_more; never a collective, whose passes forward).
    bool expects_more() const noexcept { return c_ == nullptr && t_->expects_more(); }
    /// Active and its round is complete (a completion call would return now).
    bool done() const { return is_active() && round_complete(); }

    // ---- user operations; the caller holds a registry reference ----
    /// MPI_Start. The caller holds the only reference (HandleRegistry::wait_sole). Returns
    /// an MPI code for a request that cannot start; what the engine throws (Error,
    /// std::bad_alloc) passes through, with the request left inactive.
    [[nodiscard]] int start();
    /// Marks @p partition ready. At MPI_THREAD_MULTIPLE it then issues the backend's queued
    /// MPI work unless @p flush is false (Pready_range/list mark all, then call flush_ready()).
    [[nodiscard]] int pready(int partition, bool flush = true) noexcept;
    /// MPI_Pready_range: marks partitions [@p lo, @p hi], then issues the queued MPI work once.
    [[nodiscard]] int pready_range(int lo, int hi) noexcept;
    /// Issues the backend's queued MPI work from this thread (MPI_THREAD_MULTIPLE only).
    void flush_ready() noexcept;
    [[nodiscard]] int parrived(int partition, int* flag) noexcept;
    /// Completes the round if it is complete: Active -> Inactive, fills @p status.
    /// Returns true when the request is (now) inactive; *err gets the round's error.
    /// Drives progress when the round is not yet complete (see Poll).
    bool try_complete(MPI_Status* status, int* err, Poll poll = Poll::Test) noexcept;
    /// Like try_complete without deactivating (MPI_Request_get_status).
    bool peek(MPI_Status* status, Poll poll = Poll::Test) noexcept;
    /// MPIX_Pbuf_prepare: sender: waits (driving progress) until the receiver has started
    /// this round, the round completed or pairing failed; receiver: returns at once.
    [[nodiscard]] int prepare() noexcept;
    /// MPI_Request_free, after the registry closed the request (nobody else inside):
    /// withdraws it from the engine. Throws Error (also after MPI_Finalize).
    void release();
    /// MPI_Request_free: Inactive -> Freed; false while a round is starting or active.
    bool begin_free() noexcept { return state_.begin_free(); }

   private:
    /// The checks of MPI_Pready and MPI_Pready_range on partitions [@p lo, @p hi].
    [[nodiscard]] int check_ready(int lo, int hi) const noexcept;
    /// A Pready call queued backend work (MPI_THREAD_MULTIPLE): issues it from this thread,
    /// or, when the backend's work is long and a progress thread runs, leaves it to that
    /// thread and to the completion calls (an application thread is not held in MPI_Pready
    /// for other threads' Puts).
    void issue_queued() noexcept;
    void fill_status(MPI_Status* status) const noexcept;
    bool round_complete() const noexcept
    {
        return c_ ? c_->round_complete() : t_->round_complete();
    }
    int round_error() const noexcept { return c_ ? c_->round_error() : t_->round_error(); }
    /// MPI_Pready* on a collective's request, where this rank contributes; else WrongKind.
    [[gnu::cold, gnu::noinline]] int pready_collective(int lo, int hi, bool flush) noexcept;
    /// MPI_Parrived on a collective's request, where this rank gets a result; else WrongKind.
    [[gnu::cold, gnu::noinline]] int parrived_collective(int partition, int* flag) noexcept;

    std::shared_ptr<progress::Transfer> t_;       ///< point-to-point (else null)
    std::shared_ptr<collectives::Collective> c_;  ///< a partitioned collective (else null)
    MPI_Request handle_;
    StateMachine state_;
};

// MPI_Pready and MPI_Parrived, inline: they run once per partition.

[[gnu::always_inline]] inline int Request::check_ready(int lo, int hi) const noexcept
{
    if (c_ || kind() != Kind::Send) {
        return error_code(ErrId::WrongKind);
    }
    if (!is_active()) {
        return error_code(ErrId::NotStarted);
    }
    if (lo < 0 || lo > hi || hi >= t_->endpoint().partitions) {
        return error_code(ErrId::BadPartition);
    }
    if (!progress::Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    return MPI_SUCCESS;
}

[[gnu::always_inline]] inline int Request::pready(int partition, bool flush) noexcept
{
    if (const int rc = check_ready(partition, partition); rc != MPI_SUCCESS) {
        return c_ ? pready_collective(partition, partition, flush) : rc;
    }
    const progress::Engine& engine = progress::Engine::instance();
    bool queued = false;
    if (const int rc = t_->mark_ready(partition, &queued); rc != MPI_SUCCESS) {
        return rc;
    }
    // Only the Pready that completed a unit has work to issue (a unit queued earlier is the
    // business of the thread that queued it, or of the one draining).
    if (flush && queued && engine.thread_multiple()) {
        issue_queued();
    }
    return MPI_SUCCESS;
}

inline int Request::pready_range(int lo, int hi) noexcept
{
    if (const int rc = check_ready(lo, hi); rc != MPI_SUCCESS) {
        return c_ ? pready_collective(lo, hi, true) : rc;
    }
    const progress::Engine& engine = progress::Engine::instance();
    bool queued = false;
    const int rc = t_->mark_range_ready(lo, hi, &queued);
    // Even after a duplicate: the other partitions were marked and may have completed a unit.
    if (queued && engine.thread_multiple()) {
        issue_queued();
    }
    return rc;
}

inline void Request::issue_queued() noexcept { progress::issue_queued(*t_); }

[[gnu::always_inline]] inline int Request::parrived(int partition, int* flag) noexcept
{
    if (c_) {
        return parrived_collective(partition, flag);
    }
    if (kind() != Kind::Recv) {
        return error_code(ErrId::WrongKind);
    }
    if (partition < 0 || partition >= t_->endpoint().partitions) {
        return error_code(ErrId::BadPartition);
    }
    if (!progress::Engine::instance().initialized()) {
        return error_code(ErrId::NotInitialized);
    }
    if (!is_active()) {
        *flag = 1;  // null or inactive: true (MPI-4.0 4.2.2)
        return MPI_SUCCESS;
    }
    for (int pass = 0; pass < 2; ++pass) {
        if (t_->round_complete()) {
            // A failed round has not delivered its data: report its error, never "arrived".
            *flag = t_->round_error() == MPI_SUCCESS ? 1 : 0;
            progress::Engine::parrived_hit();
            return t_->round_error();
        }
        if (t_->arrived(partition)) {
            *flag = 1;
            progress::Engine::parrived_hit();
            return MPI_SUCCESS;
        }
        if (pass == 0) {
            // Not known yet: drive progress (unless another thread is driving it, and less
            // often after many misses) so a Parrived-only loop terminates.
            progress::Engine::instance().parrived_missed();
        }
    }
    *flag = 0;
    return MPI_SUCCESS;
}

/// @p rc of a call on @p r, raised on @p r's communicator unless it is MPI_SUCCESS. The
/// communicator is read only on an error: nothing extra on the per-partition path.
inline int raise_on(ApiCall& call, const Request& r, int rc) noexcept
{
    if (rc != MPI_SUCCESS) [[unlikely]] {
        call.on(r.comm());
    }
    return call.raise(rc);
}

}  // namespace mpipcl::requests

namespace mpipcl::requests {
/// At init of a request: settles the backend asked for (see progress::backends::resolve):
/// "native" stays native (the API layer forwards it to the MPI library). Throws Error.
BackendKind settle_backend(RequestOptions* opts, std::int64_t total_bytes);
}  // namespace mpipcl::requests
