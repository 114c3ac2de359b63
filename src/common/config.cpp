// SPDX-License-Identifier: BSD-3-Clause
// Environment variables and info keys.
#include "common/config.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/tuning.hpp"

namespace mpipcl {

namespace {
Config g_config;

bool env_int(const char* name, std::int64_t lo, std::int64_t hi, std::int64_t* out)
{
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        return false;
    }
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi) {
        MPIPCL_LOG(Warn, "ignoring %s=%s (expected an integer in [%lld, %lld])", name, v,
                   static_cast<long long>(lo), static_cast<long long>(hi));
        return false;
    }
    *out = x;
    return true;
}

/// Config::auto_table: MPIPCL_AUTO_RMA_BYTES, else the tuning file, else the built-in table.
/// A missing default file is normal; a missing named file or a malformed one is a warning.
void load_auto_table(Config* c)
{
    std::int64_t bytes = 0;
    if (env_int("MPIPCL_AUTO_RMA_BYTES", 0, std::int64_t{1} << 62, &bytes)) {
        c->auto_table = std::make_shared<const tuning::Table>(tuning::Table::rma_from(bytes));
        return;
    }
    c->auto_table = std::make_shared<const tuning::Table>(tuning::builtin());
    const char* named = std::getenv("MPIPCL_TUNING_FILE");
    const std::string path = named != nullptr ? named : tuning::default_path();
    if (path.empty()) {
        return;  // MPIPCL_TUNING_FILE= (empty): no file
    }
    tuning::Table table;
    std::string why;
    switch (tuning::load_file(path, &table, &why)) {
        case tuning::LoadResult::Loaded:
            c->auto_table = std::make_shared<const tuning::Table>(std::move(table));
            MPIPCL_LOG(Debug, "auto backend: %zu rules from %s", c->auto_table->rules().size(),
                       path.c_str());
            break;
        case tuning::LoadResult::Missing:
            if (named != nullptr) {
                MPIPCL_LOG(Warn, "MPIPCL_TUNING_FILE: %s; auto uses the built-in rules",
                           why.c_str());
            }
            break;
        case tuning::LoadResult::Malformed:
            MPIPCL_LOG(Warn, "tuning file %s; auto uses the built-in rules", why.c_str());
            break;
    }
}
}  // namespace

bool parse_backend(const std::string& text, BackendKind* out)
{
    if (text == "auto") {
        *out = BackendKind::Auto;
    } else if (text == "persistent") {
        *out = BackendKind::Persistent;
    } else if (text == "rma") {
        *out = BackendKind::Rma;
    } else if (text == "native") {
        *out = BackendKind::Native;
    } else {
        return false;
    }
    return true;
}

bool parse_progress(const std::string& text, ProgressMode* out)
{
    static constexpr ProgressMode kModes[] = {ProgressMode::Thread, ProgressMode::Event,
                                              ProgressMode::Offload, ProgressMode::Caller};
    for (const ProgressMode m : kModes) {
        if (text == progress_name(m)) {
            *out = m;
            return true;
        }
    }
    return false;
}

const char* progress_name(ProgressMode mode)
{
    switch (mode) {
        case ProgressMode::Thread:
            return "thread";
        case ProgressMode::Event:
            return "event";
        case ProgressMode::Offload:
            return "offload";
        case ProgressMode::Caller:
            return "caller";
    }
    return "?";
}

bool parse_notify(const std::string& text, NotifyMode* out)
{
    if (text == "gcd") {
        *out = NotifyMode::Gcd;
    } else if (text == "partition") {
        *out = NotifyMode::Partition;
    } else if (text == "message") {
        *out = NotifyMode::Message;
    } else {
        return false;
    }
    return true;
}

const char* backend_name(BackendKind kind)
{
    switch (kind) {
        case BackendKind::Persistent:
            return "persistent";
        case BackendKind::Rma:
            return "rma";
        case BackendKind::Native:
            return "native";
        case BackendKind::Auto:
            return "auto";
    }
    return "?";
}

namespace {

/// MPIPCL_LOG_LEVEL: sets the runtime log level (an unknown name leaves it alone).
void read_log_level()
{
    if (const char* lvl = std::getenv("MPIPCL_LOG_LEVEL")) {
        static const char* const names[] = {"error", "warn", "info", "debug", "trace"};
        for (int i = 0; i < 5; ++i) {
            if (std::strcmp(lvl, names[i]) == 0) {
                log::g_level = i;
            }
        }
    }
}

/// MPIPCL_DUMP_SIGNAL: USR1, USR2 (with or without SIG) or a signal number.
void read_dump_signal(Config* c)
{
    const char* d = std::getenv("MPIPCL_DUMP_SIGNAL");
    if (d == nullptr || *d == '\0') {
        return;
    }
    const char* name = std::strncmp(d, "SIG", 3) == 0 ? d + 3 : d;
    char* end = nullptr;
    const long num = std::strtol(name, &end, 10);
    if (std::strcmp(name, "USR1") == 0) {
        c->dump_signal = SIGUSR1;
    } else if (std::strcmp(name, "USR2") == 0) {
        c->dump_signal = SIGUSR2;
    } else if (end != name && *end == '\0' && num > 0 && num < NSIG && num != SIGKILL &&
               num != SIGSTOP) {
        c->dump_signal = static_cast<int>(num);
    } else {
        MPIPCL_LOG(Warn, "ignoring MPIPCL_DUMP_SIGNAL=%s (expected USR1, USR2 or a number)", d);
    }
}

/// MPIPCL_PROGRESS, and MPIPCL_PROGRESS_THREAD=0 (an alias of caller) when it is not set.
void read_progress(Config* c)
{
    std::int64_t v = 1;
    if (env_int("MPIPCL_PROGRESS_THREAD", 0, 1, &v) && v == 0) {
        c->progress = ProgressMode::Caller;
    }
    if (const char* m = std::getenv("MPIPCL_PROGRESS"); m != nullptr && *m != '\0') {
        if (!parse_progress(m, &c->progress)) {
            MPIPCL_LOG(Warn, "ignoring MPIPCL_PROGRESS=%s (expected thread|event|offload|caller)",
                       m);
        }
    }
    c->progress_thread = c->progress != ProgressMode::Caller;
    if (env_int("MPIPCL_WAIT_SLEEP_AFTER_US", -1, 1000000, &v)) {
        c->wait_sleep_after_us = static_cast<int>(v);
    }
}

// How transfers are cut into internal messages.
void read_messages(Config* c)
{
    std::int64_t v = 0;
    if (env_int("MPIPCL_MESSAGES", 0, 1 << 20, &v)) {
        c->messages = static_cast<int>(v);
    }
    if (env_int("MPIPCL_MIN_MESSAGE_BYTES", 1, std::int64_t{1} << 40, &v)) {
        c->min_message_bytes = v;
    }
    if (env_int("MPIPCL_MAX_MESSAGES", 1, 1 << 20, &v)) {
        c->max_messages = static_cast<int>(v);
    }
    if (env_int("MPIPCL_BLOCK_MESSAGE_BYTES", 0, std::int64_t{1} << 40, &v)) {
        c->block_message_bytes = v;
    }
}

}  // namespace

Config Config::load()
{
    Config c;
    read_log_level();
    if (const char* b = std::getenv("MPIPCL_BACKEND"); b != nullptr && *b != '\0') {
        if (!parse_backend(b, &c.backend)) {
            c.backend_env_invalid = true;
            MPIPCL_LOG(Error, "MPIPCL_BACKEND=%s is not auto|persistent|rma|native", b);
        }
    }
    read_progress(&c);
    read_messages(&c);
    std::int64_t v = 0;
    if (env_int("MPIPCL_PACKED", 0, INT_MAX, &v)) {
        c.packed_max_partitions = static_cast<int>(v);
    }
    if (env_int("MPIPCL_PROGRESS_MAX_SLEEP_US", 0, 1000000, &v)) {
        c.progress_max_sleep_us = static_cast<int>(v);
    }
    if (env_int("MPIPCL_PROGRESS_STAND_DOWN_US", 200, 1000000, &v)) {
        c.progress_stand_down_us = static_cast<int>(v);
    }
    if (env_int("MPIPCL_PROGRESS_QUIET_US", 0, 1000000, &v)) {
        c.progress_quiet_us = static_cast<int>(v);
    }
    if (env_int("MPIPCL_PROGRESS_POLL_US", 1, 1000000, &v)) {
        c.progress_poll_us = static_cast<int>(v);
    }
    if (env_int("MPIPCL_RECV_WINDOW", 0, 1 << 20, &v)) {
        c.recv_window = static_cast<int>(v);
    }
    if (env_int("MPIPCL_RMA", 0, 1, &v)) {
        c.rma_window = v != 0;
    }
    if (env_int("MPIPCL_RMA_MAX_ATTACH", 0, 1 << 30, &v)) {
        c.rma_max_attach = static_cast<int>(v);
    }
    load_auto_table(&c);
    if (env_int("MPIPCL_RMA_PUT_BYTES", 0, std::int64_t{1} << 40, &v)) {
        c.rma_put_bytes = v;
    }
    if (env_int("MPIPCL_RMA_PUT_BLOCKS", 0, 1 << 30, &v)) {
        c.rma_put_blocks = v;
    }
    if (const char* n = std::getenv("MPIPCL_NOTIFY"); n != nullptr && *n != '\0') {
        if (!parse_notify(n, &c.notify)) {
            MPIPCL_LOG(Warn, "ignoring MPIPCL_NOTIFY=%s (expected gcd|partition|message)", n);
        }
    }
    read_dump_signal(&c);
    return c;
}

const Config& config() { return g_config; }
void set_config(const Config& cfg) { g_config = cfg; }

namespace {

/// A malformed mpipcl_* info value is a hint this process cannot read: it is ignored, with one
/// warning per process and key (the init call does not fail because of a hint).
void ignore_value(int key, const char* name, const char* value, const char* expected)
{
    static std::atomic<bool> warned[3];
    if (!warned[key].exchange(true)) {
        MPIPCL_LOG(Warn, "%s=%s is not %s; the key is ignored", name, value, expected);
    }
}

}  // namespace

RequestOptions request_options(MPI_Info info)
{
    if (g_config.backend_env_invalid) {
        throw Error(ErrId::BadBackend, "MPIPCL_BACKEND is not auto|persistent|rma|native");
    }
    RequestOptions o{g_config.backend, g_config.messages, g_config.notify};
    if (info == MPI_INFO_NULL) {
        return o;
    }
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    PMPI_Info_get(info, "mpipcl_backend", MPI_MAX_INFO_VAL, value, &flag);
    if (flag && !parse_backend(value, &o.backend)) {
        ignore_value(0, "mpipcl_backend", value, "auto|persistent|rma|native");
        flag = 0;
    }
    o.backend_from_info = flag != 0;
    PMPI_Info_get(info, "mpipcl_messages", MPI_MAX_INFO_VAL, value, &flag);
    if (flag) {
        char* end = nullptr;
        errno = 0;
        long x = std::strtol(value, &end, 10);
        if (end == value || *end != '\0' || errno != 0 || x < 0 || x > (1 << 20)) {
            ignore_value(1, "mpipcl_messages", value, "an integer in [0, 1048576]");
        } else {
            o.messages = static_cast<int>(x);
        }
    }
    PMPI_Info_get(info, "mpipcl_notify", MPI_MAX_INFO_VAL, value, &flag);
    if (flag && !parse_notify(value, &o.notify)) {
        ignore_value(2, "mpipcl_notify", value, "gcd|partition|message");
    }
    return o;
}

}  // namespace mpipcl
