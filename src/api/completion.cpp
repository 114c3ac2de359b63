// SPDX-License-Identifier: BSD-3-Clause
// Wrapped MPI_Start*/Wait*/Test*/Request_free/Request_get_status/Cancel: arrays may mix our
// requests, ordinary ones and MPI_REQUEST_NULL; with no partitioned request alive every call
// goes straight to PMPI after one relaxed load.
#include <mpi.h>

#include <vector>

#include "common/error.hpp"
#include "mpipcl.h"
#include "progress/backoff.hpp"
#include "progress/engine.hpp"
#include "requests/registry.hpp"
#include "requests/request.hpp"

using mpipcl::ErrId;
using mpipcl::error_code;
using mpipcl::raise_error;
using mpipcl::progress::Backoff;
using mpipcl::progress::Engine;
using mpipcl::requests::HandleRegistry;
using mpipcl::requests::Request;
using mpipcl::requests::set_empty_status;

namespace {

HandleRegistry& reg() { return HandleRegistry::instance(); }

/// Our request behind @p h, or null (also when no partitioned request exists).
Request* ours(MPI_Request h) { return reg().empty() ? nullptr : reg().find(h); }

bool any_ours(int n, const MPI_Request* reqs)
{
    if (reg().empty() || reqs == nullptr) {
        return false;
    }
    for (int i = 0; i < n; ++i) {
        if (reg().find(reqs[i]) != nullptr) {
            return true;
        }
    }
    return false;
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

    Others(int n, const MPI_Request* user, const std::vector<char>& skip)
    {
        for (int i = 0; i < n; ++i) {
            if (!skip[i] && reg().find(user[i]) == nullptr) {
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

/// Array errors: MPI_ERR_IN_STATUS when statuses carry them, raised on the failing request.
int finish_array(int rc, MPI_Comm comm, const char* fn)
{
    return rc == MPI_SUCCESS ? rc : raise_error(comm, rc, fn);
}

}  // namespace

extern "C" {

MPIPCL_API int MPI_Start(MPI_Request* request)
{
    Request* r = request == nullptr ? nullptr : ours(*request);
    if (r == nullptr) {
        return PMPI_Start(request);
    }
    if (r->is_active()) {
        return raise_error(r->endpoint().comm, error_code(ErrId::ActiveRequest), "MPI_Start");
    }
    try {
        if (r->null_peer()) {
            Engine::instance().start_local(*r);
        } else {
            Engine::instance().start(r->shared_from_this());
        }
    } catch (const mpipcl::Error& e) {
        return raise_error(r->endpoint().comm, e.code(), "MPI_Start");
    } catch (...) {
        return raise_error(r->endpoint().comm, MPI_ERR_INTERN, "MPI_Start");
    }
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    if (!any_ours(count, array_of_requests)) {
        return PMPI_Startall(count, array_of_requests);
    }
    std::vector<char> skip(count, 0);
    for (int i = 0; i < count; ++i) {
        if (reg().find(array_of_requests[i]) != nullptr) {
            skip[i] = 1;
            if (const int rc = MPI_Start(&array_of_requests[i]); rc != MPI_SUCCESS) {
                return rc;
            }
        }
    }
    Others o(count, array_of_requests, skip);
    return o.size() == 0 ? MPI_SUCCESS : PMPI_Startall(o.size(), o.reqs.data());
}

MPIPCL_API int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
    Request* r = request == nullptr ? nullptr : ours(*request);
    if (r == nullptr) {
        return PMPI_Test(request, flag, status);
    }
    int err = MPI_SUCCESS;
    *flag = r->try_complete(status, &err) ? 1 : 0;
    return err == MPI_SUCCESS ? err : raise_error(r->endpoint().comm, err, "MPI_Test");
}

MPIPCL_API int MPI_Wait(MPI_Request* request, MPI_Status* status)
{
    Request* r = request == nullptr ? nullptr : ours(*request);
    if (r == nullptr) {
        return PMPI_Wait(request, status);
    }
    int err = MPI_SUCCESS;
    Backoff b = mpipcl::progress::user_wait_backoff();
    while (!r->try_complete(status, &err)) {
        b.pause();
    }
    return err == MPI_SUCCESS ? err : raise_error(r->endpoint().comm, err, "MPI_Wait");
}

MPIPCL_API int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                MPI_Status array_of_statuses[])
{
    if (!any_ours(count, array_of_requests)) {
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    }
    Engine::instance().progress();
    // All-or-nothing: first make sure every partitioned request is done, without touching any.
    std::vector<char> skip(count, 0);
    for (int i = 0; i < count; ++i) {
        if (Request* r = reg().find(array_of_requests[i])) {
            skip[i] = 1;
            if (r->is_active() && !r->round_complete()) {
                *flag = 0;
                return MPI_SUCCESS;
            }
        }
    }
    Others o(count, array_of_requests, skip);
    int rc = MPI_SUCCESS;
    if (o.size() > 0) {
        int f = 0;
        rc = PMPI_Testall(o.size(), o.reqs.data(), &f, o.st(array_of_statuses));
        if (!f && rc == MPI_SUCCESS) {
            *flag = 0;
            return MPI_SUCCESS;
        }
        for (int k = 0; k < o.size(); ++k) {
            o.put_back(k, array_of_requests, array_of_statuses, o.index[k]);
        }
    }
    MPI_Comm err_comm = mpipcl::default_error_comm();
    bool failed = rc != MPI_SUCCESS;
    for (int i = 0; i < count; ++i) {
        if (!skip[i]) {
            continue;
        }
        Request* r = reg().find(array_of_requests[i]);
        int err = MPI_SUCCESS;
        r->try_complete(status_at(array_of_statuses, i), &err);
        if (err != MPI_SUCCESS) {
            failed = true;
            err_comm = r->endpoint().comm;
        }
    }
    *flag = 1;
    if (failed) {
        return finish_array(array_of_statuses == MPI_STATUSES_IGNORE ? MPI_ERR_OTHER
                                                                     : MPI_ERR_IN_STATUS,
                            err_comm, "MPI_Testall");
    }
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (!any_ours(count, array_of_requests)) {
        return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    }
    std::vector<char> done(count, 0);
    std::vector<char> mine(count, 0);
    for (int i = 0; i < count; ++i) {
        mine[i] = reg().find(array_of_requests[i]) != nullptr;
    }
    Others o(count, array_of_requests, mine);
    bool others_done = o.size() == 0;
    bool failed = false;
    MPI_Comm err_comm = mpipcl::default_error_comm();
    int pending_mine = 0;
    for (int i = 0; i < count; ++i) {
        pending_mine += mine[i];
    }
    Backoff b = mpipcl::progress::user_wait_backoff();
    while (pending_mine > 0 || !others_done) {
        bool moved = false;
        for (int i = 0; i < count; ++i) {
            if (!mine[i] || done[i]) {
                continue;
            }
            Request* r = reg().find(array_of_requests[i]);
            int err = MPI_SUCCESS;
            if (r->try_complete(status_at(array_of_statuses, i), &err)) {
                done[i] = 1;
                --pending_mine;
                moved = true;
                if (err != MPI_SUCCESS) {
                    failed = true;
                    err_comm = r->endpoint().comm;
                }
            }
        }
        if (!others_done) {
            int f = 1;
            int rc = MPI_SUCCESS;
            if (pending_mine == 0) {
                rc = PMPI_Waitall(o.size(), o.reqs.data(), o.st(array_of_statuses));
            } else {
                rc = PMPI_Testall(o.size(), o.reqs.data(), &f, o.st(array_of_statuses));
            }
            if (f || rc != MPI_SUCCESS) {
                others_done = true;
                moved = true;
                failed = failed || rc != MPI_SUCCESS;
                for (int k = 0; k < o.size(); ++k) {
                    o.put_back(k, array_of_requests, array_of_statuses, o.index[k]);
                }
            }
        }
        if (moved) {
            b.reset();
        } else {
            b.pause();
        }
    }
    if (failed) {
        return finish_array(array_of_statuses == MPI_STATUSES_IGNORE ? MPI_ERR_OTHER
                                                                     : MPI_ERR_IN_STATUS,
                            err_comm, "MPI_Waitall");
    }
    if (array_of_statuses != MPI_STATUSES_IGNORE) {
        for (int i = 0; i < count; ++i) {
            array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
        }
    }
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                MPI_Status* status)
{
    if (!any_ours(count, array_of_requests)) {
        return PMPI_Testany(count, array_of_requests, index, flag, status);
    }
    Engine::instance().progress();
    bool any_active = false;
    std::vector<char> mine(count, 0);
    for (int i = 0; i < count; ++i) {
        Request* r = reg().find(array_of_requests[i]);
        if (r == nullptr) {
            continue;
        }
        mine[i] = 1;
        if (!r->is_active()) {
            continue;  // inactive: ignored like MPI_REQUEST_NULL
        }
        any_active = true;
        if (r->round_complete()) {
            int err = MPI_SUCCESS;
            r->try_complete(status, &err);
            *index = i;
            *flag = 1;
            return err == MPI_SUCCESS ? err : raise_error(r->endpoint().comm, err, "MPI_Testany");
        }
    }
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
    if (f && !any_active) {
        *index = MPI_UNDEFINED;
        *flag = 1;
        set_empty_status(status);
        return MPI_SUCCESS;
    }
    *flag = 0;
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index, MPI_Status* status)
{
    if (!any_ours(count, array_of_requests)) {
        return PMPI_Waitany(count, array_of_requests, index, status);
    }
    Backoff b = mpipcl::progress::user_wait_backoff();
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
    if (!any_ours(incount, array_of_requests)) {
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    }
    Engine::instance().progress();
    int out = 0;
    bool any_active = false;
    bool failed = false;
    MPI_Comm err_comm = mpipcl::default_error_comm();
    std::vector<char> mine(incount, 0);
    for (int i = 0; i < incount; ++i) {
        Request* r = reg().find(array_of_requests[i]);
        if (r == nullptr) {
            continue;
        }
        mine[i] = 1;
        if (!r->is_active()) {
            continue;
        }
        any_active = true;
        if (r->round_complete()) {
            int err = MPI_SUCCESS;
            r->try_complete(status_at(array_of_statuses, out), &err);
            if (err != MPI_SUCCESS) {
                failed = true;
                err_comm = r->endpoint().comm;
            }
            array_of_indices[out++] = i;
        }
    }
    Others o(incount, array_of_requests, mine);
    std::vector<int> idx(o.size());
    int k_out = MPI_UNDEFINED;
    int rc = PMPI_Testsome(o.size(), o.reqs.data(), &k_out, idx.data(), o.st(array_of_statuses));
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        return rc;
    }
    failed = failed || rc == MPI_ERR_IN_STATUS;
    if (k_out != MPI_UNDEFINED) {
        for (int j = 0; j < k_out; ++j) {
            const int k = idx[j];
            array_of_requests[o.index[k]] = o.reqs[k];
            if (array_of_statuses != MPI_STATUSES_IGNORE) {
                array_of_statuses[out] = o.statuses[j];
            }
            array_of_indices[out++] = o.index[k];
        }
    }
    if (out == 0 && !any_active && k_out == MPI_UNDEFINED) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    *outcount = out;
    if (failed) {
        return finish_array(array_of_statuses == MPI_STATUSES_IGNORE ? MPI_ERR_OTHER
                                                                     : MPI_ERR_IN_STATUS,
                            err_comm, "MPI_Testsome");
    }
    if (array_of_statuses != MPI_STATUSES_IGNORE) {
        for (int j = 0; j < out; ++j) {
            array_of_statuses[j].MPI_ERROR = MPI_SUCCESS;
        }
    }
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (!any_ours(incount, array_of_requests)) {
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    }
    Backoff b = mpipcl::progress::user_wait_backoff();
    for (;;) {
        const int rc = MPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                                    array_of_statuses);
        if (rc != MPI_SUCCESS || *outcount != 0) {
            return rc;
        }
        b.pause();
    }
}

MPIPCL_API int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status)
{
    Request* r = ours(request);
    if (r == nullptr) {
        return PMPI_Request_get_status(request, flag, status);
    }
    *flag = r->peek(status) ? 1 : 0;
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Request_free(MPI_Request* request)
{
    Request* r = request == nullptr ? nullptr : ours(*request);
    if (r == nullptr) {
        return PMPI_Request_free(request);
    }
    if (r->is_active()) {
        return raise_error(r->endpoint().comm, error_code(ErrId::ActiveRequest),
                           "MPI_Request_free");
    }
    MPI_Request handle = *request;
    auto owned = reg().erase(handle);  // before the handle goes back to MPI
    try {
        if (!owned->null_peer()) {
            Engine::instance().remove(owned);
        }
    } catch (const mpipcl::Error& e) {
        PMPI_Request_free(&handle);
        *request = MPI_REQUEST_NULL;
        return raise_error(owned->endpoint().comm, e.code(), "MPI_Request_free");
    }
    PMPI_Request_free(&handle);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

MPIPCL_API int MPI_Cancel(MPI_Request* request)
{
    Request* r = request == nullptr ? nullptr : ours(*request);
    if (r == nullptr) {
        return PMPI_Cancel(request);
    }
    if (r->is_active()) {
        return raise_error(r->endpoint().comm, error_code(ErrId::ActiveRequest), "MPI_Cancel");
    }
    return MPI_SUCCESS;
}

}  // extern "C"
