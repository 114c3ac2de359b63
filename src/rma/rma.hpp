// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend's module functions (src/rma): module.cpp places them in its module table
// (common/backend_module.hpp); backend.cpp defines them, or disabled.cpp in a build
// without RMA (MPIPCL_ENABLE_RMA=OFF: available() is false with its reason, and nothing else is
// ever called). Only src/rma includes this header: the factory (src/progress/backends.cpp)
// reaches these functions through the table, by BackendKind::Rma.
#pragma once

#include <mpi.h>

#include <memory>

#include "common/backend.hpp"

namespace mpipcl::rma {

/// In MPI_Init* (collective over @p comm, the engine's private communicator): creates the
/// process's dynamic window unless MPIPCL_RMA=0. Never throws; a failure is logged once.
void init(MPI_Comm comm) noexcept;
/// In MPI_Finalize, after every backend was released: frees the window and its memory.
void finalize() noexcept;
/// The window exists: rma requests can be created.
bool available() noexcept;
/// Why available() is false (for the error message of MPI_Psend_init/MPI_Precv_init).
const char* unavailable_reason() noexcept;

/// Sender, before the Setup leaves: the send datatype can be described as byte blocks.
bool can_send(const Endpoint& ep) noexcept;

/// The sender's Setup for this backend: put units (mpipcl_messages or 0 = one per send
/// partition) and the notification mode it asks for.
Offer make_offer(const Endpoint& ep, const RequestOptions& opts);

/// Builds the RMA backend. Receiver: flattens its datatype, attaches its buffer and allocates
/// its flags; returns null when that is impossible for this buffer (overlap with an attached
/// region, attach limit, datatype that cannot be flattened), with *why_not saying why; the
/// factory then decides (it uses the persistent backend). Sender: builds the Put datatypes
/// from the Reply (a.peer_extra). @p comm (the private communicator) is not used: the window
/// is process-wide. Throws Error. Engine lock held.
std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, const Agreement& a,
                                MPI_Comm comm, const char** why_not);

}  // namespace mpipcl::rma
