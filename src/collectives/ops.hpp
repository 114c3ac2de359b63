// SPDX-License-Identifier: BSD-3-Clause
// The reduction ops of the partitioned collectives (reduce, allreduce).
#pragma once

#include <mpi.h>

namespace mpipcl::collectives {

/// The number MPI_Op @p op has in the collectives' signature: 1.. for a predefined op, 0 for
/// a user op (its handle means nothing on another process).
int op_number(MPI_Op op) noexcept;
/// MPI_SUCCESS when @p op may reduce @p type (the standard's table of predefined ops on
/// predefined types; a derived type is checked on the named types it is built from; a user op
/// takes any type), else MPI_ERR_OP's code.
int check_op(MPI_Op op, MPI_Datatype type);

}  // namespace mpipcl::collectives
