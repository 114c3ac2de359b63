// SPDX-License-Identifier: BSD-3-Clause
// Running gnuplot on a script the benchmarks wrote.
#include "gnuplot.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

extern char** environ;

namespace mpipcl::bench {

void run_gnuplot(const std::string& script_path, const char* program)
{
    char gnuplot[] = "gnuplot";
    std::vector<char> script(script_path.begin(), script_path.end());
    script.push_back('\0');
    char* argv[] = {gnuplot, script.data(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, gnuplot, nullptr, nullptr, argv, environ);
    if (rc != 0) {
        std::fprintf(stderr,
                     "%s: warning: cannot run gnuplot (%s); plot skipped, script left in %s\n",
                     program, std::strerror(rc), script_path.c_str());
        return;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "%s: warning: gnuplot failed on %s; no plot written\n", program,
                     script_path.c_str());
    }
}

}  // namespace mpipcl::bench
