// SPDX-License-Identifier: BSD-3-Clause
// The tuning table of mpipcl_backend=auto: which backend (and how many internal messages) a
// transfer of a given total size gets. Read from a plain-text tuning file (docs/config.md,
// "Tuning file"; written by mpipcl-bench --write-tuning), else built in per MPI flavour. Pure
// logic: no MPI calls, no logging (the caller reports errors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace mpipcl::tuning {

/// One line of a tuning file: transfers of at least min_bytes (up to the next rule) use
/// backend (Persistent or Rma) with messages internal messages (0 = automatic).
struct Rule {
    std::int64_t min_bytes = 0;
    BackendKind backend = BackendKind::Persistent;
    int messages = 0;
};

/// Rules sorted by min_bytes, no two alike. Empty: auto always picks persistent.
class Table {
   public:
    Table() = default;
    /// Sorts @p rules; the caller guarantees distinct min_bytes.
    explicit Table(std::vector<Rule> rules);

    /// The rule of the largest min_bytes <= @p total_bytes; nullptr when there is none
    /// (the transfer is smaller than every rule: persistent, automatic messages).
    const Rule* find(std::int64_t total_bytes) const noexcept;
    const std::vector<Rule>& rules() const noexcept { return rules_; }
    bool empty() const noexcept { return rules_.empty(); }

    /// The table of MPIPCL_AUTO_RMA_BYTES=@p bytes: rma from @p bytes up (empty when 0).
    static Table rma_from(std::int64_t bytes);

   private:
    std::vector<Rule> rules_;
};

/// Parses the text of a tuning file: per line `<min_total_bytes> <backend> [messages]`
/// (bytes as an integer with an optional K, M or G suffix, powers of 1024; backend
/// `persistent` or `rma`; messages an integer in [0, 1048576]), `#` to the end of a line
/// is a comment, blank lines are ignored. Returns false with @p error = "line N: why" when a
/// line is malformed or a min_total_bytes repeats; *out is then untouched.
bool parse(const std::string& text, Table* out, std::string* error);

/// Result of load_file().
enum class LoadResult { Loaded, Missing, Malformed };

/// Reads and parses @p path. Missing: the file does not exist (or cannot be opened;
/// @p error says why). Malformed: parse() failed, or the file is larger than 1 MiB.
LoadResult load_file(const std::string& path, Table* out, std::string* error);

/// The MPI flavour libmpipcl is built for, as used in the default file name: "openmpi<major>",
/// "mpich<major>" or "mpi" (another MPI).
std::string mpi_flavour();

/// The default tuning file: $XDG_CONFIG_HOME/mpipcl/tuning-<flavour>, else
/// $HOME/.config/mpipcl/tuning-<flavour>; empty when neither variable is set.
std::string default_path();

/// The built-in table of this MPI flavour (used without a tuning file).
Table builtin();

}  // namespace mpipcl::tuning
