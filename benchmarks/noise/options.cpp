// SPDX-License-Identifier: BSD-3-Clause
// Command-line parsing of mpipcl-bench: strict, so a typo never silently changes the experiment.
#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace mpipcl::bench {

namespace {

constexpr int kMaxPartitions = 1024;  // one thread each
constexpr double kMaxComputeMs = 60e3;

/// A bad command line; what() is the message shown to the user.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::vector<std::string> split(const std::string& list)
{
    std::vector<std::string> items;
    std::stringstream stream(list);
    for (std::string item; std::getline(stream, item, ',');) {
        items.push_back(item);
    }
    if (list.empty() || list.back() == ',') {
        items.emplace_back();
    }
    return items;
}

long long parse_integer(const std::string& flag, const std::string& text, long long low,
                        long long high)
{
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
        throw UsageError(flag + ": '" + text + "' is not an integer");
    }
    if (value < low || value > high) {
        throw UsageError(flag + ": " + text + " is out of range [" + std::to_string(low) + ", " +
                         std::to_string(high) + "]");
    }
    return value;
}

double parse_real(const std::string& flag, const std::string& text, double high)
{
    errno = 0;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) {
        throw UsageError(flag + ": '" + text + "' is not a number");
    }
    if (value < 0 || value > high) {
        throw UsageError(flag + ": " + text + " is out of range [0, " + std::to_string(high) + "]");
    }
    return value;
}

/// "64K", "1M", "4096": bytes with an optional binary suffix K, M or G.
std::size_t parse_size(const std::string& text)
{
    std::string digits = text;
    std::size_t scale = 1;
    const char suffix =
        text.empty() ? '\0'
                     : static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (const auto power = std::string("KMG").find(suffix); power != std::string::npos) {
        scale = std::size_t{1} << (10 * (power + 1));
        digits.pop_back();
    }
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        throw UsageError("--sizes: '" + text + "' is not a size (bytes, e.g. 4096, 64K, 1M)");
    }
    const auto count = static_cast<std::size_t>(parse_integer("--sizes", digits, 0, INT_MAX));
    const std::size_t bytes = count * scale;
    if (bytes == 0) {
        throw UsageError("--sizes: a size must be at least 1 byte");
    }
    if (bytes > static_cast<std::size_t>(INT_MAX)) {
        throw UsageError("--sizes: " + text + " exceeds the largest single MPI_Send (2 GiB - 1)");
    }
    return bytes;
}

std::vector<Mode> parse_modes(const std::string& list)
{
    std::vector<Mode> modes;
    for (const auto& name : split(list)) {
        const auto* it = std::find_if(std::begin(kAllModes), std::end(kAllModes),
                                      [&](Mode m) { return name == mode_name(m); });
        if (it == std::end(kAllModes)) {
            throw UsageError("--modes: unknown mode '" + name +
                             "' (valid: single, multi, part-persistent, part-rma, part-native)");
        }
        if (std::find(modes.begin(), modes.end(), *it) != modes.end()) {
            throw UsageError("--modes: '" + name + "' is listed twice");
        }
        modes.push_back(*it);
    }
    return modes;
}

std::vector<Side> parse_side(const std::string& text)
{
    if (text == "send") {
        return {Side::send};
    }
    if (text == "recv") {
        return {Side::recv};
    }
    if (text == "both") {
        return {Side::send, Side::recv};
    }
    throw UsageError("--side: '" + text + "' is not send, recv or both");
}

void parse_into(Options& o, int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        std::string value;
        bool has_value = false;
        if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag.resize(eq);
            has_value = true;
        }
        auto take = [&]() -> const std::string& {
            if (!has_value) {
                if (i + 1 >= argc) {
                    throw UsageError(flag + " needs a value");
                }
                value = argv[++i];
                has_value = true;
            }
            return value;
        };
        auto no_value = [&] {
            if (has_value) {
                throw UsageError(flag + " takes no value");
            }
        };

        if (flag == "--help" || flag == "-h") {
            no_value();
            o.help = true;
        } else if (flag == "--verify") {
            no_value();
            o.verify = true;
        } else if (flag == "--modes") {
            o.modes = parse_modes(take());
            o.modes_given = true;
        } else if (flag == "--sizes") {
            o.sizes.clear();
            for (const auto& s : split(take())) {
                const std::size_t bytes = parse_size(s);
                if (std::find(o.sizes.begin(), o.sizes.end(), bytes) != o.sizes.end()) {
                    throw UsageError("--sizes: " + s + " is listed twice");
                }
                o.sizes.push_back(bytes);
            }
        } else if (flag == "--partitions") {
            o.partitions = static_cast<int>(parse_integer(flag, take(), 1, kMaxPartitions));
        } else if (flag == "--compute-ms") {
            o.compute_ms = parse_real(flag, take(), kMaxComputeMs);
        } else if (flag == "--noise") {
            o.noise_pct = parse_real(flag, take(), 1000.0);
        } else if (flag == "--side") {
            o.sides = parse_side(take());
        } else if (flag == "--iterations") {
            o.iterations = static_cast<int>(parse_integer(flag, take(), 1, 1000000));
        } else if (flag == "--warmup") {
            o.warmup = static_cast<int>(parse_integer(flag, take(), 0, 1000000));
        } else if (flag == "--seed") {
            o.seed = static_cast<unsigned>(parse_integer(flag, take(), 0, UINT_MAX));
        } else if (flag == "--csv") {
            o.csv = take();
        } else if (flag == "--plot") {
            o.plot = take();
        } else {
            throw UsageError("unknown flag '" + flag + "'");
        }
        if (has_value && value.empty()) {
            throw UsageError(flag + " needs a non-empty value");
        }
    }
    for (const std::size_t bytes : o.sizes) {
        if (bytes % static_cast<std::size_t>(o.partitions) != 0) {
            throw UsageError("--sizes: " + std::to_string(bytes) +
                             " bytes is not a multiple of --partitions " +
                             std::to_string(o.partitions));
        }
    }
}

}  // namespace

const char* mode_name(Mode mode)
{
    switch (mode) {
        case Mode::single:
            return "single";
        case Mode::multi:
            return "multi";
        case Mode::part_persistent:
            return "part-persistent";
        case Mode::part_rma:
            return "part-rma";
        case Mode::part_native:
            return "part-native";
    }
    return "?";
}

const char* side_name(Side side) { return side == Side::send ? "send" : "recv"; }

std::string backend_of(Mode mode)
{
    switch (mode) {
        case Mode::part_persistent:
            return "persistent";
        case Mode::part_rma:
            return "rma";
        case Mode::part_native:
            return "native";
        default:
            return {};
    }
}

ParsedOptions parse_options(int argc, char** argv)
{
    ParsedOptions parsed;
    try {
        parse_into(parsed.options, argc, argv);
    } catch (const UsageError& e) {
        parsed.error = e.what();
    }
    return parsed;
}

std::string usage()
{
    return R"(usage: mpiexec -n 2 mpipcl-bench [flags]
Early-bird / noise benchmark of partitioned communication (rank 0 sends, rank 1 receives).
Each iteration, T sender threads "compute" (sleep) C ms, one of them C*(1+N/100) ms, then hand
over their part; the sender measures the perceived time from the last thread's hand-over to
the receiver's acknowledgement.

  --modes LIST       comma list of single, multi, part-persistent, part-rma, part-native
                     (default: every mode this MPI and mpipcl support)
  --sizes LIST       total bytes per transfer, suffixes K, M, G (default 64K,256K,1M,4M,16M,64M)
  --partitions T     sender threads = partitions on both sides, 1..1024 (default 16)
  --compute-ms C     compute time per thread in ms (default 10)
  --noise N          extra compute of the one laggard thread, percent of C (default 4)
  --side S           send (perceived bandwidth), recv (early arrival) or both (default both)
  --iterations I     measured iterations per point (default 20)
  --warmup W         discarded iterations per point (default 2)
  --seed S           seed of the laggard choice (default 1)
  --verify           check every received byte every iteration (exit 1 on a mismatch)
  --csv FILE         write one row per (mode, side, size) with every parameter and statistic
  --plot FILE.png    plot perceived bandwidth against size with gnuplot
  --help             this text
Exit codes: 0 ok, 1 data mismatch under --verify, 2 bad command line or environment,
3 an MPI call failed.
)";
}

}  // namespace mpipcl::bench
