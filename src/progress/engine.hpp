// SPDX-License-Identifier: BSD-3-Clause
// The progress engine: the private communicator, the control channel (handshake and
// matching in init order, Ready, Cancel and Abort notices), the list of running transfers,
// and the optional progress thread.
#pragma once

#include <mpi.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "progress/protocol.hpp"
#include "progress/tags.hpp"
#include "progress/transfer.hpp"

namespace mpipcl::progress {

class Engine {
   public:
    /// Inline: read on every MPI_Pready and MPI_Parrived.
    static Engine& instance()
    {
        static Engine* engine = new Engine();  // never destroyed: may be used until process exit
        return *engine;
    }

    /// In MPI_Init*: private communicator, error codes, configuration, backend resources.
    void init();
    /// In MPI_Finalize, before PMPI_Finalize (collective): stops the thread, receives every
    /// control message still addressed to this process, frees every internal MPI object (also
    /// those of requests the application never freed).
    void finalize();
    bool initialized() const { return initialized_.load(std::memory_order_acquire); }
    /// MPI calls from threads other than the user's calling thread are allowed.
    bool thread_multiple() const { return thread_multiple_; }
    /// The library's private duplicate of MPI_COMM_WORLD (MPI_ERRORS_RETURN).
    MPI_Comm private_comm() const { return comm_; }

    /// New transfer with a real peer: sends its Setup or queues it for matching.
    void add(const std::shared_ptr<Transfer>& t);
    /// MPI_Start (the request is inactive and nobody else is inside it).
    void start(const std::shared_ptr<Transfer>& t);
    /// MPI_Request_free (inactive, nobody else inside): withdraws it from matching, releases
    /// its backend and data tags.
    void remove(const std::shared_ptr<Transfer>& t);

    /// One bounded pass from an application thread. @p wait: take the engine lock even when
    /// another thread holds it (MPI_Test/Wait must see every completed transfer); otherwise
    /// return at once when another thread is in a pass. Returns true if something happened.
    /// Never throws.
    bool progress(bool wait = false) noexcept;
    /// A completion call's pass for one transfer (MPI_Wait/Test on it): waits for the engine
    /// lock and advances @p t alone, so a waiting thread's poll costs one MPI test, not one
    /// per active transfer. Every kFullPassEvery-th call, and whenever a pairing is pending, a
    /// transfer awaits a control message or control sends are in flight, it is a full pass.
    /// Returns true if something happened. Never throws.
    bool progress_for(Transfer& t) noexcept;
    std::uint64_t next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
    /// The progress thread runs (MPI_THREAD_MULTIPLE and MPIPCL_PROGRESS_THREAD=1).
    bool progress_thread_running() const { return thread_running_.load(std::memory_order_acquire); }
    /// Work was queued for the progress thread: it looks soon (a notify only when it is in its
    /// long idle wait; while requests are active it passes every few tens of microseconds).
    void nudge() noexcept { wake(); }

   private:
    Engine() = default;
    struct MatchKey {
        std::uint64_t comm_key;
        int src;
        int tag;
        bool operator<(const MatchKey& o) const
        {
            return std::tie(comm_key, src, tag) < std::tie(o.comm_key, o.src, o.tag);
        }
    };
    struct Setup {
        CtrlMsg msg;
        int src;
    };
    struct Outgoing {
        std::unique_ptr<CtrlMsg> msg;
        MPI_Request req;
    };
    using TransferPtr = std::shared_ptr<Transfer>;

    /// @p all: also poll the control channel (see progress_locked).
    bool pass(std::unique_lock<std::mutex>& lk, bool all) noexcept;
    /// Logs the engine's and every transfer's state (MPIPCL_DUMP_SIGNAL).
    void dump_locked() noexcept;
    void install_dump_signal();
    void restore_dump_signal() noexcept;
    void progress_locked(bool all);
    void post_ctrl_recv_locked();
    void send_ctrl_locked(int dest, const CtrlMsg& msg);
    void handle_ctrl_locked(const CtrlMsg& msg, int src);
    /// Pairs @p recv with the oldest unexpected Setup for @p key, or queues it (at the front
    /// when it was already first in line before an unpairing).
    void match_or_queue_locked(const TransferPtr& recv, const MatchKey& key, bool first_in_line);
    /// Matches @p recv with @p setup (init order); pairs at once if it was ever started.
    void match_locked(const TransferPtr& recv, const Setup& setup);
    /// Builds the receive's backend, reserves its data tags and sends the Reply.
    void pair_recv_locked(const TransferPtr& recv, const Setup& setup);
    void handle_reply_locked(const CtrlMsg& msg);
    /// Tells a paired receive's sender that round recv.round() has started (MsgType::Ready).
    void send_ready_locked(Transfer& recv);
    void handle_cancel_locked(const CtrlMsg& msg, int src);
    /// The pair of @p t failed after pairing: fails @p t and tells the peer (MsgType::Abort).
    void fail_pair_locked(Transfer& t, int code);
    void send_abort_locked(Transfer& t, int code);
    void handle_abort_locked(const CtrlMsg& msg, int src);
    void activate_locked(const TransferPtr& t);
    /// Takes a completed @p t off the active list (progress_for; a full pass does it inline).
    void deactivate_locked(Transfer& t);
    /// Advances running transfer @p t; a backend failure fails the pair (and tells the peer).
    /// True once its round is complete (or failed).
    bool advance_locked(Transfer& t);
    void release_tags_locked(Transfer& t);
    /// MPI_Finalize: receives (and drops) every control message other processes sent here.
    void drain_ctrl_locked();
    void start_thread_locked();
    void thread_main();
    void wake();
    bool has_work() const;

    std::atomic<bool> initialized_{false};
    bool thread_multiple_ = false;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    std::atomic<std::uint64_t> next_id_{1};

    std::mutex mu_;  // the progress-queue lock: guards everything below
    bool ctrl_posted_ = false;
    /// An active transfer waits for a control message (an RMA sender for its Ready), or for
    /// data that moves only while this process is inside MPI (an RMA receiver,
    /// Backend::wants_mpi_progress): poll the control channel on every pass.
    bool ctrl_awaited_ = false;
    unsigned user_passes_ = 0;
    unsigned for_passes_ = 0;  ///< progress_for() calls (a full pass every kFullPassEvery-th)
    CtrlMsg ctrl_buf_{};
    MPI_Request ctrl_req_ = MPI_REQUEST_NULL;
    std::vector<Outgoing> outgoing_;
    std::vector<std::uint64_t> sent_to_;    ///< control messages sent, per private rank
    std::vector<std::uint64_t> recv_from_;  ///< control messages received, per private rank
    std::map<MatchKey, std::deque<Setup>> unexpected_;
    std::map<MatchKey, std::deque<TransferPtr>> unmatched_;
    std::unordered_map<std::uint64_t, TransferPtr> all_;          // every live transfer, by id
    std::unordered_map<std::uint64_t, TransferPtr> sends_;        // by send id
    std::map<std::pair<int, std::uint64_t>, TransferPtr> recvs_;  // (src, send id)
    std::unordered_map<std::uint64_t, Setup> matched_;  // never-started receive id -> its Setup
    std::vector<TransferPtr> active_;
    TagAllocator tags_;
    std::atomic<int> pending_pairs_{0};  // transfers waiting for their peer
    std::atomic<int> active_count_{0};

    int dump_signal_ = 0;  ///< the signal whose handler we installed (0 = none)
    struct sigaction old_action_ {};

    std::thread thread_;
    /// An application thread called progress() since the progress thread last looked (it
    /// clears the flag when it looks); while it finds the flag set it stands down, napping
    /// kUserActiveNs between looks at first, doubling up to MPIPCL_PROGRESS_STAND_DOWN_US. A
    /// flag rather than a timestamp: no clock read in the application's wait loops. Every
    /// wake-up takes a core from a polling or computing thread for a moment, which shows in
    /// mpipcl-gbench's Pready/<backend>/threads:16 (docs/benchmarks.md).
    std::atomic<bool> user_progressed_{false};
    static constexpr std::int64_t kUserActiveNs = 200000;
    std::atomic<bool> thread_running_{false};
    /// The progress thread is in (or about to enter) its long idle wait: wake() must notify.
    std::atomic<bool> deep_sleep_{false};
    std::mutex wake_mu_;
    std::condition_variable wake_cv_;
    bool stop_ = false;       // guarded by wake_mu_
    bool wake_flag_ = false;  // guarded by wake_mu_
};

}  // namespace mpipcl::progress
