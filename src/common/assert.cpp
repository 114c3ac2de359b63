// SPDX-License-Identifier: BSD-3-Clause
// The failure path of MPIPCL_ASSERT.
#include "common/assert.hpp"

#include <mpi.h>

#include <cstdlib>

#include "common/log.hpp"

namespace mpipcl::detail {

void assert_fail(const char* file, int line, const char* expr, const char* msg) noexcept
{
    log::write(log::Level::Error, file, line, "assertion failed: %s: %s", expr, msg);
    int initialized = 0;
    int finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) {
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::abort();
}

}  // namespace mpipcl::detail
