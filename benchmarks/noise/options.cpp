// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-bench's command line (CLI11): strict, so a typo never silently changes the experiment.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace mpipcl::bench {

namespace {

constexpr int kMaxPartitions = 1024;     // one thread each
constexpr int kMaxReplyBytes = 1 << 20;  // T replies of this many bytes stay below INT_MAX
constexpr double kMaxComputeMs = 60e3;

/// A bad command line; what() is the message shown to the user.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Every --collective and its name, in --help's order.
constexpr std::pair<CollectiveKind, const char*> kCollectives[] = {
    {CollectiveKind::bcast, "bcast"},         {CollectiveKind::reduce, "reduce"},
    {CollectiveKind::allreduce, "allreduce"}, {CollectiveKind::gather, "gather"},
    {CollectiveKind::allgather, "allgather"}, {CollectiveKind::alltoall, "alltoall"},
    {CollectiveKind::neighbor, "neighbor"}};

/// "bcast, reduce, ...": the valid --collective names.
std::string collective_list()
{
    std::string list;
    for (const auto& [kind, name] : kCollectives) {
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return list;
}

CollectiveKind parse_collective(const std::string& name)
{
    for (const auto& [kind, known] : kCollectives) {
        if (name == known) {
            return kind;
        }
    }
    throw UsageError("--collective: unknown collective '" + name +
                     "' (valid: " + collective_list() + ")");
}

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
            throw UsageError(
                "--modes: unknown mode '" + name +
                "' (valid: single, multi, part-persistent, part-rma, part-auto, part-native)");
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
    if (text == "pipeline") {
        return {Side::pipeline};
    }
    if (text == "both") {
        return {Side::send, Side::recv};
    }
    if (text == "all") {
        return {std::begin(kAllSides), std::end(kAllSides)};
    }
    throw UsageError("--side: '" + text + "' is not send, recv, pipeline, both or all");
}

constexpr const char* kDescription =
    R"(Early-bird / noise benchmark of partitioned communication (rank 0 sends, rank 1 receives).
Each iteration, T sender threads compute (sleep, spin or work) C ms over their partitions, one
partition C*N/100 ms longer, handing each partition over as soon as it is computed; the sender
measures the perceived time from the end of the compute to the receiver's acknowledgement. In a pipeline, receiver thread t answers data part t at once
with reply part t, which sender thread t polls for: the per-partition round trips.)";

constexpr const char* kFooter =
    R"(Exit codes: 0 ok, 1 data mismatch under --verify, 2 bad command line or environment,
3 an MPI call failed.)";

std::string join_sizes(const std::vector<std::size_t>& sizes)
{
    std::string text;
    for (const std::size_t bytes : sizes) {
        const bool mib = bytes % (1u << 20) == 0;
        text += (text.empty() ? "" : ",") + std::to_string(mib ? bytes >> 20 : bytes >> 10) +
                (mib ? "M" : "K");
    }
    return text;
}

std::string number(double value)
{
    std::ostringstream text;
    text << value;
    return text.str();
}

/// The command line of mpipcl-bench (CLI11); each flag parses its value into @p o, which must
/// outlive the returned app. Values go through our own parsers, so every bad value is reported
/// with the flag's name and the offending text; the defaults shown come from Options{}.
std::unique_ptr<CLI::App> make_app(Options& o)
{
    const Options defaults;
    auto app = std::make_unique<CLI::App>(kDescription, "mpiexec -n 2 mpipcl-bench");
    app->allow_extras(true);  // unknown arguments get our own message in parse_options
    app->set_help_flag("-h,--help", "print this text and exit");
    app->footer(kFooter);
    auto option = [&](const char* flag, std::function<void(const std::string&)> parse,
                      const char* type, const std::string& text, const std::string& default_text) {
        app->add_option_function<std::string>(flag, std::move(parse), text)
            ->type_name(type)
            ->default_str(default_text);
    };
    option(
        "--modes",
        [&o](const std::string& v) {
            o.modes = parse_modes(v);
            o.modes_given = true;
        },
        "LIST", "comma list of single, multi, part-persistent, part-rma, part-auto, part-native",
        "all supported");
    option(
        "--sizes",
        [&o](const std::string& v) {
            o.sizes.clear();
            for (const auto& s : split(v)) {
                const std::size_t bytes = parse_size(s);
                if (std::find(o.sizes.begin(), o.sizes.end(), bytes) != o.sizes.end()) {
                    throw UsageError("--sizes: " + s + " is listed twice");
                }
                o.sizes.push_back(bytes);
            }
        },
        "LIST", "total bytes per transfer, suffixes K, M, G", join_sizes(defaults.sizes));
    option(
        "--partitions",
        [&o](const std::string& v) {
            o.partitions = static_cast<int>(parse_integer("--partitions", v, 1, kMaxPartitions));
        },
        "P", "partitions on both sides, 1..1024", std::to_string(defaults.partitions));
    option(
        "--threads",
        [&o](const std::string& v) {
            o.threads = static_cast<int>(parse_integer("--threads", v, 1, kMaxPartitions));
        },
        "T",
        "compute threads of a computing rank; partition p belongs to thread p mod T, each "
        "thread computes and hands over its partitions in turn (at most P are used)",
        "one per partition");
    option(
        "--compute",
        [&o](const std::string& v) {
            if (!parse_compute(v, &o.compute)) {
                throw UsageError("--compute: '" + v + "' is not sleep, spin or work");
            }
        },
        "K",
        "how threads compute: sleep (idle cores), spin (busy until the deadline, as ICPP'22), "
        "work (arithmetic calibrated at start to take the same time on an idle core)",
        compute_name(defaults.compute));
    option(
        "--compute-ms",
        [&o](const std::string& v) { o.compute_ms = parse_real("--compute-ms", v, kMaxComputeMs); },
        "C",
        "compute time of a thread per iteration in ms (each partition C / ceil(P/T), so with "
        "T = P each thread computes C)",
        number(defaults.compute_ms));
    option(
        "--noise", [&o](const std::string& v) { o.noise_pct = parse_real("--noise", v, 1000.0); },
        "N", "extra compute of the one laggard thread, percent of C", number(defaults.noise_pct));
    option(
        "--side",
        [&o](const std::string& v) {
            o.sides = parse_side(v);
            o.sides_given = true;
        },
        "S",
        "send (perceived bandwidth), recv (early arrival), pipeline (per-partition replies), both "
        "(send and recv) or all",
        "both");
    option(
        "--reply-bytes",
        [&o](const std::string& v) {
            o.reply_bytes = static_cast<int>(parse_integer("--reply-bytes", v, 1, kMaxReplyBytes));
        },
        "R", "pipeline side: bytes of each reply partition", std::to_string(defaults.reply_bytes));
    option(
        "--iterations",
        [&o](const std::string& v) {
            o.iterations = static_cast<int>(parse_integer("--iterations", v, 1, 1000000));
        },
        "I", "measured iterations per point", std::to_string(defaults.iterations));
    option(
        "--warmup",
        [&o](const std::string& v) {
            o.warmup = static_cast<int>(parse_integer("--warmup", v, 0, 1000000));
        },
        "W", "discarded iterations per point", std::to_string(defaults.warmup));
    option(
        "--repeats",
        [&o](const std::string& v) {
            o.repeats = static_cast<int>(parse_integer("--repeats", v, 1, 1000));
            o.repeats_given = true;
        },
        "R",
        "repeats of every point, modes interleaved round-robin (order rotated per repeat); "
        "statistics are then over the R repeat medians (the median of medians, min..max)",
        std::to_string(defaults.repeats));
    option(
        "--seed",
        [&o](const std::string& v) {
            o.seed = static_cast<unsigned>(parse_integer("--seed", v, 0, UINT_MAX));
        },
        "S", "seed of the laggard choice", std::to_string(defaults.seed));
    option(
        "--csv", [&o](const std::string& v) { o.csv = v; }, "FILE",
        "write one row per (mode, side, size) with every parameter and statistic", "");
    option(
        "--plot", [&o](const std::string& v) { o.plot = v; }, "FILE.png",
        "plot perceived bandwidth against size with gnuplot", "");
    option(
        "--collective", [&o](const std::string& v) { o.collective = parse_collective(v); }, "OP",
        "measure a partitioned collective over all ranks (" + collective_list() +
            ") against one collective after the join (single) and one per partition (multi); "
            "gather .. neighbor: --sizes is one block (what one rank sends one other), neighbor "
            "runs on a periodic cartesian grid (MPI_Dims_create, 2-D)",
        "");
    app->add_flag("--verify", o.verify,
                  "check every received byte every iteration (exit 1 on a mismatch)");
    option(
        "--write-tuning",
        [&o](const std::string& v) {
            if (v.empty()) {
                throw UsageError("--write-tuning: the tuning file name is empty");
            }
            o.tune = v;
        },
        "FILE",
        "measure part-persistent against part-rma per size (send side; 3 repeats unless "
        "--repeats) and write the tuning file of mpipcl_backend=auto (docs/config.md)",
        "");
    return app;
}

void parse_into(Options& o, int argc, char** argv)
{
    const auto app = make_app(o);
    try {
        app->parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        o.help = true;
        return;
    } catch (const CLI::ParseError& e) {
        // CLI11's own message (missing or repeated value, "--verify=x"); keep it on one line.
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        throw UsageError(what);
    }
    for (const std::string& extra : app->remaining()) {
        throw UsageError((extra.rfind('-', 0) == 0 ? "unknown flag '" : "unexpected argument '") +
                         extra + "'");
    }
    if (!o.tune.empty()) {
        if (o.modes_given) {
            throw UsageError(
                "--write-tuning measures part-persistent and part-rma: no --modes with it");
        }
        o.modes = {Mode::part_persistent, Mode::part_rma};
        if (!o.sides_given) {
            o.sides = {Side::send};
        }
        if (!o.repeats_given) {
            o.repeats = 3;
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
        case Mode::part_auto:
            return "part-auto";
        case Mode::part_native:
            return "part-native";
    }
    return "?";
}

const char* side_name(Side side)
{
    switch (side) {
        case Side::send:
            return "send";
        case Side::recv:
            return "recv";
        case Side::pipeline:
            return "pipeline";
    }
    return "?";
}

const char* collective_name(CollectiveKind kind)
{
    for (const auto& [k, name] : kCollectives) {
        if (k == kind) {
            return name;
        }
    }
    return "none";
}

std::string backend_of(Mode mode)
{
    switch (mode) {
        case Mode::part_persistent:
            return "persistent";
        case Mode::part_rma:
            return "rma";
        case Mode::part_auto:
            return "auto";
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
    Options scratch;
    return make_app(scratch)->help();
}

}  // namespace mpipcl::bench
