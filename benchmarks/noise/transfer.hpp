// SPDX-License-Identifier: BSD-3-Clause
// The ways one buffer moves from one rank to the other: single send, multi send, partitioned.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

#include "options.hpp"

namespace mpipcl::bench {

/// Where one transfer runs: the sender of the pair sends buffer[0, bytes) to the receiver (rank
/// 0 to rank 1, or rank 1 to rank 0 for a pipeline's replies).
struct Endpoint {
    MPI_Comm comm;
    bool sender;
    unsigned char* buffer;
    std::size_t bytes;
    int partitions;  ///< sender threads = parts on both sides; divides bytes
    int peer;        ///< the other rank
    int tag;         ///< the transfer's tag (multi: tag + i for part i)

    [[nodiscard]] std::size_t part_bytes() const
    {
        return bytes / static_cast<std::size_t>(partitions);
    }
};

/**
 * One mode's transfer, set up once per point and repeated every iteration. The sender calls
 * begin(), then ready(i) from thread i after its compute, then finish() (from any thread)
 * once every ready() has returned. The receiver calls post() before the iteration's barrier, may
 * poll arrived(), and completes with wait(). Failed MPI calls abort the job.
 */
class Transfer {
   public:
    virtual ~Transfer() = default;

    /// Sender, before the threads compute (partitioned: MPI_Start).
    virtual void begin() {}
    /// Sender thread i, right after its compute. Thread-safe for distinct i.
    virtual void ready(int i) = 0;
    /// Sender, after every ready() returned: complete the send side.
    virtual void finish() = 0;

    /// Receiver: post this iteration's receive (before the barrier, so it is early).
    virtual void post() = 0;
    /// Receiver: poll once (up to the first unit it finds newly arrived); how many of units()
    /// have arrived so far.
    virtual int arrived() = 0;
    /// Receiver: the units arrived() counts (1 for single, T otherwise).
    [[nodiscard]] virtual int units() const = 0;
    /// Receiver: block until the whole buffer is in place.
    virtual void wait() = 0;

    /// Receiver thread i: poll once whether part i has arrived (multi: its receive completed,
    /// partitioned: MPI_Parrived). Thread-safe for distinct i; not for single (joins()).
    virtual bool part_arrived(int i) = 0;
    /// The sender's threads join before anything moves (single): there are no parts to poll.
    [[nodiscard]] virtual bool joins() const { return false; }
};

/// The transfer of mode between the two ranks of endpoint.comm (local, never blocks).
[[nodiscard]] std::unique_ptr<Transfer> make_transfer(Mode mode, const Endpoint& endpoint);

}  // namespace mpipcl::bench
