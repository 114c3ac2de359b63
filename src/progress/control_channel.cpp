// SPDX-License-Identifier: BSD-3-Clause
// Control messages: factories, error encoding, the posted receive, sends and the finalize
// drain.
#include "progress/control_channel.hpp"

#include <algorithm>

#include "common/backoff.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace mpipcl::progress {

namespace {
/// Errors travel as ErrId+1 (codes registered at run time may differ between processes), or
/// as minus the MPI error class for codes of the MPI library (same library on both sides).
std::int32_t encode_error(int code)
{
    for (int i = 0; i < static_cast<int>(ErrId::Count_); ++i) {
        if (error_code(static_cast<ErrId>(i)) == code) {
            return i + 1;
        }
    }
    int cls = MPI_ERR_INTERN;
    if (PMPI_Error_class(code, &cls) != MPI_SUCCESS || cls == MPI_SUCCESS) {
        cls = MPI_ERR_INTERN;
    }
    return -cls;
}
int decode_error(std::int32_t e)
{
    if (e < 0) {
        return -e;
    }
    if (e == 0 || e > static_cast<int>(ErrId::Count_)) {
        return error_code(ErrId::Internal);
    }
    return error_code(static_cast<ErrId>(e - 1));
}
}  // namespace

CtrlMsg setup_msg(const Endpoint& ep, std::uint64_t send_id, const Offer& offer)
{
    CtrlMsg m{};
    m.type = MsgType::Setup;
    m.tag = ep.tag;
    m.comm_key = ep.comm_key;
    m.send_id = send_id;
    m.part_bytes = ep.part_bytes();
    m.elem_bytes = ep.elem_bytes;
    m.partitions = ep.partitions;
    m.backend = static_cast<std::int32_t>(offer.backend);
    m.messages = offer.messages;
    m.flags = ep.dense ? kFlagSendDense : 0;
    std::copy(std::begin(offer.extra), std::end(offer.extra), std::begin(m.extra));
    return m;
}

int collective_mismatch(const CollSig& local, const CtrlMsg& setup)
{
    const CollSig& a = local;
    const CollSig& b = setup.coll;
    if (a.kind != b.kind || a.partitions != b.partitions) {
        return error_code(ErrId::CollMismatch);
    }
    if (a.root != b.root) {
        return error_code(ErrId::BadRoot);
    }
    if (a.op != b.op) {
        return error_code(ErrId::BadOp);
    }
    if (a.type_size * a.count != b.type_size * b.count) {
        return error_code(b.type_size * b.count > a.type_size * a.count ? ErrId::Truncate
                                                                        : ErrId::SizeMismatch);
    }
    if (a.type_size != b.type_size) {
        return error_code(ErrId::CollMismatch);
    }
    return MPI_SUCCESS;
}

CtrlMsg cancel_msg(const Endpoint& ep, std::uint64_t send_id)
{
    CtrlMsg m{};
    m.type = MsgType::Cancel;
    m.tag = ep.tag;
    m.comm_key = ep.comm_key;
    m.send_id = send_id;
    return m;
}

CtrlMsg reply_msg(std::uint64_t send_id, std::uint64_t recv_id, const Agreement& a, int error)
{
    CtrlMsg m{};
    m.type = MsgType::Reply;
    m.send_id = send_id;
    m.recv_id = recv_id;
    m.partitions = a.recv_partitions;
    m.part_bytes = a.recv_part_bytes;
    m.elem_bytes = a.recv_elem_bytes;
    m.messages = a.messages;
    m.backend = static_cast<std::int32_t>(a.backend);
    m.tag_base = a.tag_base;
    m.flags = a.packed ? kFlagPacked : 0;
    m.error = error == MPI_SUCCESS ? 0 : encode_error(error);
    return m;
}

CtrlMsg ready_msg(std::uint64_t send_id, std::uint64_t recv_id, std::uint64_t round)
{
    CtrlMsg m{};
    m.type = MsgType::Ready;
    m.send_id = send_id;
    m.recv_id = recv_id;
    m.extra[0] = round;
    return m;
}

CtrlMsg abort_msg(bool to_receiver, std::uint64_t send_id, std::uint64_t recv_id, int error,
                  bool ack)
{
    CtrlMsg m{};
    m.type = MsgType::Abort;
    // Ids come from each process's own counter: say which side the message is for.
    m.tag = to_receiver ? kAbortToReceiver : kAbortToSender;
    m.send_id = send_id;
    m.recv_id = recv_id;
    m.error = encode_error(error);
    m.flags = ack ? kFlagAckAbort : 0;
    return m;
}

CtrlMsg abort_ack_msg(std::uint64_t send_id, std::uint64_t recv_id)
{
    CtrlMsg m{};
    m.type = MsgType::AbortAck;
    m.send_id = send_id;
    m.recv_id = recv_id;
    return m;
}

int msg_error(const CtrlMsg& msg) { return decode_error(msg.error); }

Agreement agreement_of(const Endpoint& local, const CtrlMsg& peer)
{
    const bool send = local.kind == Kind::Send;
    Agreement a;
    a.send_partitions = send ? local.partitions : peer.partitions;
    a.send_part_bytes = send ? local.part_bytes() : peer.part_bytes;
    a.send_elem_bytes = send ? local.elem_bytes : peer.elem_bytes;
    a.recv_partitions = send ? peer.partitions : local.partitions;
    a.recv_part_bytes = send ? peer.part_bytes : local.part_bytes();
    a.recv_elem_bytes = send ? peer.elem_bytes : local.elem_bytes;
    a.messages = peer.messages;
    a.tag_base = peer.tag_base;
    a.send_dense = send ? local.dense : (peer.flags & kFlagSendDense) != 0;
    a.packed = send && (peer.flags & kFlagPacked) != 0;
    a.backend = static_cast<BackendKind>(peer.backend);
    std::copy(std::begin(peer.extra), std::end(peer.extra), std::begin(a.peer_extra));
    return a;
}

void ControlChannel::init(MPI_Comm comm, int size)
{
    comm_ = comm;
    posted_ = false;
    sent_to_.assign(size, 0);
    recv_from_.assign(size, 0);
}

void ControlChannel::post_receive()
{
    if (posted_) {
        return;
    }
    MPIPCL_CHECK_MPI(
        PMPI_Irecv(&buf_, sizeof(CtrlMsg), MPI_BYTE, MPI_ANY_SOURCE, kCtrlTag, comm_, &req_));
    posted_ = true;
}

bool ControlChannel::test_receive(int* src)
{
    int flag = 0;
    MPI_Status st;
    MPIPCL_CHECK_MPI(PMPI_Test(&req_, &flag, &st));
    if (!flag) {
        return false;
    }
    posted_ = false;
    ++recv_from_[st.MPI_SOURCE];
    *src = st.MPI_SOURCE;
    return true;
}

void ControlChannel::send(int dest, const CtrlMsg& msg)
{
    Outgoing o{std::make_unique<CtrlMsg>(msg), MPI_REQUEST_NULL};
    MPIPCL_CHECK_MPI(
        PMPI_Isend(o.msg.get(), sizeof(CtrlMsg), MPI_BYTE, dest, kCtrlTag, comm_, &o.req));
    ++sent_to_[dest];
    outgoing_.push_back(std::move(o));
    if (bells_ != nullptr) {
        bells_->ring(dest);  // the private communicator's ranks are MPI_COMM_WORLD's
    }
}

void ControlChannel::complete_sends()
{
    for (std::size_t i = 0; i < outgoing_.size();) {
        int flag = 0;
        PMPI_Test(&outgoing_[i].req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            outgoing_[i] = std::move(outgoing_.back());
            outgoing_.pop_back();
        } else {
            ++i;
        }
    }
}

void ControlChannel::drain()
{
    // Every control message another process sent here is received before MPI_Finalize, so
    // the MPI library never finds one unmatched (MPICH/UCX warns about those). Finalize is
    // collective: exchange how many each process sent to each other, then receive the rest.
    const int n = static_cast<int>(sent_to_.size());
    std::vector<std::uint64_t> expected(n, 0);
    if (PMPI_Alltoall(sent_to_.data(), 1, MPI_UINT64_T, expected.data(), 1, MPI_UINT64_T, comm_) !=
        MPI_SUCCESS) {
        MPIPCL_LOG(Warn, "finalize: cannot count the pending control messages");
        expected = recv_from_;
    }
    Backoff backoff(kFinalizeDrainYieldUs, kFinalizeDrainMaxSleepUs);
    for (;;) {
        int missing = 0;
        for (int p = 0; p < n; ++p) {
            missing += recv_from_[p] < expected[p];
        }
        if (missing == 0) {
            break;
        }
        post_receive();
        int flag = 0;
        MPI_Status st;
        if (PMPI_Test(&req_, &flag, &st) != MPI_SUCCESS) {
            break;
        }
        if (flag) {
            ++recv_from_[st.MPI_SOURCE];  // dropped: the application is finalizing
            posted_ = false;
            backoff.reset();
        } else {
            backoff.pause();
        }
    }
    if (posted_) {
        PMPI_Cancel(&req_);
        PMPI_Wait(&req_, MPI_STATUS_IGNORE);
        posted_ = false;
    }
    for (auto& o : outgoing_) {
        PMPI_Wait(&o.req, MPI_STATUS_IGNORE);
    }
    outgoing_.clear();
}

void ControlChannel::dump() const noexcept
{
    for (std::size_t r = 0; r < sent_to_.size(); ++r) {
        if (sent_to_[r] != 0 || recv_from_[r] != 0) {
            MPIPCL_LOG(Error,
                       "state dump: control messages with rank %zu: %llu sent, %llu received", r,
                       static_cast<unsigned long long>(sent_to_[r]),
                       static_cast<unsigned long long>(recv_from_[r]));
        }
    }
}

}  // namespace mpipcl::progress
