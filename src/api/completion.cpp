// SPDX-License-Identifier: BSD-3-Clause
// Wrapped MPI_Start*/Wait*/Test*/Request_free/Request_get_status/Cancel: arrays may mix our
// requests, ordinary ones and MPI_REQUEST_NULL; with no partitioned request alive every call
// goes straight to PMPI after one relaxed load. Every entry into one of our requests holds a
// registry reference for as long as it is inside it.
#include <mpi.h>

#include <algorithm>
#include <new>
#include <vector>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "mpipcl.h"
#include "requests/registry.hpp"
#include "requests/request.hpp"

using mpipcl::Backoff;
using mpipcl::ErrId;
using mpipcl::error_code;
using mpipcl::raise_error;
using mpipcl::requests::HandleRegistry;
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

/// References to our requests in @p reqs (empty entries for the others); false when there
/// are none, and then nothing was allocated.
bool collect(int n, const MPI_Request* reqs, std::vector<Ref>* refs)
{
    if (reg().empty() || reqs == nullptr || n <= 0) {
        return false;
    }
    bool any = false;
    for (int i = 0; i < n; ++i) {
        if (Ref r = reg().acquire(reqs[i])) {
            if (refs->empty()) {
                refs->resize(n);
            }
            (*refs)[i] = std::move(r);
            any = true;
        }
    }
    return any;
}

MPI_Status* status_at(MPI_Status* statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/// The ordinary requests of a mixed array, packed for one PMPI call and scattered back.
struct Others {
    std::vector<int> index;  // position in the user's array
    std::vector<MPI_Request> reqs;
    std::vector<MPI_Status> statuses;

    Others(int n, const MPI_Request* user, const std::vector<Ref>& mine)
    {
        for (int i = 0; i < n; ++i) {
            if (!mine[i]) {
                index.push_back(i);
                reqs.push_back(user[i]);
            }
        }
        statuses.resize(reqs.size());
    }
    int size() const { return static_cast<int>(reqs.size()); }
    MPI_Status* st(MPI_Status* user_statuses)
    {
        return user_statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses.data();
    }
    /// Writes handle k (and its status) back to the user's arrays.
    void put_back(int k, MPI_Request* user, MPI_Status* user_statuses, int out_pos)
    {
        user[index[k]] = reqs[k];
        if (user_statuses != MPI_STATUSES_IGNORE) {
            user_statuses[out_pos] = statuses[k];
        }
    }
};

/// The first error of a multi-request call. With statuses the call returns
/// MPI_ERR_IN_STATUS (each status says which); with MPI_STATUSES_IGNORE the failing request's
/// own code, raised on its communicator.
struct ArrayError {
    int code = MPI_SUCCESS;
    MPI_Comm comm = MPI_COMM_NULL;
    void note(int c, MPI_Comm on)
    {
        if (c != MPI_SUCCESS && code == MPI_SUCCESS) {
            code = c;
            comm = on;
        }
    }
    int finish(const MPI_Status* statuses, const char* fn) const
    {
        if (code == MPI_SUCCESS) {
            return MPI_SUCCESS;
        }
        const MPI_Comm on = comm == MPI_COMM_NULL ? mpipcl::default_error_comm() : comm;
        return raise_error(on, statuses == MPI_STATUSES_IGNORE ? code : MPI_ERR_IN_STATUS, fn);
    }
};

/// Runs @p body; an allocation failure becomes MPI_ERR_NO_MEM and nothing escapes.
template <class F>
int guarded(const char* fn, F&& body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return raise_error(mpipcl::default_error_comm(), MPI_ERR_NO_MEM, fn);
    } catch (...) {
        return raise_error(mpipcl::default_error_comm(), MPI_ERR_INTERN, fn);
    }
}

int null_arg(const char* fn)
{
    return raise_error(mpipcl::default_error_comm(), error_code(ErrId::NullArg), fn);
}

/// MPI_Start on one of ours: the caller's reference must be the only one (threads still
/// inside the previous round finish first).
int start_one(Ref& r)
{
    if (r->is_active()) {
        return raise_error(r->comm(), error_code(ErrId::ActiveRequest), "MPI_Start");
    }
    HandleRegistry::wait_sole(r);
    const int rc = r->start();
    return rc == MPI_SUCCESS ? rc : raise_error(r->comm(), rc, "MPI_Start");
}

}  // namespace

extern "C" {

MPIPCL_API int MPI_Start(MPI_Request* request)
{
    Ref r = request == nullptr ? Ref{} : ours(*request);
    if (!r) {
        return PMPI_Start(request);
    }
    return start_one(r);
}

MPIPCL_API int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    return guarded("MPI_Startall", [&]() -> int {
        std::vector<Ref> mine;
        if (!collect(count, array_of_requests, &mine)) {
            return PMPI_Startall(count, array_of_requests);
        }
        // The same request twice would wait for itself (start_one waits until it holds the
        // only reference): erroneous, refuse it before starting anything.
        std::vector<Request*> seen;
        for (int i = 0; i < count; ++i) {
            if (mine[i]) {
                seen.push_back(mine[i].get());
            }
        }
        std::sort(seen.begin(), seen.end());
        if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
            return raise_error(seen.front()->comm(), error_code(ErrId::ActiveRequest),
                               "MPI_Startall");
        }
        for (int i = 0; i < count; ++i) {
            if (mine[i]) {
                if (const int rc = start_one(mine[i]); rc != MPI_SUCCESS) {
                    return rc;
                }
            }
        }
        Others o(count, array_of_requests, mine);
        return o.size() == 0 ? MPI_SUCCESS : PMPI_Startall(o.size(), o.reqs.data());
    });
}

MPIPCL_API int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
    Ref r = request == nullptr ? Ref{} : ours(*request);
    if (!r) {
        return PMPI_Test(request, flag, status);
    }
    if (flag == nullptr) {
        return raise_error(r->comm(), error_code(ErrId::NullArg), "MPI_Test");
    }
    int err = MPI_SUCCESS;
    *flag = r->try_complete(status, &err) ? 1 : 0;
    return err == MPI_SUCCESS ? err : raise_error(r->comm(), err, "MPI_Test");
}

MPIPCL_API int MPI_Wait(MPI_Request* request, MPI_Status* status)
{
    Ref r = request == nullptr ? Ref{} : ours(*request);
    if (!r) {
        return PMPI_Wait(request, status);
    }
    int err = MPI_SUCCESS;
    Backoff b = mpipcl::user_wait_backoff();
    while (!r->try_complete(status, &err)) {
        b.pause();
    }
    return err == MPI_SUCCESS ? err : raise_error(r->comm(), err, "MPI_Wait");
}

MPIPCL_API int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                           MPI_Status array_of_statuses[])
{
    return guarded("MPI_Testall", [&]() -> int {
        std::vector<Ref> mine;
        if (!collect(count, array_of_requests, &mine)) {
            return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
        }
        if (flag == nullptr) {
            return null_arg("MPI_Testall");
        }
        // All-or-nothing: first make sure every partitioned request is done, without
        // touching any (peek drives progress and waits for the engine lock).
        for (int i = 0; i < count; ++i) {
            if (mine[i] && !mine[i]->peek(MPI_STATUS_IGNORE)) {
                *flag = 0;
                return MPI_SUCCESS;
            }
        }
        Others o(count, array_of_requests, mine);
        ArrayError e;
        if (o.size() > 0) {
            int f = 0;
            const int rc = PMPI_Testall(o.size(), o.reqs.data(), &f, o.st(array_of_statuses));
            if (!f && rc == MPI_SUCCESS) {
                *flag = 0;
                return MPI_SUCCESS;
            }
            for (int k = 0; k < o.size(); ++k) {
                o.put_back(k, array_of_requests, array_of_statuses, o.index[k]);
                if (rc == MPI_ERR_IN_STATUS && array_of_statuses != MPI_STATUSES_IGNORE) {
                    e.note(o.statuses[k].MPI_ERROR, MPI_COMM_NULL);
                }
            }
            e.note(rc == MPI_ERR_IN_STATUS && e.code == MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc,
                   MPI_COMM_NULL);
        }
        for (int i = 0; i < count; ++i) {
            if (mine[i]) {
                int err = MPI_SUCCESS;
                mine[i]->try_complete(status_at(array_of_statuses, i), &err);
                e.note(err, mine[i]->comm());
            }
        }
        *flag = 1;
        if (e.code == MPI_SUCCESS && array_of_statuses != MPI_STATUSES_IGNORE) {
            for (int i = 0; i < count; ++i) {
                array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
        }
        return e.finish(array_of_statuses, "MPI_Testall");
    });
}

MPIPCL_API int MPI_Waitall(int count, MPI_Request array_of_requests[],
                           MPI_Status array_of_statuses[])
{
    return guarded("MPI_Waitall", [&]() -> int {
        std::vector<Ref> mine;
        if (!collect(count, array_of_requests, &mine)) {
            return PMPI_Waitall(count, array_of_requests, array_of_statuses);
        }
        std::vector<char> done(count, 0);
        Others o(count, array_of_requests, mine);
        bool others_done = o.size() == 0;
        ArrayError e;
        int pending_mine = 0;
        for (int i = 0; i < count; ++i) {
            pending_mine += mine[i] ? 1 : 0;
        }
        Backoff b = mpipcl::user_wait_backoff();
        while (pending_mine > 0 || !others_done) {
            bool moved = false;
            for (int i = 0; i < count; ++i) {
                if (!mine[i] || done[i]) {
                    continue;
                }
                int err = MPI_SUCCESS;
                if (mine[i]->try_complete(status_at(array_of_statuses, i), &err)) {
                    done[i] = 1;
                    --pending_mine;
                    moved = true;
                    e.note(err, mine[i]->comm());
                }
            }
            if (!others_done) {
                // Always Testall (with back-off between passes), never a blocking PMPI_Waitall:
                // Open MPI 4.1's blocking wait can miss the completion of a truncated receive
                // that the progress thread's MPI call completed, and then never returns
                // (bad_input.waitall_statuses_ordinary_truncate).
                int f = 0;
                const int rc = PMPI_Testall(o.size(), o.reqs.data(), &f, o.st(array_of_statuses));
                if (f || rc != MPI_SUCCESS) {
                    others_done = true;
                    moved = true;
                    for (int k = 0; k < o.size(); ++k) {
                        o.put_back(k, array_of_requests, array_of_statuses, o.index[k]);
                        if (rc == MPI_ERR_IN_STATUS && array_of_statuses != MPI_STATUSES_IGNORE) {
                            e.note(o.statuses[k].MPI_ERROR, MPI_COMM_NULL);
                        }
                    }
                    e.note(rc, MPI_COMM_NULL);
                }
            }
            if (moved) {
                b.reset();
            } else {
                b.pause();
            }
        }
        if (e.code == MPI_SUCCESS && array_of_statuses != MPI_STATUSES_IGNORE) {
            for (int i = 0; i < count; ++i) {
                array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
        }
        return e.finish(array_of_statuses, "MPI_Waitall");
    });
}

MPIPCL_API int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                           MPI_Status* status)
{
    return guarded("MPI_Testany", [&]() -> int {
        std::vector<Ref> mine;
        if (!collect(count, array_of_requests, &mine)) {
            return PMPI_Testany(count, array_of_requests, index, flag, status);
        }
        if (flag == nullptr || index == nullptr) {
            return null_arg("MPI_Testany");
        }
        bool any_active = false;
        for (int pass = 0; pass < 2; ++pass) {
            for (int i = 0; i < count; ++i) {
                if (!mine[i] || !mine[i]->is_active()) {
                    continue;  // inactive: ignored like MPI_REQUEST_NULL
                }
                any_active = true;
                // First pass: what is already complete; second: drive progress, then look.
                if (pass == 0 ? mine[i]->done() : mine[i]->peek(MPI_STATUS_IGNORE)) {
                    int err = MPI_SUCCESS;
                    mine[i]->try_complete(status, &err);
                    *index = i;
                    *flag = 1;
                    return err == MPI_SUCCESS ? err
                                              : raise_error(mine[i]->comm(), err, "MPI_Testany");
                }
            }
            if (pass == 0) {
                Others o(count, array_of_requests, mine);
                int k = MPI_UNDEFINED;
                int f = 0;
                const int rc = PMPI_Testany(o.size(), o.reqs.data(), &k, &f, status);
                if (rc != MPI_SUCCESS || (f && k != MPI_UNDEFINED)) {
                    if (k != MPI_UNDEFINED) {
                        array_of_requests[o.index[k]] = o.reqs[k];
                        *index = o.index[k];
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
}

MPIPCL_API int MPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[])
{
    return guarded("MPI_Testsome", [&]() -> int {
        std::vector<Ref> mine;
        if (!collect(incount, array_of_requests, &mine)) {
            return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                                 array_of_statuses);
        }
        if (outcount == nullptr || array_of_indices == nullptr) {
            return null_arg("MPI_Testsome");
        }
        int out = 0;
        bool any_active = false;
        ArrayError e;
        for (int i = 0; i < incount; ++i) {
            if (!mine[i] || !mine[i]->is_active()) {
                continue;
            }
            any_active = true;
            if (mine[i]->peek(MPI_STATUS_IGNORE)) {
                int err = MPI_SUCCESS;
                mine[i]->try_complete(status_at(array_of_statuses, out), &err);
                e.note(err, mine[i]->comm());
                array_of_indices[out++] = i;
            }
        }
        Others o(incount, array_of_requests, mine);
        std::vector<int> idx(o.size());
        int k_out = MPI_UNDEFINED;
        const int rc =
            PMPI_Testsome(o.size(), o.reqs.data(), &k_out, idx.data(), o.st(array_of_statuses));
        if (k_out != MPI_UNDEFINED) {
            for (int j = 0; j < k_out; ++j) {
                const int k = idx[j];
                array_of_requests[o.index[k]] = o.reqs[k];
                if (array_of_statuses != MPI_STATUSES_IGNORE) {
                    array_of_statuses[out] = o.statuses[j];
                    if (rc == MPI_ERR_IN_STATUS) {
                        e.note(o.statuses[j].MPI_ERROR, MPI_COMM_NULL);
                    }
                }
                array_of_indices[out++] = o.index[k];
            }
        }
        e.note(rc, MPI_COMM_NULL);
        if (out == 0 && !any_active && k_out == MPI_UNDEFINED && rc == MPI_SUCCESS) {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        *outcount = out;  // set even on an error: completed requests are never lost
        if (e.code == MPI_SUCCESS && array_of_statuses != MPI_STATUSES_IGNORE) {
            for (int j = 0; j < out; ++j) {
                array_of_statuses[j].MPI_ERROR = MPI_SUCCESS;
            }
        }
        return e.finish(array_of_statuses, "MPI_Testsome");
    });
}

MPIPCL_API int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (reg().empty()) {
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    }
    Backoff b = mpipcl::user_wait_backoff();
    for (;;) {
        const int rc =
            MPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
        if (rc != MPI_SUCCESS || outcount == nullptr || *outcount != 0) {
            return rc;
        }
        b.pause();
    }
}

MPIPCL_API int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status)
{
    Ref r = ours(request);
    if (!r) {
        return PMPI_Request_get_status(request, flag, status);
    }
    if (flag == nullptr) {
        return raise_error(r->comm(), error_code(ErrId::NullArg), "MPI_Request_get_status");
    }
    *flag = r->peek(status) ? 1 : 0;
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Request_free(MPI_Request* request)
{
    bool closing = false;
    Ref r = request == nullptr || reg().empty() ? Ref{} : reg().acquire(*request, &closing);
    if (!r) {
        if (closing) {
            return raise_error(mpipcl::default_error_comm(), error_code(ErrId::ActiveRequest),
                               "MPI_Request_free");
        }
        return PMPI_Request_free(request);
    }
    const MPI_Comm comm = r->comm();
    if (!r->begin_free()) {
        return raise_error(comm, error_code(ErrId::ActiveRequest), "MPI_Request_free");
    }
    Request* req = r.get();
    if (!reg().close(r)) {  // waits for every other thread inside it to leave
        return raise_error(comm, error_code(ErrId::ActiveRequest), "MPI_Request_free");
    }
    const int rc = req->release();
    delete req;
    int finalized = 0;
    PMPI_Finalized(&finalized);
    MPI_Request handle = *request;
    if (!finalized) {
        PMPI_Request_free(&handle);  // after MPI_Finalize the handle died with MPI
    }
    *request = MPI_REQUEST_NULL;
    return rc == MPI_SUCCESS ? rc : raise_error(comm, rc, "MPI_Request_free");
}

MPIPCL_API int MPI_Cancel(MPI_Request* request)
{
    Ref r = request == nullptr ? Ref{} : ours(*request);
    if (!r) {
        return PMPI_Cancel(request);
    }
    if (r->is_active()) {
        return raise_error(r->comm(), error_code(ErrId::ActiveRequest), "MPI_Cancel");
    }
    return MPI_SUCCESS;
}

}  // extern "C"
