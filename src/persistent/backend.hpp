// SPDX-License-Identifier: BSD-3-Clause
// The persistent backend: one internal persistent point-to-point request per internal message
// on the private communicator; Pready counts partitions down per message with atomics and the
// message leaves when its count reaches zero. Only src/persistent includes this header: the
// factory reaches the backend through its module table (common/backend_module.hpp, defined in
// backend.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "common/backend.hpp"
#include "common/partition_map.hpp"
#include "common/ready_counter.hpp"
#include "common/ready_queue.hpp"

namespace mpipcl::persistent {

/// Automatic message count: one per send partition, but no message below @p min_bytes and at
/// most @p cap messages.
inline int auto_messages(int send_partitions, std::int64_t total_bytes, std::int64_t min_bytes,
                         int cap)
{
    const std::int64_t by_size = min_bytes > 0 ? total_bytes / min_bytes : send_partitions;
    const std::int64_t m = std::min<std::int64_t>({send_partitions, by_size, cap});
    return static_cast<int>(std::max<std::int64_t>(1, m));
}

/// Receiver, both layouts: whether every range of @p bounds that receive partition @p p of
/// @p recv_part_bytes covers has its flag in @p flags set; @p first and @p last cache the
/// covering ranges per receive partition (empty: looked up, O(log ranges)).
inline bool covered_arrived(const std::vector<std::int64_t>& bounds, std::int64_t recv_part_bytes,
                            const std::vector<int>& first, const std::vector<int>& last,
                            const std::atomic<std::uint8_t>* flags, int p) noexcept
{
    int lo = 0;
    int hi = 0;
    if (first.empty()) {
        covering_ranges(bounds, recv_part_bytes, p, &lo, &hi);
    } else {
        lo = first[p];
        hi = last[p];
    }
    for (int m = lo; m <= hi; ++m) {
        // sync: acquire pairs with the release that set the flag after the data landed.
        if (flags[m].load(std::memory_order_acquire) == 0) {
            return false;
        }
    }
    return true;
}

/// Whether private rank @p peer of @p comm is this process: its messages match inside the
/// sending thread's call (Open MPI's btl_self), see self_send_gate().
bool is_self(MPI_Comm comm, int peer) noexcept;

/// Held by a send to this process's own rank across the call that starts it, when
/// @p self (else not locked). Open MPI's ob1 (4.1 and 5.0) marks a receive matched only after
/// it released the matching lock: a cancel in between unlinks the receive from the posted
/// queue a second time (corrupting it) and completes it while the data is still being unpacked
/// into it. A message to the own rank matches in the sender's thread, so cancel_receive of a
/// receive from the own rank waits for these starts to end.
std::shared_lock<std::shared_mutex> self_send_gate(bool self) noexcept;

/// Receiver, both layouts: cancels the posted receive @p req (from private rank @p peer,
/// this process itself when @p self) and waits for it. A message that came first cannot be
/// cancelled and counts as received (common/traffic.hpp).
void cancel_receive(MPI_Request* req, int peer, bool self) noexcept;

/// The sender's Setup for this backend (the message count it asks for).
Offer make_offer(const Endpoint& ep, const RequestOptions& opts);

/// Data tags the receiver must reserve for agreement @p a (a.messages resolved).
int tags_needed(const Agreement& a);

/// Builds the backend; creates its internal persistent requests on @p comm. Never null (any
/// buffer and datatype can use it: @p why_not is never written). Throws Error.
std::unique_ptr<Backend> create(const Endpoint& ep, const RequestOptions& opts, const Agreement& a,
                                MPI_Comm comm, const char** why_not);

class PersistentBackend final : public Backend {
   public:
    PersistentBackend(const Endpoint& ep, const Agreement& a, MPI_Comm comm);
    ~PersistentBackend() override;

    void start(std::uint64_t round) override;
    void flush() noexcept override;
    bool arrived(int p) const noexcept override;
    bool progress() override;
    bool sends_handed_over() const noexcept override;
    /// A windowed receiver whose last pass moved something (a receive completed or was
    /// posted): what it posted may match data that is already here, which only this process's
    /// next MPI call copies, and no peer rings for it again.
    bool wants_mpi_progress() const noexcept override { return moved_; }
    /// A receiver with every message but the last in (and more than one message).
    bool finishing() const noexcept override
    {
        return !send_ && remaining_.load(std::memory_order_relaxed) == 1 && map_.messages() > 1;
    }
    bool expects_more() const noexcept override
    {
        if (send_) {
            return started_.load(std::memory_order_relaxed) < map_.messages();
        }
        return remaining_.load(std::memory_order_relaxed) > 1;
    }
    void abort_round() noexcept override;
    int tags_used() const noexcept override { return map_.messages(); }
    void describe(char* out, std::size_t n) const noexcept override;

   private:
    void free_requests() noexcept;
    /// Every internal request of the round is pending.
    void pend_all();

    const bool send_;
    const int peer_;   ///< private rank of the other side
    const bool self_;  ///< the other side is this process
    PartitionMap map_;
    std::vector<MPI_Request> reqs_;  ///< one persistent request per internal message

    // Sender (besides Backend::counter_ and ready_, whose units are the messages).
    std::atomic<int> started_{0};
    std::atomic<int> flush_error_{MPI_SUCCESS};

    // Receiver: per-message arrival flags, and per receive partition the messages it needs
    // (cached up to kCachedPartitions partitions, else looked up: no per-partition memory).
    static constexpr int kCachedPartitions = 1 << 16;
    std::int64_t recv_part_bytes_ = 0;
    std::unique_ptr<std::atomic<std::uint8_t>[]> arrived_;
    std::vector<int> first_;
    std::vector<int> last_;
    std::vector<int> indices_;

    /// Messages of this round not yet arrived (written under the engine lock; finishing()
    /// reads it without).
    std::atomic<int> remaining_{0};

    const int window_ = 0;              ///< receives posted at a time, 0 = all at the start
    const int tag_base_ = 0;            ///< the first data tag (probes)
    const MPI_Comm comm_;               ///< the private communicator (probes)
    std::vector<std::uint8_t> posted_;  ///< per message: started this round
    int posted_count_ = 0;
    int next_post_ = 0;   ///< the message fill_window() looks at first
    int probe_at_ = 0;    ///< the message probe_unposted() looks at first
    bool moved_ = false;  ///< windowed receiver: the last pass completed or posted a receive

    // Engine side, both directions: the internal requests not yet complete this round and
    // their message numbers, compacted as they complete, so a progress pass costs
    // O(pending), not O(messages).
    std::vector<MPI_Request> pending_;
    std::vector<int> pending_msg_;
    /// Tests pending_ (Testsome); removes what completed, reporting each message to @p done.
    template <class Done>
    void test_pending(Done&& done);

    // Receiver with a window (Agreement::recv_window): at most window_ receives are posted
    // at a time, in message order; a message that arrives out of order is found by
    // MPI_Iprobe and posted beyond the window.
    /// Starts receive @p m and makes it pending.
    void post(int m);
    /// Posts unposted receives in message order until window_ are pending.
    void fill_window();
    /// Probes the next unposted message (round robin); posts it if it has arrived.
    bool probe_unposted();
    /// After a pass's test: refills the window (and posts what probes find) and tests again
    /// while receives complete: window_ messages per MPI call.
    template <class Done>
    void slide_window(Done&& done);
};

}  // namespace mpipcl::persistent
