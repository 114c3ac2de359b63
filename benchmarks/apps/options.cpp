// SPDX-License-Identifier: BSD-3-Clause
// mpipcl-stencil's command line (CLI11): strict, so a typo never silently changes the experiment.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace mpipcl::stencil {

namespace {

constexpr int kMaxCells = 1 << 20;  // per dimension
constexpr int kMaxThreads = 256;    // keeps the multi variant's tags below 32767

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

int parse_integer(const std::string& flag, const std::string& text, long low, long high)
{
    errno = 0;
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
        throw UsageError(flag + ": '" + text + "' is not an integer");
    }
    if (value < low || value > high) {
        throw UsageError(flag + ": " + text + " is out of range [" + std::to_string(low) + ", " +
                         std::to_string(high) + "]");
    }
    return static_cast<int>(value);
}

std::vector<Variant> parse_variants(const std::string& list)
{
    std::vector<Variant> variants;
    for (const auto& name : split(list)) {
        const auto* it = std::find_if(std::begin(kAllVariants), std::end(kAllVariants),
                                      [&](Variant v) { return name == variant_name(v); });
        if (it == std::end(kAllVariants)) {
            throw UsageError("--variants: unknown variant '" + name +
                             "' (valid: compute, plain, multi, part-persistent, part-rma, "
                             "part-auto, part-native)");
        }
        if (std::find(variants.begin(), variants.end(), *it) != variants.end()) {
            throw UsageError("--variants: '" + name + "' is listed twice");
        }
        variants.push_back(*it);
    }
    return variants;
}

constexpr const char* kDescription =
    R"(3-D 7-point Jacobi iteration on an NX x NY x NZ grid, decomposed over the ranks in x and y;
each OpenMP thread owns a slab of z-planes, so every halo face is cut into one partition per
thread. Each variant moves the halos differently (or not at all: compute); all run in one
execution, interleaved over the repeats, and the table says how much of plain's halo time each
one hides behind the interior computation.)";

constexpr const char* kFooter =
    R"(Exit codes: 0 ok, 1 a variant's field differs from the serial reference under --verify,
2 bad command line or environment, 3 an MPI call failed.)";

/// The command line (CLI11); each flag parses its value into @p o, which must outlive the app.
std::unique_ptr<CLI::App> make_app(Options& o)
{
    const Options defaults;
    auto app = std::make_unique<CLI::App>(kDescription, "mpiexec -n P mpipcl-stencil");
    app->allow_extras(true);  // unknown arguments get our own message in parse_into
    app->set_help_flag("-h,--help", "print this text and exit");
    app->footer(kFooter);
    auto option = [&](const char* flag, std::function<void(const std::string&)> parse,
                      const char* type, const char* text, const std::string& default_text) {
        app->add_option_function<std::string>(flag, std::move(parse), text)
            ->type_name(type)
            ->default_str(default_text);
    };
    auto integer = [&](const char* flag, int& field, long low, long high, const char* type,
                       const char* text, const std::string& default_text) {
        option(
            flag,
            [&field, flag, low, high](const std::string& v) {
                field = parse_integer(flag, v, low, high);
            },
            type, text, default_text);
    };
    integer("--nx", o.nx, 1, kMaxCells, "NX", "global cells in x", std::to_string(defaults.nx));
    integer("--ny", o.ny, 1, kMaxCells, "NY", "global cells in y", std::to_string(defaults.ny));
    integer("--nz", o.nz, 1, kMaxCells, "NZ", "global cells in z (not decomposed)",
            std::to_string(defaults.nz));
    integer("--threads", o.threads, 1, kMaxThreads, "T",
            "OpenMP threads per rank = z-slabs = partitions per face", "OMP_NUM_THREADS");
    integer("--iterations", o.iterations, 1, 1000000, "N", "measured iterations per run",
            std::to_string(defaults.iterations));
    integer("--warmup", o.warmup, 0, 1000000, "W", "iterations before the measured ones",
            std::to_string(defaults.warmup));
    integer("--repeats", o.repeats, 1, 1000, "R",
            "runs of every variant, interleaved round-robin with the first variant rotated; the "
            "time is the median of the R per-run means",
            std::to_string(defaults.repeats));
    option(
        "--variants",
        [&o](const std::string& v) {
            o.variants = parse_variants(v);
            o.variants_given = true;
        },
        "LIST",
        "comma list of compute, plain, multi, part-persistent, part-rma, part-auto, part-native",
        "all that work here (part-native not on Open MPI unless named)");
    option(
        "--csv", [&o](const std::string& v) { o.csv = v; }, "FILE",
        "write one row per variant with every parameter", "");
    option(
        "--plot", [&o](const std::string& v) { o.plot = v; }, "FILE.png",
        "plot the time per iteration with gnuplot (script in FILE.gp)", "");
    app->add_flag("--verify", o.verify,
                  "compare every variant's final field with a serial reference on rank 0, bit "
                  "for bit (exit 1 on a difference)");
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
    if (!o.plot.empty() && (o.plot.size() < 5 || o.plot.substr(o.plot.size() - 4) != ".png")) {
        throw UsageError("--plot: '" + o.plot + "' does not end in .png");
    }
}

}  // namespace

const char* variant_name(Variant variant)
{
    switch (variant) {
        case Variant::compute:
            return "compute";
        case Variant::plain:
            return "plain";
        case Variant::multi:
            return "multi";
        case Variant::part_persistent:
            return "part-persistent";
        case Variant::part_rma:
            return "part-rma";
        case Variant::part_auto:
            return "part-auto";
        case Variant::part_native:
            return "part-native";
    }
    return "?";
}

std::string backend_of(Variant variant)
{
    switch (variant) {
        case Variant::part_persistent:
            return "persistent";
        case Variant::part_rma:
            return "rma";
        case Variant::part_auto:
            return "auto";
        case Variant::part_native:
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

}  // namespace mpipcl::stencil
