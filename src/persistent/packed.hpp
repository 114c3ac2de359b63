// SPDX-License-Identifier: BSD-3-Clause
// The persistent backend's packed layout, for small partitions of dense datatypes: the sender
// counts and queues single partitions, and each flush() sends every partition queued at that
// moment as one message on one data tag (a header naming the partitions, then their bytes,
// copied into a staging buffer); the receiver takes one message at a time into its own staging
// buffer and copies each named partition to the user buffer. A partition that is ready while
// nothing else is leaves at once; partitions that become ready together leave together. Only
// src/persistent includes this header.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/backend.hpp"

namespace mpipcl::persistent {

/// Receiver, at pairing: whether agreement @p a with receive side @p ep uses the packed layout
/// (both datatypes dense, send partitions smaller than the smallest automatic message and more
/// of them than messages, at most MPIPCL_PACKED of them).
bool packs(const Endpoint& ep, const Agreement& a) noexcept;

class PackedBackend final : public Backend {
   public:
    /// Throws Error.
    PackedBackend(const Endpoint& ep, const Agreement& a, MPI_Comm comm);
    ~PackedBackend() override;

    void start(std::uint64_t round) override;
    void flush() noexcept override;
    bool arrived(int p) const noexcept override;
    bool progress() override;
    void abort_round() noexcept override;
    int tags_used() const noexcept override { return 1; }
    void describe(char* out, std::size_t n) const noexcept override;

   private:
    /// At most this many messages in flight (sent, not yet seen complete by the engine)
    /// before ready partitions wait in ready_ to leave together in a later message, unless
    /// the round's last partition is ready. Only while the progress thread runs: it is the
    /// one pass that surely comes (an application thread may block in MPI calls mpipcl does
    /// not wrap), so without it every drain sends what is queued.
    static constexpr int kMaxInFlight = 4;

    /// Sends the partitions of the list from @p head (ReadyQueue links) as one message.
    void send_list(int head) noexcept;
    /// Engine: tests the outstanding sends.
    void reap();
    /// Receiver, engine: unpacks the message that completed with @p status.
    void unpack(const MPI_Status& status);

    const bool send_;
    const int max_in_flight_;    ///< kMaxInFlight with the progress thread, else no limit
    const int partitions_;       ///< send partitions
    const std::int64_t part_;    ///< bytes per send partition
    const std::int64_t total_;   ///< bytes per round
    unsigned char* const user_;  ///< the user's buffer (dense: byte x of the stream at x)
    const int peer_;
    const bool self_;  ///< the other side is this process
    const int tag_;
    const MPI_Comm comm_;
    std::unique_ptr<unsigned char[]> staging_;
    std::int64_t staging_bytes_ = 0;

    // Sender: the round's sends, issued front to back (reqs_[0, issued_)), and the staging
    // offset of the next message; written only by the thread draining ready_.
    std::vector<MPI_Request> reqs_;
    std::int64_t fill_ = 0;
    std::atomic<int> in_flight_{0};  ///< sends issued and not yet seen complete by reap()
    std::atomic<int> issued_{0};
    std::atomic<int> sent_parts_{0};  ///< partitions handed to MPI this round
    std::atomic<int> flush_error_{MPI_SUCCESS};
    int completed_ = 0;  ///< engine: reqs_[0, completed_) are complete
    std::vector<int> indices_;

    // Receiver: one persistent receive into staging_, restarted while partitions remain;
    // per send partition an arrival flag, and per receive partition the send partitions it
    // needs (cached up to kCachedPartitions partitions, else looked up).
    static constexpr int kCachedPartitions = 1 << 16;
    MPI_Request recv_ = MPI_REQUEST_NULL;
    bool receiving_ = false;
    int remaining_ = 0;  ///< send partitions not yet arrived this round
    std::int64_t recv_part_bytes_ = 0;
    std::vector<std::int64_t> bounds_;  ///< send partition p is bytes [bounds_[p], bounds_[p+1])
    std::unique_ptr<std::atomic<std::uint8_t>[]> arrived_;
    std::vector<int> first_;
    std::vector<int> last_;
};

}  // namespace mpipcl::persistent
