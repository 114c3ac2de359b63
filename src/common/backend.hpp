// SPDX-License-Identifier: BSD-3-Clause
// The one Backend interface both data paths (src/persistent, src/rma) implement, and the
// plain descriptions they are built from. The progress engine drives a Backend without
// knowing which one it is, and the factory (src/progress/backends.cpp) creates one through the
// module table each backend defines (common/backend_module.hpp), by BackendKind: no file
// outside src/persistent and src/rma names them.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/config.hpp"
#include "common/ready_counter.hpp"

namespace mpipcl {

/// A partitioned transfer's side.
enum class Kind : std::uint8_t { Send, Recv };

/// The user's side of the transfer, fixed at init. The datatype is the library's own
/// duplicate (MPI_Type_dup at init, freed with the request) for derived types, so the user may
/// free theirs at once.
struct Endpoint {
    Kind kind = Kind::Send;
    void* buf = nullptr;
    int partitions = 0;
    MPI_Count count = 0;  ///< elements per partition
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    int peer = MPI_PROC_NULL;  ///< rank in comm
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;   ///< the user's communicator (errors, status)
    int peer_world = MPI_PROC_NULL;  ///< peer's rank in the library's private communicator
    std::uint64_t comm_key = 0;      ///< identifies comm identically on every member
    std::int64_t elem_bytes = 0;     ///< MPI_Type_size(datatype)
    MPI_Aint extent = 0;             ///< MPI_Type_get_extent(datatype)
    /// The datatype is dense: its elements lie back to back in type-signature order from the
    /// buffer's start (lower bound 0, extent == size), so a memcpy moves a partition.
    bool dense = false;

    std::int64_t part_bytes() const { return static_cast<std::int64_t>(count) * elem_bytes; }
    std::int64_t total_bytes() const { return part_bytes() * partitions; }
};

/// Whether a backend's progress() may go on for as long as it finds work, rather than take one
/// step and return: true on the progress thread (set as it starts) and inside MPI_Wait* and
/// MPI_Test* (DrainScope), where no caller looks at the arrivals between two steps; false
/// for MPI_Parrived, whose caller acts on each arrival as soon as it sees it.
inline thread_local bool t_drains __attribute__((tls_model("initial-exec"))) = false;

/// Sets t_drains for a scope (restoring it after).
class DrainScope {
   public:
    DrainScope() noexcept : saved_(t_drains) { t_drains = true; }
    ~DrainScope() { t_drains = saved_; }
    DrainScope(const DrainScope&) = delete;
    DrainScope& operator=(const DrainScope&) = delete;

   private:
    bool saved_;
};

/// What a sender asks for in its Setup (the backend's part of the handshake).
struct Offer {
    BackendKind backend = BackendKind::Persistent;
    int messages = 0;  ///< requested internal messages, 0 = the receiver decides
    std::uint64_t extra[4] = {0, 0, 0, 0};
};

/// What both sides agreed on in the handshake; the backend is built from it.
struct Agreement {
    int send_partitions = 0;
    std::int64_t send_part_bytes = 0;
    std::int64_t send_elem_bytes = 0;
    int recv_partitions = 0;
    std::int64_t recv_part_bytes = 0;
    std::int64_t recv_elem_bytes = 0;
    int messages = 0;  ///< requested internal messages (the map may use fewer)
    int tag_base = 0;  ///< first data tag on the private communicator
    BackendKind backend = BackendKind::Persistent;
    /// The sender's datatype is dense (Endpoint::dense, sent in the Setup).
    bool send_dense = false;
    /// Persistent backend: the packed layout (docs/design.md); decided by the receiver at
    /// pairing, learnt by the sender from the Reply.
    bool packed = false;
    /// Persistent backend, receiver: receives posted at a time (0 = all at the start); decided
    /// by the receiver alone at pairing (progress/backends.cpp), never sent.
    int recv_window = 0;
    /// The peer's backend data (Offer::extra of its Setup on the receiver, of its Reply on
    /// the sender).
    std::uint64_t peer_extra[4] = {0, 0, 0, 0};
};

/// Data path of one paired request, from creation to destruction (which frees every MPI
/// object it made). Methods marked "engine" run with the engine lock held; the others are
/// lock-free and may run on any thread concurrently with them, always while the caller holds
/// a reference on the request (see docs/design.md, "Lifetime"), so the backend outlives them.
class Backend {
   public:
    virtual ~Backend() = default;
    /// engine: round @p round begins (request just started, or paired while active).
    virtual void start(std::uint64_t round) = 0;
    /// lock-free (sender): partition @p p is ready. Queued: it completed a unit and queued MPI
    /// work, which flush() then issues; Duplicate: it was already ready this round (nothing
    /// changed). Not virtual: every send path counts partitions per unit into counter_ and
    /// queues complete units on ready_, and this runs on every MPI_Pready.
    Marked partition_ready(int p) noexcept { return counter_.mark_and_queue(p, ready_); }
    /// lock-free (sender): partitions [@p lo, @p hi] are ready (MPI_Pready_range), a word of
    /// ready bits at a time. True when one was already ready (the others are marked anyway);
    /// *queued as for partition_ready.
    bool range_ready(int lo, int hi, bool* queued) noexcept
    {
        return counter_.mark_range_and_queue(lo, hi, ready_, queued);
    }
    /// Sender: issue queued MPI work. Lock-free; makes MPI calls, so only on threads allowed to.
    virtual void flush() noexcept = 0;
    /// lock-free (sender): complete units wait in the ready queue for a flush (a hint).
    bool units_queued() const noexcept { return ready_.pending(); }
    /// lock-free (receiver): all but the last of the round's data arrived, so the round
    /// completes with the next arrival. A hint for waits that sleep (the event mode's MPI_Wait
    /// polls then, so that the last piece, which often comes after the longest gap, finds it
    /// awake).
    virtual bool finishing() const noexcept { return false; }
    /// lock-free (sender): the queued work is long (RMA: Puts and MPI_Win_flush calls that may
    /// wait for the target), so a Pready caller should leave it to the progress thread and the
    /// completion calls when a progress thread runs, instead of issuing it itself.
    virtual bool flush_in_background() const noexcept { return false; }
    /// lock-free (receiver): true once every byte of receive partition @p p is in the buffer.
    virtual bool arrived(int p) const noexcept = 0;
    /// engine: advance the round; true when it is complete. Throws Error on a failure.
    virtual bool progress() = 0;
    /// engine: withdraw an active round without completing it (peer cancelled or failed). A
    /// sender whose data lands without the receiver's help (written_by_peer on the receiver)
    /// issues nothing more into the receive buffer afterwards, and what it issued before is
    /// complete at the target when this returns (the Abort or AbortAck it then sends says so).
    virtual void abort_round() noexcept = 0;
    /// Receiver: the peer writes straight into the receive buffer (RMA), so a round that fails
    /// on this side while paired ends only once the sender confirmed that it stopped writing
    /// (its AbortAck or Abort), or once every byte of the round arrived. False: the receiver
    /// withdraws its own receives in abort_round, and the round ends at once.
    virtual bool written_by_peer() const noexcept { return false; }
    /// The data tags this backend uses (released by the engine with it), or 0.
    virtual int tags_used() const noexcept = 0;
    /// The sender must learn when the receiver starts each round (its buffer is writable): the
    /// receiver then sends a Ready control message at every MPI_Start. False where MPI's own
    /// matching already orders the data after the receiver's start (saves a message per round).
    virtual bool needs_peer_ready() const noexcept { return false; }
    /// engine: while this round runs, every progress pass of a waiting thread should call into
    /// MPI (poll the control channel) rather than every few passes: the data moves only while
    /// this process is inside MPI (RMA target on MPICH and Open MPI 5).
    virtual bool wants_mpi_progress() const noexcept { return false; }
    /// engine (sender): every unit queued so far is a started MPI send (none waits for a
    /// flush, no send failed to start), so the rest of the round needs
    /// nothing from this process's progress wherever the receiver moves the data itself
    /// (kOnNodeReceiverCopies); what remains is to notice that the sends completed.
    virtual bool sends_handed_over() const noexcept { return false; }
    /// Two or more pieces of this round are still to come: a receive with at least two
    /// messages not yet arrived, a send with units not yet started. A waiting application
    /// thread may then sleep between its passes (MPIPCL_WAIT_SLEEP_AFTER_US), since no single
    /// piece completes the round. False unless the backend can tell.
    virtual bool expects_more() const noexcept { return false; }
    /// engine (sender): the receiver has started round @p round (its buffer is writable).
    virtual void peer_ready(std::uint64_t round) noexcept { (void)round; }
    /// engine: one line of this backend's round state for a diagnostic dump
    /// (MPIPCL_DUMP_SIGNAL), written into @p out (always terminated). Never throws.
    virtual void describe(char* out, std::size_t n) const noexcept = 0;
    /// engine (receiver): backend data for the Reply.
    virtual void reply_extra(std::uint64_t extra[4]) const noexcept { (void)extra; }

   protected:
    /// The ready queue's state for describe(): "queue=<head>[,draining]".
    void describe_queue(char* out, std::size_t n) const noexcept;

    // Sender: which partitions are ready per unit (an internal message, an RMA put unit), and
    // the queue of units whose partitions are all ready (pushed by Pready threads, drained by
    // one flusher). The send path sizes both (counter_.init, ready_.resize) before pairing
    // publishes it, and resets both at each start().
    ReadyCounter counter_;
    ReadyQueue ready_;
};

}  // namespace mpipcl
