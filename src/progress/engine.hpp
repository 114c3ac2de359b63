// SPDX-License-Identifier: BSD-3-Clause
// The progress engine: the private communicator, the control channel (handshake and
// matching in init order), the list of active requests, and the optional progress thread.
#pragma once

#include <mpi.h>

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

#include "progress/backoff.hpp"
#include "progress/protocol.hpp"
#include "progress/tags.hpp"
#include "requests/request.hpp"

namespace mpipcl::progress {

using requests::Request;

class Engine {
   public:
    static Engine& instance();

    /// In MPI_Init*: private communicator, error codes, configuration.
    void init();
    /// In MPI_Finalize, before PMPI_Finalize: stops the thread, frees every internal MPI object
    /// (also those of requests the application never freed).
    void finalize();
    bool initialized() const { return initialized_.load(std::memory_order_acquire); }
    /// MPI calls from threads other than the user's calling thread are allowed.
    bool thread_multiple() const { return thread_multiple_; }
    MPI_Comm comm() const { return comm_; }
    int world_rank() const { return rank_; }

    /// New request (registered by the caller): sends the Setup or queues it for matching.
    void add(const std::shared_ptr<Request>& req);
    /// MPI_Start on one of ours (request inactive).
    void start(const std::shared_ptr<Request>& req);
    /// MPI_Start on a request whose peer is MPI_PROC_NULL: completes at once.
    void start_local(Request& req);
    /// MPI_Request_free on one of ours (request inactive): withdraws it from matching.
    void remove(const std::shared_ptr<Request>& req);

    /// One bounded, non-blocking pass; returns immediately if another thread is in it.
    /// Returns true if something happened. Never throws.
    bool progress() noexcept;
    std::uint64_t next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

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

    bool progress_pass() noexcept;
    void progress_locked();
    static std::int64_t now_ns();
    void post_ctrl_recv_locked();
    void send_ctrl_locked(int dest, const CtrlMsg& msg);
    void handle_ctrl_locked(const CtrlMsg& msg, int src);
    /// Pairs @p recv with the oldest unexpected Setup for @p key, or queues it (at the front
    /// when it was already first in line before an unpairing).
    void match_or_queue_locked(const std::shared_ptr<Request>& recv, const MatchKey& key,
                               bool first_in_line);
    /// Matches @p recv with @p setup (init order); pairs at once if it was ever started.
    void match_locked(const std::shared_ptr<Request>& recv, const Setup& setup);
    /// Builds the receive's backend, reserves its data tags and sends the Reply.
    void pair_recv_locked(const std::shared_ptr<Request>& recv, const Setup& setup);
    void handle_reply_locked(const CtrlMsg& msg);
    /// Tells a paired receive's sender that round recv.round() has started (MsgType::Ready).
    void send_ready_locked(Request& recv);
    void handle_cancel_locked(const CtrlMsg& msg, int src);
    void activate_locked(const std::shared_ptr<Request>& req);
    /// Builds the backend; on the receiver also reserves the data tags (sets a.tag_base).
    std::unique_ptr<requests::Backend> make_backend_locked(Request& req, requests::Agreement& a);
    void release_tags_locked(Request& req);
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
    CtrlMsg ctrl_buf_{};
    MPI_Request ctrl_req_ = MPI_REQUEST_NULL;
    std::vector<Outgoing> outgoing_;
    std::map<MatchKey, std::deque<Setup>> unexpected_;
    std::map<MatchKey, std::deque<std::shared_ptr<Request>>> unmatched_;
    std::unordered_map<std::uint64_t, std::shared_ptr<Request>> sends_;  // by send id
    std::map<std::pair<int, std::uint64_t>, std::shared_ptr<Request>> recvs_;  // (src, send id)
    std::unordered_map<std::uint64_t, Setup> matched_;  // never-started receive id -> its Setup
    std::vector<std::shared_ptr<Request>> active_;
    TagAllocator tags_;
    std::atomic<int> pending_pairs_{0};  // requests waiting for their peer
    std::atomic<int> active_count_{0};

    std::thread thread_;
    /// When an application thread last called progress(); the progress thread stands down
    /// for kUserActiveNs after it.
    std::atomic<std::int64_t> last_user_progress_{0};
    static constexpr std::int64_t kUserActiveNs = 200000;
    std::atomic<bool> thread_running_{false};
    std::mutex wake_mu_;
    std::condition_variable wake_cv_;
    bool stop_ = false;        // guarded by wake_mu_
    bool wake_flag_ = false;   // guarded by wake_mu_
};

}  // namespace mpipcl::progress
