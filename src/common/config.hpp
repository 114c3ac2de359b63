// SPDX-License-Identifier: BSD-3-Clause
// Process-wide configuration: environment variables read once, overridable per request by info.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mpipcl {

namespace tuning {
class Table;
}  // namespace tuning

/// Auto is resolved at init (from the transfer's size and the MPI) into Persistent or Rma.
enum class BackendKind : int { Persistent = 0, Rma = 1, Native = 2, Auto = 3 };

/// RMA backend: how arrival is announced (info key "mpipcl_notify", MPIPCL_NOTIFY).
enum class NotifyMode : int {
    Auto = 0,       ///< Message when mpipcl_messages is set, else Gcd
    Gcd = 1,        ///< gcd(send partitions, receive partitions) flags
    Partition = 2,  ///< one flag per receive partition
    Message = 3,    ///< one flag per internal message (put unit)
};

/// How progress is made (MPIPCL_PROGRESS; docs/design.md, "Progress modes").
enum class ProgressMode : int {
    Thread = 0,   ///< a progress thread that polls on timers; waits poll
    Event = 1,    ///< the thread sleeps on a doorbell that local calls and node peers ring
    Offload = 2,  ///< as Event, and only the thread calls MPI for partitioned traffic
    Caller = 3,   ///< no thread: progress inside the application's MPI calls
};

/// Parses "thread" | "event" | "offload" | "caller"; returns false for anything else.
bool parse_progress(const std::string& text, ProgressMode* out);
const char* progress_name(ProgressMode mode);

/// Parses "gcd" | "partition" | "message"; returns false for anything else.
bool parse_notify(const std::string& text, NotifyMode* out);

/// Parses "auto" | "persistent" | "rma" | "native"; returns false for anything else.
bool parse_backend(const std::string& text, BackendKind* out);
const char* backend_name(BackendKind kind);

/// Values documented in docs/config.md. Read once by Config::load() at MPI initialization.
struct Config {
    BackendKind backend = BackendKind::Auto;  ///< MPIPCL_BACKEND
    /// MPIPCL_PROGRESS (MPIPCL_PROGRESS_THREAD=0 is an alias of caller).
    ProgressMode progress = ProgressMode::Thread;
    bool progress_thread = true;            ///< a progress thread may run (every mode but caller)
    int messages = 0;                       ///< MPIPCL_MESSAGES: internal messages, 0 = automatic
    std::int64_t min_message_bytes = 4096;  ///< MPIPCL_MIN_MESSAGE_BYTES (automatic mode)
    int max_messages = 1024;                ///< MPIPCL_MAX_MESSAGES (automatic mode cap)
    /// MPIPCL_BLOCK_MESSAGE_BYTES: the block-wise collectives' internal transfers, automatic
    /// mode: one message per partition, but none below this many bytes; 0 = one per partition.
    /// Fewer, larger messages cost fewer rendezvous where ranks share cores; on MPICH they
    /// also cost the early start where one thread computes the partitions in turn
    /// (docs/collectives.md, "Messages per block").
#if defined(MPICH_VERSION)
    std::int64_t block_message_bytes = 0;
#else
    std::int64_t block_message_bytes = 1 << 20;
#endif
    /// MPIPCL_PACKED: the persistent backend's packed layout for transfers of at most this many
    /// send partitions; 0 turns it off. A packed MPI_Pready pushes its partition on the ready
    /// queue, an aggregated one only the last of its message: mpipcl-gbench
    /// Pready/persistent (1024 partitions, above the bound) shows the per-call difference.
    int packed_max_partitions = 256;
    int progress_max_sleep_us = 50;  ///< MPIPCL_PROGRESS_MAX_SLEEP_US
    /// MPIPCL_PROGRESS_STAND_DOWN_US: longest nap of the progress thread while an application
    /// thread drives progress itself (the nap doubles from 200 us up to this while it does).
    /// Each wake-up takes a core from a polling or computing thread for a moment; fewer
    /// wake-ups show in mpipcl-gbench's Pready/<backend>/threads:16 (docs/benchmarks.md).
    int progress_stand_down_us = 1600;
    /// MPIPCL_PROGRESS_QUIET_US: the progress thread's nap while every running request is a
    /// send that needs nothing more from this process (Engine: "quiet"); 0 = never nap so.
    int progress_quiet_us = 1000;
    /// MPIPCL_PROGRESS_POLL_US: event and offload modes, the longest sleep of the progress
    /// thread on its doorbell while a request is active that nobody can ring it for (a peer on
    /// another node, MPI-internal progress); the sleep doubles from MPIPCL_PROGRESS_MAX_SLEEP_US
    /// up to this while its passes find nothing.
    int progress_poll_us = 400;
    /// MPIPCL_WAIT_SLEEP_AFTER_US: an MPI_Wait/MPI_Waitall of the thread and caller modes whose
    /// partitioned requests all expect two or more pieces more (Backend::expects_more) polls
    /// and yields this long, then sleeps between its passes (1 us doubling to 50 us) until one
    /// is down to its last piece; -1 (the default) never sleeps (docs/design.md, "Why the
    /// thread mode's waits poll").
    int wait_sleep_after_us = -1;
    /// MPIPCL_RECV_WINDOW: persistent receives from a rank on the same node (Open MPI) are
    /// posted this many at a time, each replaced as it completes; 0 posts all at the start.
    int recv_window = 4;
    bool rma_window = true;   ///< MPIPCL_RMA (0/1): create the RMA window
    int rma_max_attach = -1;  ///< MPIPCL_RMA_MAX_ATTACH: attachment budget, -1 = ask the MPI
    /// MPIPCL_RMA_PUT_BYTES: largest single MPI_Put, 0 = no limit. MPICH moves a large Put
    /// into a dynamic window as active messages, far slower than the same bytes as 64 KiB
    /// Puts; Open MPI's Puts are fastest unsplit (mpipcl-bench part-rma, docs/benchmarks.md).
#if defined(MPICH_VERSION)
    std::int64_t rma_put_bytes = 64 * 1024;
#else
    std::int64_t rma_put_bytes = 0;
#endif
    /// MPIPCL_RMA_PUT_BLOCKS: most contiguous blocks the RMA sender moves between two
    /// MPI_Win_flush calls (a Put between contiguous sides, and a flag Put, count as one),
    /// 0 = no limit. Open MPI 5's osc rdma over btl sm emulates RDMA with one active-message
    /// fragment per contiguous block, which the target answers with a fragment of its own; a
    /// Put of hundreds of blocks, or hundreds of Puts before one flush, take all of btl sm's
    /// fragments (btl_sm_free_list_max, 512) on one side or the other, and an ob1 control
    /// message (rendezvous ACK, RGET FIN) that pml ob1 cannot send meanwhile waits for an ob1
    /// completion that may never come: the point-to-point transfer hangs
    /// (tests/platform/osc_am_rndv_dtype_hang.c, osc_am_fin_pending_hang.c). A small bound
    /// keeps osc rdma's share of the fragments small.
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
    std::int64_t rma_put_blocks = 32;
#else
    std::int64_t rma_put_blocks = 0;
#endif
    /// The rules of mpipcl_backend=auto (total bytes -> backend, internal messages), from
    /// MPIPCL_AUTO_RMA_BYTES when set, else the tuning file (MPIPCL_TUNING_FILE or the
    /// default path of common/tuning.hpp), else the built-in table of this MPI. Never null
    /// after load(); shared, immutable (Config is copied).
    std::shared_ptr<const tuning::Table> auto_table;
    NotifyMode notify = NotifyMode::Auto;  ///< MPIPCL_NOTIFY
    /// MPIPCL_DUMP_SIGNAL (USR1, USR2, or a signal number): on this signal the library logs
    /// the state of every request at its next progress pass (a hang's post-mortem); 0 = none.
    int dump_signal = 0;
    bool backend_env_invalid = false;  ///< MPIPCL_BACKEND was set to something unknown

    static Config load();
};

// Timers of the progress thread and of the finalize drain (fixed; the tunable ones are the
// MPIPCL_PROGRESS_* fields of Config).

/// The progress thread's name (MPIPCL_PROGRESS_THREAD_NAME in mpipcl.h; at most 15 characters).
inline constexpr const char* kProgressThreadName = "mpipcl-progress";
/// The progress thread, polling while requests are active, yields the core this long after
/// each event before it sleeps (growing to MPIPCL_PROGRESS_MAX_SLEEP_US).
inline constexpr int kProgressYieldUs = 20;
/// Event and offload modes: after an event (a pass that changed something, or a ring of its
/// doorbell) the progress thread keeps polling this long (short sleeps growing from 1 us)
/// before it sleeps on the doorbell again.
inline constexpr std::int64_t kEventBurstNs = 100000;
/// Event and offload modes: the longest doorbell sleep of a waiting MPI_Wait* between its
/// passes while every running transfer's peer rings this process and none moves only while
/// this process calls MPI (a ring ends it at once; the bound only makes sure that nothing is
/// ever missed); otherwise it sleeps MPIPCL_PROGRESS_MAX_SLEEP_US.
inline constexpr std::int64_t kAwaitCompletionNs = 5000000;
/// First nap of the progress thread once it finds that an application thread drove progress
/// since it last looked; it doubles while that goes on, up to MPIPCL_PROGRESS_STAND_DOWN_US.
inline constexpr std::int64_t kProgressStandDownFirstNs = 200000;
/// Thread mode: a pass of the progress thread that lasts this long (wall time) and spends
/// most of it off its core held the engine lock while other threads ran, and every
/// application thread that polls waited for it: the node has more runnable threads than cores
/// (docs/design.md, "Progress modes"). The thread then counts the node as crowded.
inline constexpr std::int64_t kProgressSlowPassNs = 2000000;
/// Thread mode: the progress thread reads its CPU time (a system call, ~0.8 us here) every
/// this many passes, so that a slow pass is judged by the CPU time of a short interval.
inline constexpr unsigned kProgressCpuSampleEvery = 64;
/// Thread mode on a crowded node: the stand-down nap, long enough to span an application's
/// iteration, so that the thread stays out of MPI for as long as the application keeps
/// calling into the library in every iteration (stop() ends it early).
inline constexpr std::int64_t kProgressCrowdedStandDownNs = 100000000;
/// Thread mode: passes in a row that each take less than kProgressSlowPassNs before the
/// thread stops counting the node as crowded.
inline constexpr unsigned kProgressCrowdedForgetPasses = 20000;
/// Smallest internal message (bytes, on average over a transfer) whose receives the
/// persistent backend posts in a window (Config::recv_window): above every shared-memory
/// eager limit, so that a message whose receive is not posted yet waits as a header, not as
/// a buffered copy.
inline constexpr std::int64_t kRecvWindowMinBytes = 64 * 1024;
/// Open MPI (pml ob1 with btl vader / sm and a single-copy mechanism, CMA or XPMEM: the Debian
/// packages' default) moves a message between two processes of one node either as an eager
/// copy made inside the send call or with a single copy that the receiver makes: once a send
/// has started, the sender's progress is needed only to notice its completion. Where that does
/// not hold (pml ucx, btl_vader_single_copy_mechanism=none), MPIPCL_PROGRESS_QUIET_US=0
/// keeps the progress thread polling such sends. Not assumed for MPICH: a partitioned bcast's root
/// there is slower without its progress thread.
#if defined(OPEN_MPI)
inline constexpr bool kOnNodeReceiverCopies = true;
#else
inline constexpr bool kOnNodeReceiverCopies = false;
#endif
/// Longest idle wait of the progress thread with no request active or pairing (a wake-up
/// notifies it earlier; the bound makes sure nothing is ever missed, and is how long a peer
/// that pairs late with a failed transfer may wait for its answer).
inline constexpr std::int64_t kProgressIdleWaitNs = 50000000;
/// MPI_Parrived on a partition that has not arrived (progress::Engine::parrived_missed), counted
/// per thread in misses in a row: the first kParrivedEagerMisses each drive progress unless
/// another thread is in a pass (an arrival is often a few microseconds away, about as long as
/// that many passes take). After them every miss pauses the CPU, every kParrivedDriveEvery-th
/// drives progress and every kParrivedYieldEvery-th yields the core, so that many threads
/// polling pending partitions leave the cores to the threads that compute; mpipcl-gbench's
/// Parrived/<backend>/pending/threads:16 and mpipcl-bench --side pipeline show the trade-off.
inline constexpr unsigned kParrivedEagerMisses = 128;
inline constexpr unsigned kParrivedDriveEvery = 8;
inline constexpr unsigned kParrivedYieldEvery = 64;
static_assert((kParrivedDriveEvery & (kParrivedDriveEvery - 1)) == 0 &&
                  (kParrivedYieldEvery & (kParrivedYieldEvery - 1)) == 0,
              "powers of two: a miss tests them with a mask");
/// MPI_Finalize's waits for the control and data messages still addressed to this process:
/// yield this long, then sleep in steps growing to kFinalizeDrainMaxSleepUs.
inline constexpr int kFinalizeDrainYieldUs = 20;
inline constexpr int kFinalizeDrainMaxSleepUs = 1000;
/// MPI_Finalize's wait for the data messages still addressed to this process gives up (with a
/// warning) after this long without one: every count is exact, so only an MPI failure or a
/// bug in the counting ends it this way.
inline constexpr int kFinalizeDataDrainGiveUpMs = 10000;

/// The process configuration (valid after Config::load() ran in MPI_Init*).
const Config& config();
void set_config(const Config& cfg);

/// Per-request options: the process Config overridden by "mpipcl_*" info keys.
struct RequestOptions {
    BackendKind backend;
    int messages;
    NotifyMode notify;
    bool backend_from_info = false;  ///< "mpipcl_backend" was given (not only MPIPCL_BACKEND)
};

/// Reads "mpipcl_backend", "mpipcl_messages" and "mpipcl_notify" from @p info
/// (MPI_INFO_NULL allowed).
/// Throws mpipcl::Error(MPI_ERR_INFO_VALUE-class code) for a malformed value.
RequestOptions request_options(MPI_Info info);

}  // namespace mpipcl
