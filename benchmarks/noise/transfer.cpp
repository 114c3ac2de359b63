// SPDX-License-Identifier: BSD-3-Clause
// The ways one buffer moves from one rank to the other: single send, multi send, partitioned.
#include "transfer.hpp"

#include <mpipcl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mpi_util.hpp"

namespace mpipcl::bench {

namespace {

int count_of(std::size_t bytes)
{
    return static_cast<int>(bytes);  // options.cpp limits sizes to INT_MAX
}

/// The paper's single-send: the threads join, then one MPI_Send of the whole buffer.
class SingleSend final : public Transfer {
   public:
    explicit SingleSend(const Endpoint& e) : e_(e) {}

    void ready(int) override {}

    void finish() override
    {
        check(MPI_Send(e_.buffer, count_of(e_.bytes), MPI_BYTE, e_.peer, e_.tag, e_.comm),
              "MPI_Send");
    }

    void post() override
    {
        check(
            MPI_Irecv(e_.buffer, count_of(e_.bytes), MPI_BYTE, e_.peer, e_.tag, e_.comm, &request_),
            "MPI_Irecv");
    }

    int arrived() override
    {
        int done = 1;
        if (request_ != MPI_REQUEST_NULL) {
            check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
        }
        return done;
    }

    [[nodiscard]] int units() const override { return 1; }

    void wait() override { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }

    bool part_arrived(int) override { return arrived() == 1; }

    [[nodiscard]] bool joins() const override { return true; }

   private:
    Endpoint e_;
    MPI_Request request_ = MPI_REQUEST_NULL;
};

/// The paper's multi-send: every thread MPI_Isends its own part right after its compute.
class MultiSend final : public Transfer {
   public:
    explicit MultiSend(const Endpoint& e)
        : e_(e),
          requests_(static_cast<std::size_t>(e.partitions), MPI_REQUEST_NULL),
          indices_(static_cast<std::size_t>(e.partitions))
    {
    }

    void ready(int i) override
    {
        check(MPI_Isend(part(i), count_of(e_.part_bytes()), MPI_BYTE, e_.peer, e_.tag + i, e_.comm,
                        &requests_[static_cast<std::size_t>(i)]),
              "MPI_Isend");
    }

    void finish() override { wait(); }

    void post() override
    {
        for (int i = 0; i < e_.partitions; ++i) {
            check(MPI_Irecv(part(i), count_of(e_.part_bytes()), MPI_BYTE, e_.peer, e_.tag + i,
                            e_.comm, &requests_[static_cast<std::size_t>(i)]),
                  "MPI_Irecv");
        }
        arrived_ = 0;
    }

    int arrived() override
    {
        int completed = 0;
        check(MPI_Testsome(e_.partitions, requests_.data(), &completed, indices_.data(),
                           MPI_STATUSES_IGNORE),
              "MPI_Testsome");
        if (completed != MPI_UNDEFINED) {
            arrived_ += completed;
        }
        return arrived_;
    }

    [[nodiscard]] int units() const override { return e_.partitions; }

    void wait() override
    {
        check(MPI_Waitall(e_.partitions, requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    }

    bool part_arrived(int i) override
    {
        int done = 0;
        check(MPI_Test(&requests_[static_cast<std::size_t>(i)], &done, MPI_STATUS_IGNORE),
              "MPI_Test");
        return done != 0;
    }

   private:
    unsigned char* part(int i) const
    {
        return e_.buffer + static_cast<std::size_t>(i) * e_.part_bytes();
    }

    Endpoint e_;
    std::vector<MPI_Request> requests_;
    std::vector<int> indices_;
    int arrived_ = 0;
};

/// MPI-4 partitioned communication through mpipcl, with one "mpipcl_backend" on both sides.
class Partitioned final : public Transfer {
   public:
    Partitioned(const Endpoint& e, const std::string& backend)
        : e_(e), arrived_flags_(static_cast<std::size_t>(e.partitions))
    {
        const BackendInfo info(backend);
        const auto count = static_cast<MPI_Count>(e.part_bytes());
        if (e.sender) {
            check(MPI_Psend_init(e.buffer, e.partitions, count, MPI_BYTE, e.peer, e.tag, e.comm,
                                 info.get(), &request_),
                  "MPI_Psend_init");
        } else {
            check(MPI_Precv_init(e.buffer, e.partitions, count, MPI_BYTE, e.peer, e.tag, e.comm,
                                 info.get(), &request_),
                  "MPI_Precv_init");
        }
    }

    Partitioned(const Partitioned&) = delete;
    Partitioned& operator=(const Partitioned&) = delete;

    ~Partitioned() override { MPI_Request_free(&request_); }

    void begin() override { check(MPI_Start(&request_), "MPI_Start"); }

    void ready(int i) override { check(MPI_Pready(i, request_), "MPI_Pready"); }

    void finish() override { wait(); }

    void post() override
    {
        check(MPI_Start(&request_), "MPI_Start");
        std::fill(arrived_flags_.begin(), arrived_flags_.end(), 0);
        arrived_ = 0;
    }

    int arrived() override
    {
        // Returns at the first partition this poll finds: the caller stamps it then, not
        // after MPI_Parrived on the partitions after it (each may drive a progress pass).
        for (int p = 0; p < e_.partitions; ++p) {
            auto& seen = arrived_flags_[static_cast<std::size_t>(p)];
            if (seen == 0) {
                check(MPI_Parrived(request_, p, &seen), "MPI_Parrived");
                if (seen != 0) {
                    return ++arrived_;
                }
            }
        }
        return arrived_;
    }

    [[nodiscard]] int units() const override { return e_.partitions; }

    void wait() override { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }

    bool part_arrived(int i) override
    {
        int flag = 0;
        check(MPI_Parrived(request_, i, &flag), "MPI_Parrived");
        return flag != 0;
    }

   private:
    Endpoint e_;
    MPI_Request request_ = MPI_REQUEST_NULL;
    std::vector<int> arrived_flags_;
    int arrived_ = 0;
};

}  // namespace

std::unique_ptr<Transfer> make_transfer(Mode mode, const Endpoint& endpoint)
{
    switch (mode) {
        case Mode::single:
            return std::make_unique<SingleSend>(endpoint);
        case Mode::multi:
            return std::make_unique<MultiSend>(endpoint);
        default:
            return std::make_unique<Partitioned>(endpoint, backend_of(mode));
    }
}

}  // namespace mpipcl::bench
