// SPDX-License-Identifier: BSD-3-Clause
// The persistent backend: one internal persistent point-to-point request per internal message
// on the private communicator; Pready counts partitions down per message with atomics and the
// message leaves when its count reaches zero.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "persistent/layout.hpp"
#include "requests/request.hpp"

namespace mpipcl::persistent {

/// Data tags the receiver must reserve for agreement @p a.
int tags_needed(const requests::Agreement& a);

/// Builds the backend for @p req; creates its internal persistent requests. Throws Error.
std::unique_ptr<requests::Backend> create(requests::Request& req, const requests::Agreement& a,
                                          MPI_Comm comm);

class PersistentBackend final : public requests::Backend {
   public:
    PersistentBackend(requests::Request& req, const requests::Agreement& a, MPI_Comm comm);
    ~PersistentBackend() override;

    void start() override;
    void partition_ready(int p) noexcept override;
    void flush() noexcept override;
    bool arrived(int p) const noexcept override;
    bool progress() override;
    void abort_round() override;
    int tags_used() const noexcept override { return layout_.messages(); }

   private:
    void push_ready(int m) noexcept;
    void free_requests() noexcept;

    const bool send_;
    Layout layout_;
    std::vector<MPI_Request> reqs_;  ///< one persistent request per internal message

    // Sender: partition -> message, per-message countdown, and a lock-free stack of messages
    // whose partitions are all ready (pushed by Pready threads, drained by one flusher).
    std::vector<int> part_msg_;
    std::unique_ptr<std::atomic<int>[]> remaining_;
    std::unique_ptr<std::atomic<int>[]> next_;
    std::atomic<int> head_{-1};
    std::atomic<bool> draining_{false};
    std::atomic<int> started_{0};
    std::atomic<int> flush_error_{MPI_SUCCESS};

    // Receiver: per-message arrival flags, and per receive partition the messages it needs.
    std::unique_ptr<std::atomic<std::uint8_t>[]> arrived_;
    std::vector<int> first_;
    std::vector<int> last_;
    int arrived_count_ = 0;
    std::vector<int> indices_;
};

}  // namespace mpipcl::persistent
