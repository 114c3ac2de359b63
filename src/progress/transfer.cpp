// SPDX-License-Identifier: BSD-3-Clause
// The engine's half of a partitioned request: pairing, backend and round completion.
#include "progress/transfer.hpp"

#include <algorithm>
#include <cstdio>
#include <new>

#include "common/error.hpp"

namespace mpipcl::progress {

Transfer::Transfer(const Endpoint& ep, const RequestOptions& opts, std::uint64_t id, bool owns_type)
    : ep_(ep), opts_(opts), id_(id), owns_type_(owns_type)
{
    if (ep_.kind == Kind::Send) {
        static_assert(sizeof(std::atomic<std::uint8_t>) == 1, "byte-sized partition states");
        void* p = std::calloc(static_cast<std::size_t>(ep_.partitions), 1);
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        part_state_.reset(static_cast<std::atomic<std::uint8_t>*>(p));
    }
}

Transfer::~Transfer()
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (owns_type_ && !finalized) {
        MPI_Datatype t = ep_.datatype;
        PMPI_Type_free(&t);
    }
}

int Transfer::mark_ready_unsettled(int p, bool* queued) noexcept
{
    // sync: seq_cst pairs with pair_locked's store of ready_backend_ and its scan (Dekker):
    // either we see the backend, or the scan sees our 1, so the partition is counted once.
    std::uint8_t expected = 0;
    if (!part_state_[p].compare_exchange_strong(expected, 1)) {
        return error_code(ErrId::DuplicatePready);
    }
    if (Backend* b = ready_backend_.load()) {
        *queued = count_partition(b, p);
    }
    return MPI_SUCCESS;
}

bool Transfer::count_partition(Backend* b, int p) noexcept
{
    std::uint8_t expected = 1;
    return part_state_[p].compare_exchange_strong(expected, 2) &&
           b->partition_ready(p) == Marked::Queued;
}

void Transfer::flush() noexcept
{
    if (Backend* b = ready_backend_.load(std::memory_order_acquire)) {
        b->flush();
    }
}

bool Transfer::needs_peer_ready() const noexcept
{
    const Backend* b = ready_backend_.load(std::memory_order_acquire);
    return b == nullptr || b->needs_peer_ready();
}

// ---- engine side ----

void Transfer::begin_round_locked()
{
    if (ep_.kind == Kind::Send) {
        for (int i = 0; i < ep_.partitions; ++i) {
            part_state_[i].store(0, std::memory_order_relaxed);
        }
    }
    round_error_ = MPI_SUCCESS;
    // sync: relaxed; published by the request's Active store (release) after this returns.
    const std::uint64_t r = round_.load(std::memory_order_relaxed) + 1;
    round_.store(r, std::memory_order_relaxed);
    ever_started_ = true;
    const int sticky = error_.load(std::memory_order_relaxed);
    if (null_peer() || sticky != MPI_SUCCESS) {
        round_error_ = sticky;
        mark_complete_locked();
        return;
    }
    complete_.store(false, std::memory_order_relaxed);
    if (backend_) {
        backend_->start(r);
    }
}

void Transfer::pair_locked(const Agreement& a, std::unique_ptr<Backend> backend)
{
    agreement_ = a;
    agreed_.store(static_cast<int>(a.backend), std::memory_order_release);
    backend_ = std::move(backend);
    pairing_.store(Pairing::Paired, std::memory_order_release);
    const bool running = !round_complete();
    if (running) {
        backend_->start(round_.load(std::memory_order_relaxed));
    }
    if (const std::uint64_t r = peer_ready_.load(std::memory_order_relaxed); r > 0) {
        backend_->peer_ready(r);
    }
    // sync: seq_cst store, then scan (see mark_ready): partitions marked before this point are
    // counted here, later ones by their own Pready.
    ready_backend_.store(backend_.get());
    if (ep_.kind == Kind::Send && running) {
        for (int i = 0; i < ep_.partitions; ++i) {
            count_partition(backend_.get(), i);
        }
    }
    // sync: release: a Pready that sees it knows the scan is over (mark_ready's fast path).
    settled_backend_.store(backend_.get(), std::memory_order_release);
}

void Transfer::fail_locked(int code, bool await_peer)
{
    error_.store(code, std::memory_order_relaxed);
    pairing_.store(Pairing::Failed, std::memory_order_release);
    if (!round_complete()) {
        if (backend_) {
            backend_->abort_round();
        }
        round_error_ = code;
        if (await_peer && backend_) {
            awaits_peer_ = true;  // progress_locked or peer_stopped_locked completes it
            return;
        }
        mark_complete_locked();
    }
}

void Transfer::peer_stopped_locked()
{
    if (awaits_peer_) {
        awaits_peer_ = false;
        if (!round_complete()) {  // else every flag of the round arrived first
            mark_complete_locked();
        }
    }
}

void Transfer::unpair_locked()
{
    if (backend_ && !round_complete()) {
        backend_->abort_round();
    }
    awaits_peer_ = false;  // the send never started: it wrote nothing
    settled_backend_.store(nullptr);
    ready_backend_.store(nullptr);
    if (backend_) {
        retired_.push_back(std::move(backend_));
    }
    error_.store(MPI_SUCCESS, std::memory_order_relaxed);
    pairing_.store(Pairing::Unpaired, std::memory_order_release);
}

void Transfer::peer_ready_locked(std::uint64_t round)
{
    if (round <= peer_ready_.load(std::memory_order_relaxed)) {
        return;
    }
    // sync: release pairs with prepare()'s acquire.
    peer_ready_.store(round, std::memory_order_release);
    if (backend_) {
        backend_->peer_ready(round);
    }
}

bool Transfer::progress_locked(int* failed)
{
    *failed = MPI_SUCCESS;
    if (round_complete()) {
        return true;
    }
    if (!backend_) {
        return false;
    }
    try {
        if (backend_->progress()) {
            // Also a failed round that awaits the sender (awaits_peer_): every byte of it is
            // in, so the sender has nothing left to write.
            mark_complete_locked();
        }
    } catch (const Error& e) {
        *failed = e.code();  // the engine fails the pair and tells the peer
        return false;
    }
    return round_complete();
}

bool Transfer::wants_every_pass() const
{
    if (kind() == Kind::Send && needs_peer_ready() && peer_ready_round() < round()) {
        return true;
    }
    return backend_ != nullptr && backend_->wants_mpi_progress();
}

void Transfer::release_backend_locked()
{
    settled_backend_.store(nullptr);
    ready_backend_.store(nullptr);
    backend_.reset();
    retired_.clear();
}

void Transfer::mark_complete_locked()
{
    // sync: release makes the received data and round_error_ visible to the completer.
    complete_.store(true, std::memory_order_release);
}

void Transfer::describe_locked(char* out, std::size_t n) const noexcept
{
    static const char* const pairings[] = {"unpaired", "paired", "failed"};
    char backend[384] = "no backend";
    if (backend_) {
        backend_->describe(backend, sizeof backend);
    }
    std::snprintf(out, n,
                  "transfer %llu (peer transfer %llu): %s peer=%d tag=%d comm=%llx parts=%d "
                  "count=%lld %s round=%llu %s%s peer_ready=%llu started=%d error=%d | %s",
                  static_cast<unsigned long long>(id_), static_cast<unsigned long long>(peer_id_),
                  ep_.kind == Kind::Send ? "send" : "recv", ep_.peer, ep_.tag,
                  static_cast<unsigned long long>(ep_.comm_key), ep_.partitions,
                  static_cast<long long>(ep_.count),
                  pairings[static_cast<int>(pairing_.load(std::memory_order_relaxed))],
                  static_cast<unsigned long long>(round_.load(std::memory_order_relaxed)),
                  complete_.load(std::memory_order_relaxed) ? "complete" : "RUNNING",
                  awaits_peer() ? " (failed, awaiting the sender's AbortAck)" : "",
                  static_cast<unsigned long long>(peer_ready_.load(std::memory_order_relaxed)),
                  ever_started_ ? 1 : 0, error_.load(std::memory_order_relaxed), backend);
}

void ActiveList::add(const std::shared_ptr<Transfer>& t)
{
    if (!t->in_active_list_) {
        t->in_active_list_ = true;
        list_.push_back(t);
        count_.fetch_add(1, std::memory_order_relaxed);
    }
}

void ActiveList::remove(Transfer& t)
{
    if (!t.in_active_list_) {
        return;
    }
    const auto it =
        std::find_if(list_.begin(), list_.end(),
                     [&t](const std::shared_ptr<Transfer>& p) { return p.get() == &t; });
    if (it != list_.end()) {
        erase_at(static_cast<std::size_t>(it - list_.begin()));
    } else {
        t.in_active_list_ = false;
    }
}

void ActiveList::erase_at(std::size_t i)
{
    // The flag first: the list's reference may be the last one on the transfer.
    list_[i]->in_active_list_ = false;
    if (i + 1 != list_.size()) {
        list_[i] = std::move(list_.back());
    }
    list_.pop_back();
    count_.fetch_sub(1, std::memory_order_relaxed);
}

void ActiveList::clear()
{
    for (auto& t : list_) {
        t->in_active_list_ = false;
    }
    list_.clear();
    count_.store(0, std::memory_order_relaxed);
}

}  // namespace mpipcl::progress
