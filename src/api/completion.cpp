// SPDX-License-Identifier: BSD-3-Clause
// Wrapped MPI_Start*/Wait*/Test*/Request_free/Request_get_status/Cancel: arrays may mix our
// requests, ordinary ones and MPI_REQUEST_NULL; with no partitioned request alive every call
// goes straight to PMPI after one relaxed load. Every entry into one of our requests holds a
// registry reference for as long as it is inside it.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "mpipcl.h"
#include "progress/engine.hpp"
#include "requests/registry.hpp"
#include "requests/request.hpp"

using mpipcl::api_guard;
using mpipcl::ApiCall;
using mpipcl::Backoff;
using mpipcl::ErrId;
using mpipcl::error_code;
using mpipcl::requests::HandleRegistry;
using mpipcl::requests::Poll;
using mpipcl::requests::raise_on;
using mpipcl::requests::Request;
using mpipcl::requests::set_empty_status;
using Ref = mpipcl::requests::HandleRegistry::Ref;

namespace {

HandleRegistry& reg() { return HandleRegistry::instance(); }

/// Our request behind @p h, or empty (also when none exists). A light reference (no atomic
/// read-modify-write; a counted one when this thread already holds a light one): the calls on
/// one request (Start, Test, Wait, Request_get_status, Cancel) hold it in the calling thread
/// only, as MPI_Pready does.
Ref ours(MPI_Request h) { return reg().empty() ? Ref{} : reg().acquire_light(h); }

/// A request array with at least one of our requests in it. Holds a reference on each of ours
/// (an empty Ref at every other position), packs the others (ordinary requests and
/// MPI_REQUEST_NULL) for one PMPI call, merges their handles, statuses and errors back into
/// the user's arrays, and keeps the first error of the call. Statuses of an array call always
/// carry MPI_ERROR: MPI_SUCCESS when nothing failed, else the call returns MPI_ERR_IN_STATUS
/// (with MPI_STATUSES_IGNORE: the failing request's own code).
class MixedArray {
   public:
    /// Takes references on ours among @p reqs; false (nothing allocated) when there are none,
    /// and then the call belongs to PMPI as it is. @p statuses may be MPI_STATUSES_IGNORE (also
    /// for the calls with one status: they merge none).
    bool split(int n, MPI_Request* reqs, MPI_Status* statuses)
    {
        if (reg().empty() || reqs == nullptr || n <= 0) {
            return false;
        }
        for (int i = 0; i < n; ++i) {
            if (Ref r = reg().acquire(reqs[i])) {
                mine_.resize(n);
                mine_[i] = std::move(r);
            }
        }
        n_ = n;
        user_ = reqs;
        statuses_ = statuses;
        return !mine_.empty();
    }

    int size() const { return n_; }
    /// Ours at position @p i, or empty.
    Ref& mine(int i) { return mine_[i]; }
    /// How many are ours.
    int mine_count() const
    {
        return static_cast<int>(
            std::count_if(mine_.begin(), mine_.end(), [](const Ref& r) { return bool(r); }));
    }
    /// The user's status slot @p i (MPI_STATUS_IGNORE without statuses).
    MPI_Status* status(int i) const
    {
        return statuses_ == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses_[i];
    }

    /// Completes ours at @p i if its round is complete (status into @p st); notes its error.
    bool complete_mine(int i, MPI_Status* st, Poll poll = Poll::Test)
    {
        int err = MPI_SUCCESS;
        if (!mine_[i]->try_complete(st, &err, poll)) {
            return false;
        }
        note(err, mine_[i]->comm());
        return true;
    }

    /// The others, packed (built on first use).
    int others()
    {
        pack();
        return static_cast<int>(reqs_.size());
    }
    MPI_Request* other_requests()
    {
        pack();
        return reqs_.data();
    }
    /// The user's position of other @p k.
    int other_position(int k) const { return index_[k]; }

    /// PMPI_Testall on the others: false while they are not all complete (nothing merged),
    /// else true with every handle and status back in its place.
    bool test_others_all()
    {
        if (others() == 0) {
            return true;
        }
        int f = 0;
        const int rc = PMPI_Testall(others(), reqs_.data(), &f, packed_statuses());
        if (!f && rc == MPI_SUCCESS) {
            return false;
        }
        for (int k = 0; k < others(); ++k) {
            merge(k, k, index_[k], rc);
        }
        note(rc, MPI_COMM_NULL);
        return true;
    }

    /// PMPI_Testsome on the others: the completed ones go back, their statuses and positions
    /// appended at *out in @p indices. Returns PMPI's code; *done gets its outcount.
    int test_others_some(int* indices, int* out, int* done)
    {
        std::vector<int> idx(others());
        *done = MPI_UNDEFINED;
        const int rc = PMPI_Testsome(others(), reqs_.data(), done, idx.data(), packed_statuses());
        for (int j = 0; *done != MPI_UNDEFINED && j < *done; ++j) {
            merge(idx[j], j, *out, rc);
            indices[(*out)++] = index_[idx[j]];
        }
        note(rc, MPI_COMM_NULL);
        return rc;
    }

    /// Puts other @p k's handle back (a completed request may have become MPI_REQUEST_NULL).
    void put_back(int k) { user_[index_[k]] = reqs_[k]; }

    /// Notes @p code (the first error wins) of a request on @p comm (MPI_COMM_NULL: not ours).
    void note(int code, MPI_Comm comm)
    {
        if (code != MPI_SUCCESS && err_ == MPI_SUCCESS) {
            err_ = code;
            err_comm_ = comm;
        }
    }

    /// The call's result once @p filled statuses (from the start) are written: MPI_SUCCESS
    /// with each MPI_ERROR set to MPI_SUCCESS, or the first error: raised on the communicator
    /// of ours that failed, or, when an ordinary request failed first, returned as it is (the
    /// PMPI call already invoked that request's error handler).
    int finish(ApiCall& call, int filled)
    {
        if (err_ == MPI_SUCCESS) {
            for (int j = 0; statuses_ != MPI_STATUSES_IGNORE && j < filled; ++j) {
                statuses_[j].MPI_ERROR = MPI_SUCCESS;
            }
            return MPI_SUCCESS;
        }
        const int code = statuses_ == MPI_STATUSES_IGNORE ? err_ : MPI_ERR_IN_STATUS;
        if (err_comm_ == MPI_COMM_NULL) {
            return code;
        }
        call.on(err_comm_);
        return call.raise(code);
    }

   private:
    void pack()
    {
        if (packed_) {
            return;
        }
        for (int i = 0; i < n_; ++i) {
            if (!mine_[i]) {
                index_.push_back(i);
                reqs_.push_back(user_[i]);
            }
        }
        packed_statuses_.resize(statuses_ == MPI_STATUSES_IGNORE ? 0 : reqs_.size());
        packed_ = true;
    }
    MPI_Status* packed_statuses()
    {
        return statuses_ == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : packed_statuses_.data();
    }
    /// Other @p k back in the user's array; its PMPI status @p from to the user's slot @p to.
    void merge(int k, int from, int to, int rc)
    {
        put_back(k);
        if (statuses_ != MPI_STATUSES_IGNORE) {
            statuses_[to] = packed_statuses_[from];
            if (rc == MPI_ERR_IN_STATUS) {
                note(packed_statuses_[from].MPI_ERROR, MPI_COMM_NULL);
            }
        }
    }

    int n_ = 0;
    MPI_Request* user_ = nullptr;
    MPI_Status* statuses_ = MPI_STATUSES_IGNORE;
    std::vector<Ref> mine_;
    bool packed_ = false;
    std::vector<int> index_;  // user's position of each other
    std::vector<MPI_Request> reqs_;
    std::vector<MPI_Status> packed_statuses_;
    int err_ = MPI_SUCCESS;
    MPI_Comm err_comm_ = MPI_COMM_NULL;
};

/// MPI_Start on one of ours: the caller's reference must be the only one (threads still
/// inside the previous round finish first). Errors go to its communicator.
int start_one(Ref& r, ApiCall& call)
{
    call.on(r->comm());
    if (r->is_active()) {
        return call.raise(ErrId::ActiveRequest);
    }
    HandleRegistry::wait_sole(r);
    return call.raise(r->start());
}

/// MPI_Startall: the same request twice would wait for itself (start_one waits until it holds
/// the only reference): erroneous, refused before anything starts. The request that is there
/// twice, or null.
Request* duplicate(MixedArray& a)
{
    std::vector<Request*> seen;
    for (int i = 0; i < a.size(); ++i) {
        if (a.mine(i)) {
            seen.push_back(a.mine(i).get());
        }
    }
    std::sort(seen.begin(), seen.end());
    const auto dup = std::adjacent_find(seen.begin(), seen.end());
    return dup == seen.end() ? nullptr : *dup;
}

/// MPI_Testany's look at ours: the first complete one (pass 0: already complete; pass 1:
/// after driving progress), completed into @p status. *any_active: one of ours is active.
bool complete_any_mine(MixedArray& a, int pass, MPI_Status* status, int* index, int* err,
                       bool* any_active)
{
    for (int i = 0; i < a.size(); ++i) {
        Ref& r = a.mine(i);
        if (!r || !r->is_active()) {
            continue;  // inactive: ignored like MPI_REQUEST_NULL
        }
        *any_active = true;
        if (pass == 0 ? r->done() : r->peek(MPI_STATUS_IGNORE)) {
            r->try_complete(status, err);
            *index = i;
            return true;
        }
    }
    return false;
}

mpipcl::progress::Engine& engine() { return mpipcl::progress::Engine::instance(); }

/// Every partitioned request of @p a that is not @p done satisfies @p pred.
template <class Pred>
bool every_pending_mine(MixedArray& a, const std::vector<char>& done, Pred pred)
{
    for (std::size_t i = 0; i < done.size(); ++i) {
        const int k = static_cast<int>(i);
        if (a.mine(k) && done[i] == 0 && !pred(*a.mine(k))) {
            return false;
        }
    }
    return true;
}

/// The event and offload modes' wait (Engine::waits_sleep): until @p done(poll) (which makes
/// a pass) is true, sleeps on the doorbell between passes. The count is read before the pass,
/// so a ring during it ends the sleep at once. In the event mode the wait polls instead, as
/// the thread mode's does, for kEventBurstNs after each ring (the peer's next piece often
/// follows, and a sleeping waiter would pay a wake-up for each) and while @p finishing() (a
/// receive with all but its last piece in: that one often comes after the longest gap). A
/// pass that polls next skips its turn while another thread is in one (Poll::Wait); a pass
/// that may sleep next waits for the engine lock (Poll::Test), or what the other pass left
/// would wait for the next ring.
template <class Done, class Finishing>
void sleep_until(Done&& done, Finishing&& finishing)
{
    using Clock = std::chrono::steady_clock;
    struct Waiting {  // the progress thread stands down while this thread waits
        Waiting() { engine().wait_begins(); }
        ~Waiting() { engine().wait_ends(); }
        Waiting(const Waiting&) = delete;
        Waiting& operator=(const Waiting&) = delete;
    } waiting;
    const bool bursts = engine().waits_poll_after_rings();
    Backoff b = mpipcl::user_wait_backoff();
    auto burst_end = Clock::time_point::min();
    std::uint32_t seen = engine().rings();
    for (;;) {
        const bool polls = bursts && (finishing() || Clock::now() < burst_end);
        if (done(polls ? Poll::Wait : Poll::Test)) {
            return;
        }
        if (polls) {
            b.pause();
        } else {
            engine().await_ring(seen);
        }
        const std::uint32_t rung = engine().rings();
        if (rung != seen && bursts) {
            burst_end = Clock::now() + std::chrono::nanoseconds(mpipcl::kEventBurstNs);
            b.reset();
        }
        seen = rung;
    }
}

/// Frees a request's MPI handle when MPI_Request_free leaves, whatever release() did.
struct HandleFree {
    MPI_Request* request;
    ~HandleFree()
    {
        int finalized = 0;
        PMPI_Finalized(&finalized);
        if (!finalized) {
            PMPI_Request_free(request);  // after MPI_Finalize the handle died with MPI
        }
        *request = MPI_REQUEST_NULL;
    }
};

}  // namespace

extern "C" {

MPIPCL_API int MPI_Start(MPI_Request* request)
{
    return api_guard("MPI_Start", [&](ApiCall& call) -> int {
        Ref r = request == nullptr ? Ref{} : ours(*request);
        return r ? start_one(r, call) : PMPI_Start(request);
    });
}

MPIPCL_API int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    return api_guard("MPI_Startall", [&](ApiCall& call) -> int {
        MixedArray a;
        if (!a.split(count, array_of_requests, MPI_STATUSES_IGNORE)) {
            return PMPI_Startall(count, array_of_requests);
        }
        if (Request* dup = duplicate(a)) {
            call.on(dup->comm());
            return call.raise(ErrId::ActiveRequest);
        }
        for (int i = 0; i < count; ++i) {
            if (a.mine(i)) {
                if (const int rc = start_one(a.mine(i), call); rc != MPI_SUCCESS) {
                    return rc;
                }
            }
        }
        // Starting leaves persistent handles as they are: nothing to merge back.
        return a.others() == 0 ? MPI_SUCCESS : PMPI_Startall(a.others(), a.other_requests());
    });
}

MPIPCL_API int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
    return api_guard("MPI_Test", [&](ApiCall& call) -> int {
        Ref r = request == nullptr ? Ref{} : ours(*request);
        if (!r) {
            return PMPI_Test(request, flag, status);
        }
        if (flag == nullptr) {
            return raise_on(call, *r, error_code(ErrId::NullArg));
        }
        int err = MPI_SUCCESS;
        *flag = r->try_complete(status, &err) ? 1 : 0;
        return raise_on(call, *r, err);
    });
}

MPIPCL_API int MPI_Wait(MPI_Request* request, MPI_Status* status)
{
    return api_guard("MPI_Wait", [&](ApiCall& call) -> int {
        Ref r = request == nullptr ? Ref{} : ours(*request);
        if (!r) {
            return PMPI_Wait(request, status);
        }
        call.on(r->comm());
        int err = MPI_SUCCESS;
        if (engine().waits_sleep()) {
            sleep_until([&](Poll poll) { return r->try_complete(status, &err, poll); },
                        [&] { return r->finishing(); });
            return call.raise(err);
        }
        // Polls and yields, or sleeps between passes while two or more pieces are to come.
        const int sleep_after = mpipcl::config().wait_sleep_after_us;
        Backoff b = mpipcl::user_wait_backoff();
        Backoff between = mpipcl::user_wait_between_pieces(sleep_after);
        while (!r->try_complete(status, &err, Poll::Wait)) {
            (sleep_after >= 0 && r->expects_more() ? between : b).pause();
        }
        return call.raise(err);
    });
}

MPIPCL_API int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                           MPI_Status array_of_statuses[])
{
    return api_guard("MPI_Testall", [&](ApiCall& call) -> int {
        MixedArray a;
        if (!a.split(count, array_of_requests, array_of_statuses)) {
            return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
        }
        if (flag == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        // All-or-nothing: first make sure every partitioned request is done, without
        // touching any (peek drives progress and waits for the engine lock).
        for (int i = 0; i < count; ++i) {
            if (a.mine(i) && !a.mine(i)->peek(MPI_STATUS_IGNORE)) {
                *flag = 0;
                return MPI_SUCCESS;
            }
        }
        if (!a.test_others_all()) {
            *flag = 0;
            return MPI_SUCCESS;
        }
        for (int i = 0; i < count; ++i) {
            if (a.mine(i)) {
                a.complete_mine(i, a.status(i));
            }
        }
        *flag = 1;
        return a.finish(call, count);
    });
}

MPIPCL_API int MPI_Waitall(int count, MPI_Request array_of_requests[],
                           MPI_Status array_of_statuses[])
{
    return api_guard("MPI_Waitall", [&](ApiCall& call) -> int {
        MixedArray a;
        if (!a.split(count, array_of_requests, array_of_statuses)) {
            return PMPI_Waitall(count, array_of_requests, array_of_statuses);
        }
        std::vector<char> done(count, 0);
        int pending_mine = a.mine_count();
        bool others_done = a.others() == 0;
        if (others_done && engine().waits_sleep()) {
            sleep_until(
                [&](Poll poll) {
                    for (int i = 0; i < count; ++i) {
                        if (a.mine(i) && !done[i] && a.complete_mine(i, a.status(i), poll)) {
                            done[i] = 1;
                            --pending_mine;
                        }
                    }
                    return pending_mine == 0;
                },
                [&] {
                    return every_pending_mine(a, done, [](Request& r) { return r.finishing(); });
                });
            return a.finish(call, count);
        }
        // As MPI_Wait's: sleeps between passes while every partitioned request left expects two
        // or more pieces and no other request is pending.
        const int sleep_after = mpipcl::config().wait_sleep_after_us;
        const auto expect_more = [](Request& r) { return r.expects_more(); };
        Backoff b = mpipcl::user_wait_backoff();
        Backoff between = mpipcl::user_wait_between_pieces(sleep_after);
        while (pending_mine > 0 || !others_done) {
            bool moved = false;
            for (int i = 0; i < count; ++i) {
                if (a.mine(i) && !done[i] && a.complete_mine(i, a.status(i), Poll::Wait)) {
                    done[i] = 1;
                    --pending_mine;
                    moved = true;
                }
            }
            // The others are polled with PMPI_Testall (back-off between passes), never a
            // blocking PMPI_Waitall: Open MPI 4.1's blocking wait can miss the completion of a
            // truncated receive that the progress thread's MPI call completed, and then never
            // returns (bad_input.waitall_statuses_ordinary_truncate).
            if (!others_done && a.test_others_all()) {
                others_done = true;
                moved = true;
            }
            if (moved) {
                b.reset();
                between.reset();
            } else if (others_done && sleep_after >= 0 &&
                       every_pending_mine(a, done, expect_more)) {
                between.pause();
            } else {
                b.pause();
            }
        }
        return a.finish(call, count);
    });
}

MPIPCL_API int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                           MPI_Status* status)
{
    return api_guard("MPI_Testany", [&](ApiCall& call) -> int {
        MixedArray a;
        if (!a.split(count, array_of_requests, MPI_STATUSES_IGNORE)) {
            return PMPI_Testany(count, array_of_requests, index, flag, status);
        }
        if (flag == nullptr || index == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        bool any_active = false;
        for (int pass = 0; pass < 2; ++pass) {
            int err = MPI_SUCCESS;
            if (complete_any_mine(a, pass, status, index, &err, &any_active)) {
                *flag = 1;
                call.on(a.mine(*index)->comm());
                return call.raise(err);
            }
            if (pass == 0) {
                int k = MPI_UNDEFINED;
                int f = 0;
                const int rc = PMPI_Testany(a.others(), a.other_requests(), &k, &f, status);
                if (rc != MPI_SUCCESS || (f && k != MPI_UNDEFINED)) {
                    if (k != MPI_UNDEFINED) {
                        a.put_back(k);
                        *index = a.other_position(k);
                    }
                    *flag = f;
                    return rc;
                }
                if (f && !any_active) {  // nothing active anywhere
                    *index = MPI_UNDEFINED;
                    *flag = 1;
                    set_empty_status(status);
                    return MPI_SUCCESS;
                }
            }
        }
        *flag = 0;
        return MPI_SUCCESS;
    });
}

MPIPCL_API int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index,
                           MPI_Status* status)
{
    return api_guard("MPI_Waitany", [&](ApiCall&) -> int {
        if (reg().empty()) {
            return PMPI_Waitany(count, array_of_requests, index, status);
        }
        Backoff b = mpipcl::user_wait_backoff();
        for (;;) {
            int flag = 0;
            const int rc = MPI_Testany(count, array_of_requests, index, &flag, status);
            if (flag || rc != MPI_SUCCESS) {
                return rc;
            }
            b.pause();
        }
    });
}

MPIPCL_API int MPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[])
{
    return api_guard("MPI_Testsome", [&](ApiCall& call) -> int {
        MixedArray a;
        if (!a.split(incount, array_of_requests, array_of_statuses)) {
            return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                                 array_of_statuses);
        }
        if (outcount == nullptr || array_of_indices == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        int out = 0;
        bool any_active = false;
        for (int i = 0; i < incount; ++i) {
            if (!a.mine(i) || !a.mine(i)->is_active()) {
                continue;
            }
            any_active = true;
            if (a.mine(i)->peek(MPI_STATUS_IGNORE)) {
                a.complete_mine(i, a.status(out));
                array_of_indices[out++] = i;
            }
        }
        int others_done = MPI_UNDEFINED;
        const int rc = a.test_others_some(array_of_indices, &out, &others_done);
        if (out == 0 && !any_active && others_done == MPI_UNDEFINED && rc == MPI_SUCCESS) {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        *outcount = out;  // set even on an error: completed requests are never lost
        return a.finish(call, out);
    });
}

MPIPCL_API int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[])
{
    return api_guard("MPI_Waitsome", [&](ApiCall&) -> int {
        if (reg().empty()) {
            return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                                 array_of_statuses);
        }
        Backoff b = mpipcl::user_wait_backoff();
        for (;;) {
            const int rc = MPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                                        array_of_statuses);
            if (rc != MPI_SUCCESS || outcount == nullptr || *outcount != 0) {
                return rc;
            }
            b.pause();
        }
    });
}

MPIPCL_API int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status)
{
    return api_guard("MPI_Request_get_status", [&](ApiCall& call) -> int {
        Ref r = ours(request);
        if (!r) {
            return PMPI_Request_get_status(request, flag, status);
        }
        call.on(r->comm());
        if (flag == nullptr) {
            return call.raise(ErrId::NullArg);
        }
        *flag = r->peek(status) ? 1 : 0;
        return MPI_SUCCESS;
    });
}

MPIPCL_API int MPI_Request_free(MPI_Request* request)
{
    return api_guard("MPI_Request_free", [&](ApiCall& call) -> int {
        bool closing = false;
        Ref r = request == nullptr || reg().empty() ? Ref{} : reg().acquire(*request, &closing);
        if (!r) {
            return closing ? call.raise(ErrId::ActiveRequest) : PMPI_Request_free(request);
        }
        call.on(r->comm());
        if (!r->begin_free()) {
            return call.raise(ErrId::ActiveRequest);
        }
        Request* req = r.get();
        if (!reg().close(r)) {  // waits for every other thread inside it to leave
            return call.raise(ErrId::ActiveRequest);
        }
        // Whatever release() reports, the request and its handle are gone afterwards.
        const HandleFree handle_free{request};
        const std::unique_ptr<Request> owned(req);
        owned->release();
        return MPI_SUCCESS;
    });
}

MPIPCL_API int MPI_Cancel(MPI_Request* request)
{
    return api_guard("MPI_Cancel", [&](ApiCall& call) -> int {
        Ref r = request == nullptr ? Ref{} : ours(*request);
        if (!r) {
            return PMPI_Cancel(request);
        }
        call.on(r->comm());
        return r->is_active() ? call.raise(ErrId::ActiveRequest) : MPI_SUCCESS;
    });
}

}  // extern "C"
