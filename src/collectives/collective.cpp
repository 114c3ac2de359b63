// SPDX-License-Identifier: BSD-3-Clause
// What every partitioned collective shares: internal transfers, the first round's check,
// MPI_Pready bookkeeping, the round's error and completion.
#include "collectives/collective.hpp"

#include <algorithm>

#include "collectives/tree.hpp"
#include "common/backend_module.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

namespace mpipcl::collectives {

using progress::Engine;
using progress::Transfer;

namespace {
// Tags of the check transfers, below every tag a user may give (those are >= 0), so they never
// match a point-to-point partitioned operation even if the collective's key collided.
constexpr int kCheckUpTag = -4;    // first-round check, child -> parent (rank-0 tree)
constexpr int kCheckDownTag = -5;  // first-round check, parent -> child (rank-0 tree)
}  // namespace

Collective::Collective(const CollArgs& a) : kind_(a.kind), comm_(a.comm), options_(a.options)
{
    PMPI_Comm_rank(a.comm, &rank_);
    PMPI_Comm_size(a.comm, &size_);
    // Every local check has passed: only now the communicator's collective count moves on
    // (members whose init failed stay in step with each other).
    key_ = progress::collective_key(a.comm);
    sig_.kind = static_cast<std::int32_t>(kind_);
}

Collective::~Collective()
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!finalized) {
        for (MPI_Datatype& t : owned_types_) {
            PMPI_Type_free(&t);
        }
    }
}

MPI_Datatype Collective::own(MPI_Datatype type)
{
    bool owned = false;
    const MPI_Datatype t = progress::own_type(type, &owned);
    if (owned) {
        try {
            owned_types_.push_back(t);
        } catch (...) {
            MPI_Datatype dup = t;
            PMPI_Type_free(&dup);
            throw;
        }
    }
    return t;
}

namespace {

// Unless the user asked otherwise: the persistent backend's automatic rule (one internal
// message per partition, none below @p min_bytes, at most MPIPCL_MAX_MESSAGES), or one message
// per partition when @p min_bytes is 0. Partitions small enough for the packed layout keep one
// message each: that layout would copy the buffer in the Pready thread while this rank's other
// transfers write it (MPI itself reads it here).
int automatic_messages(const Side& s, std::int64_t min_bytes)
{
    const std::int64_t part_bytes = static_cast<std::int64_t>(s.count) * s.type_size;
    if (min_bytes <= 0 || part_bytes < config().min_message_bytes) {
        return s.partitions;
    }
    return backend_module(BackendKind::Persistent)
        .auto_messages(s.partitions, part_bytes * s.partitions, min_bytes, config().max_messages);
}

}  // namespace

Collective::TransferPtr Collective::add_transfer(Kind kind, const void* buf, int peer, int tag,
                                                 const Side& s, MPI_Datatype type)
{
    progress::TransferArgs args;
    args.kind = kind;
    args.buf = buf;
    args.partitions = s.partitions;
    args.count = s.count;
    args.datatype = type;
    args.peer = peer;
    args.tag = tag;
    args.comm = comm_;
    args.type_size = s.type_size;
    args.extent = s.extent;
    args.options = options_;
    if (s.count == 0 || s.type_size == 0) {
        args.options.backend = BackendKind::Persistent;  // nothing to put: no window needed
    } else if (args.options.messages == 0) {
        args.options.messages = automatic_messages(s, min_message_bytes_);
    }
    // The collective owns the datatype handle: the transfers borrow it.
    auto t = std::make_shared<Transfer>(progress::make_endpoint(args, key_), args.options,
                                        Engine::instance().next_id(), false);
    t->set_coll(sig_);
    all_.push_back(t);
    Engine::instance().add(t);
    return t;
}

Collective::TransferPtr Collective::add_check(Kind kind, int peer, int tag)
{
    Side empty;
    empty.partitions = 1;
    empty.type_size = 1;
    empty.extent = 1;
    return add_transfer(kind, &check_byte_, peer, tag, empty, MPI_BYTE);
}

void Collective::build_checks()
{
    data_ = all_;
    // The binomial tree: it depends on nothing members could disagree on.
    const TreeLinks tree = binomial_tree(rank_, 0, size_);
    if (tree.parent >= 0) {
        check_up_send_ = add_check(Kind::Send, tree.parent, kCheckUpTag);
        check_down_recv_ = add_check(Kind::Recv, tree.parent, kCheckDownTag);
    }
    for (const int c : tree.children) {
        check_up_recvs_.push_back(add_check(Kind::Recv, c, kCheckUpTag));
        check_down_sends_.push_back(add_check(Kind::Send, c, kCheckDownTag));
    }
    state_parts_ = std::max(state_parts_, ready_parts_);
    state_.reset(new std::atomic<std::uint8_t>[static_cast<std::size_t>(state_parts_ + 1)]);
    for (int p = 0; p <= state_parts_; ++p) {
        state_[p].store(0, std::memory_order_relaxed);
    }
}

BackendKind Collective::backend() const noexcept
{
    return data_.empty() ? BackendKind::Persistent : data_.front()->backend_kind();
}

void Collective::start()
{
    Engine& engine = Engine::instance();
    engine.remove_task(*this);  // waits for a pass still inside the previous round
    if (failed()) {
        return;  // sticky: the round completes at once with the error
    }
    for (int p = 0; p < state_parts_; ++p) {
        state_[p].store(0, std::memory_order_relaxed);
    }
    ready_count_.store(0, std::memory_order_relaxed);
    pending_.store(steps(), std::memory_order_relaxed);
    reset_round();
    // The check transfers run in the first round only (see build_checks).
    for (const TransferPtr& t : started_once_ ? data_ : all_) {
        engine.start(t);
    }
    started_once_ = true;
    // Also without steps of its own: the task spreads a failed transfer to the others.
    engine.start_task(shared_from_this());
}

void Collective::mark_locked(Transfer& t, int p) noexcept
{
    bool queued = false;
    (void)t.mark_ready(p, &queued);
    if (queued) {
        t.flush();
    }
}

void Collective::mark_from_pready(Transfer& t, int p, bool* queued) noexcept
{
    bool q = false;
    (void)t.mark_ready(p, &q);
    *queued = *queued || q;
}

int Collective::pready(int lo, int hi, bool flush) noexcept
{
    int rc = MPI_SUCCESS;
    bool queued = false;
    for (int p = lo; p <= hi; ++p) {
        // sync: acq_rel: releases the caller's writes of partition p to whoever sees kOwn
        // (a combining pass, MPI_Parrived of an in-place block), and orders duplicate detection.
        if ((state_[p].fetch_or(kOwn, std::memory_order_acq_rel) & kOwn) != 0) {
            rc = error_code(ErrId::DuplicatePready);
            continue;
        }
        ready_count_.fetch_add(1, std::memory_order_acq_rel);
        on_ready(p, &queued);
    }
    if (flush && queued) {
        flush_ready();
    }
    if (pready_feeds_task()) {
        // The progress pass combines and passes it on: wake the progress thread for it.
        Engine& engine = Engine::instance();
        if (engine.progress_thread_running()) {
            engine.nudge();
        }
    }
    return rc;
}

void Collective::flush_ready() noexcept
{
    if (Engine::instance().thread_multiple()) {
        flush_sends();
    }
    // Otherwise the next progress pass issues it.
}

int Collective::parrived(int p, int* flag) noexcept
{
    for (int pass = 0; pass < 2; ++pass) {
        if (round_complete()) {
            const int err = round_error();
            *flag = err == MPI_SUCCESS ? 1 : 0;
            return err;
        }
        // A failed round winding down reports no partition, and its misses still drive the
        // progress that ends it (the error comes with the round's end).
        if (part_arrived(p) && !failed()) {
            *flag = 1;
            Engine::parrived_hit();
            return MPI_SUCCESS;
        }
        if (pass == 0) {
            Engine::instance().parrived_missed();  // the point-to-point path's cheap miss
        }
    }
    *flag = 0;
    return MPI_SUCCESS;
}

bool Collective::all_transfers_done() const noexcept
{
    for (const TransferPtr& t : all_) {
        if (!t->round_complete()) {
            return false;
        }
    }
    return true;
}

bool Collective::round_complete() const noexcept
{
    // A failed round also waits for every transfer: one still running may write into the
    // temporary buffers, or its peer may still wait for it (the task aborts them all).
    if (!failed() && (ready_count_.load(std::memory_order_acquire) < ready_parts_ ||
                      pending_.load(std::memory_order_acquire) > 0)) {
        return false;
    }
    return all_transfers_done();
}

int Collective::round_error() const noexcept
{
    if (const int e = error_.load(std::memory_order_acquire); e != MPI_SUCCESS) {
        return e;
    }
    for (const TransferPtr& t : all_) {
        if (t->round_error() != MPI_SUCCESS) {
            return t->round_error();
        }
    }
    return MPI_SUCCESS;
}

void Collective::release()
{
    Engine& engine = Engine::instance();
    engine.remove_task(*this);
    // Also after a failed round: it ended only once no peer writes into these buffers any
    // more (a receive whose sender Puts waits for the sender's word, Transfer::fail_locked).
    for (const TransferPtr& t : all_) {
        engine.remove(t);
    }
}

void Collective::fail(int code) noexcept
{
    int expected = MPI_SUCCESS;
    error_.compare_exchange_strong(expected, code, std::memory_order_acq_rel);
}

int Collective::transfer_error_locked() const noexcept
{
    for (const TransferPtr& t : all_) {
        if (const int e = t->sticky_error(); e != MPI_SUCCESS) {
            return e;
        }
    }
    return MPI_SUCCESS;
}

void Collective::abort_all_locked(int code) noexcept
{
    fail(code);
    const int err = error_.load(std::memory_order_acquire);
    Engine& engine = Engine::instance();
    for (const TransferPtr& t : all_) {
        engine.abort_locked(*t, err);
    }
    pending_.store(0, std::memory_order_release);
}

bool Collective::advance_locked() noexcept
{
    if (!failed()) {
        if (const int e = transfer_error_locked(); e != MPI_SUCCESS) {
            fail(e);
        } else {
            if (pending_.load(std::memory_order_relaxed) > 0) {
                advance_steps_locked();
            }
            advance_check_locked();
        }
    }
    if (const int e = error_.load(std::memory_order_acquire); e != MPI_SUCCESS) {
        abort_all_locked(e);
        return true;
    }
    // Stays on the passes until its transfers are done: a peer's failure may still come.
    return pending_.load(std::memory_order_relaxed) == 0 && all_transfers_done();
}

bool Collective::waits_on_transfers() const noexcept
{
    return !failed() && pending_.load(std::memory_order_relaxed) == 0 && up_checked_ &&
           down_checked_;
}

void Collective::advance_check_locked() noexcept
{
    if (!up_checked_) {
        for (const TransferPtr& t : data_) {
            if (t->pairing() != progress::Pairing::Paired) {
                return;
            }
        }
        for (const TransferPtr& t : check_up_recvs_) {
            if (!t->arrived(0)) {
                return;
            }
        }
        up_checked_ = true;
        if (check_up_send_ != nullptr) {
            mark_locked(*check_up_send_, 0);
        }
    }
    if (!down_checked_ && (check_down_recv_ == nullptr || check_down_recv_->arrived(0))) {
        down_checked_ = true;
        for (const TransferPtr& t : check_down_sends_) {
            mark_locked(*t, 0);
        }
    }
}

}  // namespace mpipcl::collectives
