// SPDX-License-Identifier: BSD-3-Clause
// The backend module table: what the factory (src/progress/backends.cpp) may ask of a backend
// beyond the Backend interface (process set-up, offer, creation, data tags), as plain function
// pointers. Each backend defines its table as a constant (kPersistentModule in
// persistent/backend.cpp, kRmaModule in rma/module.cpp); the factory looks them up by
// BackendKind, so no layer above the backends includes one of them. Both backends are always
// linked (rma/disabled.cpp stands in without RMA), so a missing table is a link error.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "common/assert.hpp"
#include "common/backend.hpp"
#include "common/config.hpp"

namespace mpipcl {

/// One backend's entry points. Every pointer is set, except auto_messages (null: the backend
/// takes the message count from the handshake as it is) and packs (null: no packed layout).
struct BackendModule {
    BackendKind kind = BackendKind::Persistent;
    /// In MPI_Init* (collective over @p comm, the engine's private communicator): process-wide
    /// resources. Never throws; a failure makes available() false.
    void (*init)(MPI_Comm comm) noexcept = nullptr;
    /// In MPI_Finalize, after every backend of this kind was released.
    void (*finalize)() noexcept = nullptr;
    /// Requests of this kind can be created.
    bool (*available)() noexcept = nullptr;
    /// Why available() is false (for error messages and the fallback warning).
    const char* (*unavailable_reason)() noexcept = nullptr;
    /// Sender, before its Setup leaves: this backend can send from @p ep.
    bool (*can_send)(const Endpoint& ep) noexcept = nullptr;
    /// The sender's Setup for this backend.
    Offer (*make_offer)(const Endpoint& ep, const RequestOptions& opts) = nullptr;
    /// Builds the backend for agreement @p a on the private communicator @p comm; null when
    /// this buffer or datatype cannot use it, with *why_not (a static string) saying why: the
    /// module only reports, the factory decides what to do and logs it. Throws Error.
    std::unique_ptr<Backend> (*create)(const Endpoint& ep, const RequestOptions& opts,
                                       const Agreement& a, MPI_Comm comm,
                                       const char** why_not) = nullptr;
    /// Data tags the receiver must reserve for @p a (a.messages resolved); 0 for none.
    int (*tags_needed)(const Agreement& a) = nullptr;
    /// Automatic message count: @p send_partitions, @p total_bytes, the smallest message
    /// @p min_bytes and at most @p cap messages.
    int (*auto_messages)(int send_partitions, std::int64_t total_bytes, std::int64_t min_bytes,
                         int cap) = nullptr;
    /// Receiver, at pairing (a.messages resolved): whether agreement @p a with receive side
    /// @p ep uses the backend's packed layout; null for a backend without one.
    bool (*packs)(const Endpoint& ep, const Agreement& a) noexcept = nullptr;
};

/// The two tables, constant-initialized (usable before and after main).
extern const BackendModule kPersistentModule;
extern const BackendModule kRmaModule;

/// The table of @p kind: persistent or rma (the only kinds with a backend module).
inline const BackendModule& backend_module(BackendKind kind) noexcept
{
    MPIPCL_ASSERT(kind == BackendKind::Persistent || kind == BackendKind::Rma,
                  "only persistent and rma have a backend module");
    return kind == BackendKind::Rma ? kRmaModule : kPersistentModule;
}

}  // namespace mpipcl
