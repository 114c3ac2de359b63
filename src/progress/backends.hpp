// SPDX-License-Identifier: BSD-3-Clause
// The backend factory: owns the rules for choosing between the backends, falling back and
// reserving data tags. It names no concrete backend: it reaches them through the module tables
// they register (common/backend_module.hpp), by BackendKind, and never includes src/persistent
// or src/rma (cmake/check_layers.cmake enforces it).
#pragma once

#include <mpi.h>

#include <memory>

#include "common/backend.hpp"
#include "common/config.hpp"
#include "progress/tags.hpp"

namespace mpipcl::progress::backends {

/// MPI_Init* (collective over the private communicator @p comm): process-wide resources of
/// the backends (the RMA window). First checks that the modules the rules need (persistent,
/// rma) are registered, once each and complete, and throws Error (MPI_ERR_INTERN) before any
/// module's init when one is not; the modules' own init never throws.
void init(MPI_Comm comm);
/// MPI_Finalize, after every backend was released.
void finalize() noexcept;

/// At init of a request: settles the backend asked for. "rma" without a window is an error
/// when the request's info asked for it (MPI_ERR_UNSUPPORTED_OPERATION), and falls back to
/// "persistent" with one warning when only MPIPCL_BACKEND did. "native" is returned as is (the
/// API layer forwards it to the MPI library). "auto" becomes "rma" for transfers of at least
/// Config::auto_rma_bytes @p total_bytes when the window exists, else "persistent": both sides
/// of a correct pair have the same total, so they choose alike. Throws Error.
BackendKind resolve(RequestOptions* opts, std::int64_t total_bytes);

/// Sender, before its Setup leaves: what it asks for (a send datatype that RMA cannot
/// describe asks for "persistent").
Offer offer(const Endpoint& ep, const RequestOptions& opts);

/// Builds the backend of a pair for @p a (on the receiver a.backend is the backend both asked
/// for or "persistent"). The receiver settles the agreement it then sends in its Reply: falls
/// back from rma to persistent when its buffer or datatype cannot use RMA (one log line),
/// resolves the message count and reserves data tags from @p tags. Throws Error.
std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, Agreement* a,
                                TagAllocator* tags, MPI_Comm comm);

}  // namespace mpipcl::progress::backends
