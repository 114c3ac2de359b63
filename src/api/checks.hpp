// SPDX-License-Identifier: BSD-3-Clause
// Argument checks the init calls share (api/partitioned.cpp, api/collectives.cpp).
#pragma once

#include <mpi.h>

#include "progress/transfer.hpp"

namespace mpipcl::api {

/// MPI_Init* went through libmpipcl and MPI_Finalize did not run yet.
bool library_initialized();

/// The checks of an init call's datatype and total size (partitions > 0, count >= 0); fills
/// the sizes into @p args and returns the total in bytes. Throws Error.
MPI_Count check_buffer(int partitions, MPI_Count count, MPI_Datatype datatype,
                       progress::TransferArgs* args);

}  // namespace mpipcl::api
