// SPDX-License-Identifier: BSD-3-Clause
// What a process and mpipcl's progress thread cost in CPU: getrusage and /proc.
#include "cpu_usage.hpp"

#include <dirent.h>
#include <mpipcl.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace mpipcl::bench {

namespace {

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; }

std::string task_path(const std::string& tid, const char* file)
{
    return "/proc/self/task/" + tid + "/" + file;
}

bool is_progress_thread(const std::string& tid)
{
    std::ifstream comm(task_path(tid, "comm"));
    std::string name;
    return std::getline(comm, name) && name == MPIPCL_PROGRESS_THREAD_NAME;
}

/// The task id of the progress thread, or "" (the last one found is tried first).
std::string progress_tid()
{
    static std::string cached;
    if (!cached.empty() && is_progress_thread(cached)) {
        return cached;
    }
    cached.clear();
    DIR* dir = opendir("/proc/self/task");
    if (dir == nullptr) {
        return cached;
    }
    while (const dirent* entry = readdir(dir)) {
        const std::string tid = entry->d_name;
        if (tid[0] != '.' && is_progress_thread(tid)) {
            cached = tid;
            break;
        }
    }
    closedir(dir);
    return cached;
}

}  // namespace

CpuSample cpu_sample()
{
    CpuSample s;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    s.process = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    s.progress = NAN;
    s.progress_wakeups = NAN;
    const std::string tid = progress_tid();
    if (tid.empty()) {
        return s;
    }
    std::ifstream schedstat(task_path(tid, "schedstat"));
    double on_cpu_ns = NAN;
    if (schedstat >> on_cpu_ns) {
        s.progress = on_cpu_ns * 1e-9;
    }
    std::ifstream status(task_path(tid, "status"));
    const std::string key = "voluntary_ctxt_switches:";
    for (std::string line; std::getline(status, line);) {
        if (line.rfind(key, 0) == 0) {
            s.progress_wakeups = std::strtod(line.c_str() + key.size(), nullptr);
        }
    }
    return s;
}

CpuSample cpu_per_iteration(const CpuSample& from, const CpuSample& to, int iterations)
{
    const double n = iterations > 0 ? iterations : NAN;
    return CpuSample{(to.process - from.process) / n, (to.progress - from.progress) / n,
                     (to.progress_wakeups - from.progress_wakeups) / n};
}

}  // namespace mpipcl::bench
