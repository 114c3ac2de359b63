// SPDX-License-Identifier: BSD-3-Clause
// Tuning file parser and the built-in tables of mpipcl_backend=auto.
#include "common/tuning.hpp"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/assert.hpp"

namespace mpipcl::tuning {

namespace {

constexpr int kMaxMessages = 1 << 20;           // as the info key mpipcl_messages
constexpr std::size_t kMaxFileBytes = 1 << 20;  // a tuning file has a few dozen lines

/// Parses `<digits>[K|M|G]` into bytes; false when malformed, negative or overflowing.
bool parse_bytes(const std::string& word, std::int64_t* out)
{
    if (word.empty() || word[0] < '0' || word[0] > '9') {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    if (errno != 0) {
        return false;
    }
    std::int64_t scale = 1;
    if (*end != '\0') {
        switch (*end) {
            case 'K':
            case 'k':
                scale = std::int64_t{1} << 10;
                break;
            case 'M':
            case 'm':
                scale = std::int64_t{1} << 20;
                break;
            case 'G':
            case 'g':
                scale = std::int64_t{1} << 30;
                break;
            default:
                return false;
        }
        if (end[1] != '\0') {
            return false;
        }
    }
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(v), scale, &bytes)) {
        return false;
    }
    *out = bytes;
    return true;
}

bool parse_messages(const std::string& word, int* out)
{
    if (word.empty() || word[0] < '0' || word[0] > '9') {
        return false;
    }
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (*end != '\0' || v > kMaxMessages) {
        return false;
    }
    *out = static_cast<int>(v);
    return true;
}

std::string line_error(int line, const std::string& why)
{
    return "line " + std::to_string(line) + ": " + why;
}

}  // namespace

Table::Table(std::vector<Rule> rules) : rules_(std::move(rules))
{
    std::sort(rules_.begin(), rules_.end(),
              [](const Rule& a, const Rule& b) { return a.min_bytes < b.min_bytes; });
    MPIPCL_ASSERT(std::adjacent_find(rules_.begin(), rules_.end(),
                                     [](const Rule& a, const Rule& b) {
                                         return a.min_bytes == b.min_bytes;
                                     }) == rules_.end(),
                  "the callers give distinct min_bytes (parse_table rejects a repeated one)");
}

const Rule* Table::find(std::int64_t total_bytes) const noexcept
{
    const auto after =
        std::upper_bound(rules_.begin(), rules_.end(), total_bytes,
                         [](std::int64_t t, const Rule& r) { return t < r.min_bytes; });
    return after == rules_.begin() ? nullptr : &*(after - 1);
}

Table Table::rma_from(std::int64_t bytes)
{
    if (bytes <= 0) {
        return Table();
    }
    return Table({Rule{bytes, BackendKind::Rma, 0}});
}

bool parse(const std::string& text, Table* out, std::string* error)
{
    std::vector<Rule> rules;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (const auto hash = line.find('#'); hash != std::string::npos) {
            line.erase(hash);
        }
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words),
                                   std::istream_iterator<std::string>()};
        if (w.empty()) {
            continue;
        }
        if (w.size() > 3) {
            *error = line_error(number, "expected <min_total_bytes> <backend> [messages]");
            return false;
        }
        Rule r;
        if (!parse_bytes(w[0], &r.min_bytes)) {
            *error = line_error(number, "'" + w[0] +
                                            "' is not a byte count (an integer >= 0 with an "
                                            "optional K, M or G suffix)");
            return false;
        }
        if (w.size() < 2) {
            *error = line_error(number, "no backend after the byte count");
            return false;
        }
        if (w[1] == "persistent") {
            r.backend = BackendKind::Persistent;
        } else if (w[1] == "rma") {
            r.backend = BackendKind::Rma;
        } else {
            *error = line_error(number, "backend '" + w[1] + "' is not persistent|rma");
            return false;
        }
        if (w.size() == 3 && !parse_messages(w[2], &r.messages)) {
            *error = line_error(number, "messages '" + w[2] + "' is not an integer in [0, " +
                                            std::to_string(kMaxMessages) + "]");
            return false;
        }
        for (const Rule& seen : rules) {
            if (seen.min_bytes == r.min_bytes) {
                *error = line_error(number, "a rule for " + w[0] + " bytes is already given");
                return false;
            }
        }
        rules.push_back(r);
    }
    *out = Table(std::move(rules));
    return true;
}

LoadResult load_file(const std::string& path, Table* out, std::string* error)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        *error = path + ": " + std::strerror(errno);
        return LoadResult::Missing;
    }
    std::string text;
    char chunk[4096];
    while (f.read(chunk, sizeof chunk) || f.gcount() > 0) {
        text.append(chunk, static_cast<std::size_t>(f.gcount()));
        if (text.size() > kMaxFileBytes) {
            *error = path + ": larger than 1 MiB, not a tuning file";
            return LoadResult::Malformed;
        }
    }
    if (!f.eof()) {  // e.g. a directory
        *error = path + ": cannot be read";
        return LoadResult::Malformed;
    }
    std::string why;
    if (!parse(text, out, &why)) {
        *error = path + ": " + why;
        return LoadResult::Malformed;
    }
    return LoadResult::Loaded;
}

std::string mpi_flavour()
{
#if defined(OMPI_MAJOR_VERSION)
    return "openmpi" + std::to_string(OMPI_MAJOR_VERSION);
#elif defined(MPICH_NUMVERSION)
    return "mpich" + std::to_string(MPICH_NUMVERSION / 10000000);
#else
    return "mpi";
#endif
}

std::string default_path()
{
    const std::string name = "/mpipcl/tuning-" + mpi_flavour();
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && xdg[0] == '/') {
        return xdg + name;
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
        return std::string(home) + "/.config" + name;
    }
    return std::string();
}

Table builtin()
{
    // persistent with automatic messages at every size, on every MPI flavour: the auto table
    // (cmake/bench_auto.sh; docs/benchmarks.md, "The auto table") finds no size where rma is
    // faster on the send side beyond the spread of the repeat medians, on one host or over
    // TCP. A machine where it is writes a tuning file (mpipcl-bench --write-tuning).
    return Table();
}

}  // namespace mpipcl::tuning
