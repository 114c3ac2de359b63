// SPDX-License-Identifier: BSD-3-Clause
// The backend factory: owns the rules for choosing between the backends, falling back and
// reserving data tags. It names no concrete backend: it reaches them through their module
// tables (common/backend_module.hpp), by BackendKind, and never includes src/persistent or
// src/rma (cmake/check_layers.cmake enforces it).
#pragma once

#include <mpi.h>

#include <memory>

#include "common/backend.hpp"
#include "common/config.hpp"
#include "progress/tags.hpp"

namespace mpipcl::progress::backends {

/// MPI_Init* (collective over the private communicator @p comm): process-wide resources of
/// the backends (the RMA window). Never throws: a failure makes rma unavailable.
void init(MPI_Comm comm) noexcept;
/// MPI_Finalize, after every backend was released.
void finalize() noexcept;

/// At init of a request: settles the backend asked for (by the info key mpipcl_backend or
/// MPIPCL_BACKEND). A hint this process cannot honour never fails the init: "rma" without a
/// window and "native" on an MPI without partitioned calls become "persistent", with one
/// info line per process and backend asked for. "native" otherwise is returned as is (the
/// API layer forwards it to the MPI library). "auto" becomes what Config::auto_table's rule
/// for @p total_bytes says ("rma" only when the window exists, else "persistent"; the rule's
/// message count fills in an automatic opts->messages): both sides of a correct pair have the
/// same total, so with the same table they choose alike, and agree() settles any difference.
BackendKind resolve(RequestOptions* opts, std::int64_t total_bytes);

/// Receiver, at pairing: the backend of a pair whose sender offered @p sender and whose
/// receiver resolved @p receiver: that backend when both are the same, else "persistent",
/// which works with any peer. Deterministic, so two processes whose explicit requests or
/// tuning tables differ still agree; create() may still fall back from "rma" afterwards.
BackendKind agree(BackendKind sender, BackendKind receiver) noexcept;

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
