// SPDX-License-Identifier: BSD-3-Clause
// Control messages exchanged on the library's private communicator (tag kCtrlTag).
#pragma once

#include <cstdint>

#include "common/backend.hpp"

namespace mpipcl::progress {

/// What the members of a group of transfers (an upper layer's partitioned collective) must
/// agree on. Every internal transfer of the group carries it (Transfer::coll) in its Setup;
/// pairing fails on a difference (kind < 0: not part of a group, nothing compared; zero
/// partitions: the sizes are left to the pair's own checks).
struct CollSig {
    std::int32_t kind = -1;  ///< the upper layer's kind of group, -1 for point-to-point
    std::int32_t root = 0;
    std::int32_t op = 0;  ///< a predefined op's number, 0 for a user op (not comparable)
    std::int32_t partitions = 0;
    std::int64_t type_size = 0;
    std::int64_t count = 0;
};

/// Control traffic uses tag 0 of the private communicator; data tags start at 1.
constexpr int kCtrlTag = 0;

enum class MsgType : std::int32_t {
    Setup = 1,   ///< sender -> receiver, at Psend_init: describes the send side
    Reply = 2,   ///< receiver -> sender, at the receive's first Start: accepted or error
    Cancel = 3,  ///< sender -> receiver: a never-started send request was freed
    Ready = 5,   ///< receiver -> sender: round extra[0] has started (buffer writable)
    Abort = 6,   ///< either way, after pairing: the pair failed with error (sticky)
    /// sender -> receiver: answers an Abort that asked for it (kFlagAckAbort): this send
    /// issues no more data into the receive buffer, and none it issued is still in flight
    AbortAck = 7,
};

/// CtrlMsg::tag of an Abort: which side of the pair it is addressed to.
constexpr std::int32_t kAbortToReceiver = 0;
constexpr std::int32_t kAbortToSender = 1;

/// CtrlMsg::flags of a Setup: the sender's datatype is dense (Endpoint::dense).
constexpr std::int32_t kFlagSendDense = 1;
/// CtrlMsg::flags of a Reply: the persistent backend uses the packed layout (Agreement::packed).
constexpr std::int32_t kFlagPacked = 2;

/// CtrlMsg::flags of an Abort to the sender: the receiver's round waits for the sender's
/// AbortAck (its backend writes straight into the receive buffer, Backend::written_by_peer).
constexpr std::int32_t kFlagAckAbort = 4;

/// Fixed-size, trivially copyable; both sides run the same binary layout (same library).
struct CtrlMsg {
    MsgType type;
    std::int32_t tag;         ///< the user's tag (Setup, Cancel); Abort: kAbortTo*
    std::uint64_t comm_key;   ///< the user's communicator (Setup)
    std::uint64_t send_id;    ///< sender's request id
    std::uint64_t recv_id;    ///< receiver's request id (Reply, Ready)
    std::int64_t part_bytes;  ///< bytes per partition of the writer's side
    std::int64_t elem_bytes;  ///< type size of the writer's datatype
    std::int32_t partitions;  ///< partitions of the writer's side
    std::int32_t backend;     ///< BackendKind asked for (Setup) / agreed (Reply)
    std::int32_t messages;    ///< requested internal messages, 0 = automatic
    std::int32_t tag_base;    ///< Reply: first data tag
    std::int32_t error;       ///< Reply, Abort: encoded error (ErrId+1), 0 = accepted
    std::int32_t flags;       ///< kFlag* bits (Setup: the sender's; Reply: the agreement's;
                              ///< Abort: kFlagAckAbort)
    /// Backend data. Setup: [0] NotifyMode asked for; Reply: the rma target description
    /// (rma::TargetInfo); Ready: [0] the round the receiver started.
    std::uint64_t extra[4];
    CollSig coll;  ///< Setup: the collective the send belongs to (kind -1: none)
};

}  // namespace mpipcl::progress
