// SPDX-License-Identifier: BSD-3-Clause
// The backend module table: what the factory (src/progress/backends.cpp) may ask of a backend
// beyond the Backend interface (process set-up, offer, creation, data tags), as plain function
// pointers each backend fills in for itself and registers under its BackendKind. The factory
// looks modules up by kind, so no layer above the backends names one of them.
//
// Registration: each backend's .cpp has a namespace-scope BackendModuleRegistrar. libmpipcl is
// only built SHARED (src/CMakeLists.txt), so every one of its objects is linked in and its
// static initializers run when the library is loaded, before main() and so before MPI_Init*.
// The order of those initializers across files is unspecified, which is harmless here: the
// slot table (backend_module.cpp) is zero-initialized and each registered BackendModule is a
// constexpr object, both constant-initialized before any dynamic initializer runs; a registrar
// only stores a pointer. Lookups happen after MPI_Init*, when loading is over (no lock needed).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "common/backend.hpp"
#include "common/config.hpp"

namespace mpipcl {

/// One backend's entry points. Every pointer is set, except auto_messages (null: the backend
/// takes the message count from the handshake as it is).
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
};

/// Stores @p module (which must outlive the process: a namespace-scope constexpr object) under
/// module.kind. Runs during static initialization: never throws. A second module of the same
/// kind makes the kind unresolvable (backend_module() returns null), so a build that links two
/// fails at MPI_Init* instead of silently keeping one of them.
void register_backend_module(const BackendModule& module) noexcept;

/// The module registered for @p kind, or null (none, or more than one).
const BackendModule* backend_module(BackendKind kind) noexcept;

/// True when every pointer a module must set is set.
bool backend_module_complete(const BackendModule& module) noexcept;

/// A namespace-scope object of this type in a backend's .cpp registers its table at load time.
struct BackendModuleRegistrar {
    explicit BackendModuleRegistrar(const BackendModule& module) noexcept
    {
        register_backend_module(module);
    }
};

}  // namespace mpipcl
