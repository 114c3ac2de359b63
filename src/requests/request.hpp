// SPDX-License-Identifier: BSD-3-Clause
// MPIX_Request: the one internal partitioned request type. It owns the per-round state
// machine, the per-partition readiness flags and, once the peer has been matched, a backend.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/config.hpp"

namespace mpipcl::requests {

class Request;

enum class Kind : std::uint8_t { Send, Recv };

/// Per-round state. Only changed through Request's CAS helpers.
enum class State : std::uint8_t { Inactive, Active };

/// The user's side of the transfer, fixed at init.
struct Endpoint {
    void* buf = nullptr;
    int partitions = 0;
    MPI_Count count = 0;  ///< elements per partition
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    int peer = MPI_PROC_NULL;  ///< rank in comm
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;  ///< the user's communicator (errors, status)
    int peer_world = MPI_PROC_NULL;  ///< peer's rank in the library's private communicator
    std::uint64_t comm_key = 0;      ///< identifies comm identically on every member
    std::int64_t elem_bytes = 0;     ///< MPI_Type_size(datatype)
    MPI_Aint extent = 0;             ///< MPI_Type_get_extent(datatype)

    std::int64_t part_bytes() const { return static_cast<std::int64_t>(count) * elem_bytes; }
    std::int64_t total_bytes() const { return part_bytes() * partitions; }
};

/// What both sides agreed on in the handshake; the backend is built from it.
struct Agreement {
    int send_partitions = 0;
    std::int64_t send_part_bytes = 0;
    std::int64_t send_elem_bytes = 0;
    int recv_partitions = 0;
    std::int64_t recv_part_bytes = 0;
    std::int64_t recv_elem_bytes = 0;
    int messages = 0;  ///< requested internal messages (the layout may use fewer)
    int tag_base = 0;  ///< first data tag on the private communicator
    BackendKind backend = BackendKind::Persistent;
    /// The peer's backend data (CtrlMsg::extra of its Setup on the receiver, of its Reply on
    /// the sender).
    std::uint64_t peer_extra[4] = {0, 0, 0, 0};
};

/// Data path of one request. Methods marked "engine lock" run with Engine::mu_ held; the
/// others are lock-free and may run on any thread concurrently with them.
class Backend {
   public:
    virtual ~Backend() = default;
    /// engine lock: a new round begins (request just became active, or paired while active).
    virtual void start() = 0;
    /// lock-free (sender): partition @p p is ready; it is reported exactly once per round.
    virtual void partition_ready(int p) noexcept = 0;
    /// Sender: issue queued MPI work. Lock-free; makes MPI calls, so only on threads allowed to.
    virtual void flush() noexcept = 0;
    /// lock-free (receiver): true once every byte of receive partition @p p is in the buffer.
    virtual bool arrived(int p) const noexcept = 0;
    /// engine lock: advance the round; returns true when it is complete. May throw Error.
    virtual bool progress() = 0;
    /// engine lock: withdraw an active round without completing it (peer cancelled).
    virtual void abort_round() = 0;
    /// The data tags this backend reserved (released by the engine), or 0.
    virtual int tags_used() const noexcept = 0;
    /// engine lock (sender): the receiver announced a new round (Request::peer_ready_round).
    virtual void peer_ready() noexcept {}
    /// engine lock (receiver): backend data for the Reply (CtrlMsg::extra).
    virtual void reply_extra(std::uint64_t extra[4]) const noexcept {}
};

/// How a request stands with respect to its peer.
enum class Pairing : std::uint8_t { Unpaired, Paired, Failed };

/// The status of a null or inactive request: MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, count 0.
void set_empty_status(MPI_Status* status) noexcept;

class Request : public std::enable_shared_from_this<Request> {
   public:
    Request(Kind kind, const Endpoint& ep, const RequestOptions& opts, std::uint64_t id);
    ~Request();
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;

    Kind kind() const { return kind_; }
    const Endpoint& endpoint() const { return ep_; }
    const RequestOptions& options() const { return opts_; }
    std::uint64_t id() const { return id_; }
    bool null_peer() const { return ep_.peer == MPI_PROC_NULL; }
    MPI_Request handle() const { return handle_; }
    void set_handle(MPI_Request h) { handle_ = h; }

    State state() const { return state_.load(std::memory_order_acquire); }
    bool is_active() const { return state() == State::Active; }
    /// True once the current round has completed (all data sent / arrived, or failed).
    bool round_complete() const { return complete_.load(std::memory_order_acquire); }
    /// Rounds started so far (1 during the first round).
    std::uint64_t round() const { return round_.load(std::memory_order_acquire); }
    /// Sender: the latest round the receiver has started (its Ready message), 0 = none yet.
    std::uint64_t peer_ready_round() const { return peer_ready_.load(std::memory_order_acquire); }

    // ---- user operations (facade) ----
    /// Marks @p partition ready. At MPI_THREAD_MULTIPLE it then issues the backend's queued
    /// MPI work unless @p flush is false (Pready_range/list mark all, then call flush_ready()).
    [[nodiscard]] int pready(int partition, bool flush = true) noexcept;
    /// Issues the backend's queued MPI work from this thread (MPI_THREAD_MULTIPLE only).
    void flush_ready() noexcept;
    [[nodiscard]] int parrived(int partition, int* flag) noexcept;
    /// Completes the round if it is complete: Active -> Inactive, fills @p status.
    /// Returns true when the request is (now) inactive; *err gets the round's error.
    bool try_complete(MPI_Status* status, int* err) noexcept;
    /// Like try_complete without deactivating (MPI_Request_get_status).
    bool peek(MPI_Status* status) noexcept;
    /// MPIX_Pbuf_prepare: sender: waits (driving progress) until the receiver has started
    /// this round, the round completed or pairing failed; receiver: returns at once.
    [[nodiscard]] int prepare() noexcept;

    // ---- engine side (engine lock held) ----
    void begin_round_locked();
    void pair_locked(const Agreement& a, std::unique_ptr<Backend> backend);
    void fail_locked(int code);
    void unpair_locked();
    /// Sender: the receiver has started round @p round (MsgType::Ready).
    void peer_ready_locked(std::uint64_t round);
    /// Advances an active round; returns true once it is complete.
    bool progress_locked();
    bool ever_started() const { return ever_started_; }
    Pairing pairing() const { return pairing_.load(std::memory_order_acquire); }
    const Agreement& agreement() const { return agreement_; }
    Backend* backend() const { return backend_.get(); }
    void release_backend_locked() { backend_.reset(); }

    // Engine bookkeeping (engine lock held).
    std::uint64_t peer_id = 0;     ///< the peer request's id once paired
    bool in_active_list = false;

   private:
    void count_partition(Backend* b, int p) noexcept;
    void fill_status(MPI_Status* status) const noexcept;
    void mark_complete_locked();

    const Kind kind_;
    const Endpoint ep_;
    const RequestOptions opts_;
    const std::uint64_t id_;
    MPI_Request handle_ = MPI_REQUEST_NULL;

    std::atomic<State> state_{State::Inactive};
    std::atomic<bool> complete_{false};
    std::atomic<Pairing> pairing_{Pairing::Unpaired};
    /// The backend as seen by lock-free readers (Pready, Parrived); null until paired.
    std::atomic<Backend*> ready_backend_{nullptr};
    std::atomic<int> error_{MPI_SUCCESS};  ///< sticky pairing error (size mismatch ...)
    std::atomic<std::uint64_t> round_{0};
    std::atomic<std::uint64_t> peer_ready_{0};
    int round_error_ = MPI_SUCCESS;
    bool ever_started_ = false;
    Agreement agreement_;
    std::unique_ptr<Backend> backend_;
    /// Backends replaced by unpair_locked stay alive until the request is freed, because a
    /// concurrent lock-free Parrived may still be reading them.
    std::vector<std::unique_ptr<Backend>> retired_;
    /// Sender: 0 = not ready, 1 = ready but not yet given to the backend, 2 = given.
    std::unique_ptr<std::atomic<std::uint8_t>[]> part_state_;
};

}  // namespace mpipcl::requests
