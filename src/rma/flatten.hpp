// SPDX-License-Identifier: BSD-3-Clause
// Datatype flattening for the RMA backend: decodes a datatype (MPI_Type_get_envelope/contents)
// into byte blocks, so the sender can Put into the receiver's layout with an equivalent byte
// datatype (holes stay untouched, nothing is packed).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "rma/blocks.hpp"

namespace mpipcl::rma {

/// Decodes @p type into @p out (at most @p cap blocks). Returns false when the type cannot be
/// described this way (too many blocks, MPI_COMBINER_DARRAY, a predefined type with internal
/// holes such as MPI_SHORT_INT, a failing MPI call); the caller then uses another path.
bool flatten_type(MPI_Datatype type, std::size_t cap, Flat* out);

/// Builds the committed byte datatype equivalent to @p flat (hindexed MPI_BYTE blocks, resized
/// to flat's lb/extent), or MPI_BYTE for a contiguous one. Throws Error.
MPI_Datatype byte_datatype(const Flat& flat);

}  // namespace mpipcl::rma
