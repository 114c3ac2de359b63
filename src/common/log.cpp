// SPDX-License-Identifier: BSD-3-Clause
// The only place in src/ that prints.
#include "common/log.hpp"

#include <mpi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace mpipcl::log {

int g_level = static_cast<int>(Level::Warn);

void write(Level level, const char* file, int line, const char* fmt, ...)
{
    static const char* const names[] = {"error", "warn", "info", "debug", "trace"};
    int rank = -1;
    int initialized = 0;
    int finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "[mpipcl r%d t%ld] %s: %s (%s:%d)\n", rank,
                 static_cast<long>(syscall(SYS_gettid)), names[static_cast<int>(level)], msg, file,
                 line);
}

}  // namespace mpipcl::log
