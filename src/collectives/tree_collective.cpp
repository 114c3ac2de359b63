// SPDX-License-Identifier: BSD-3-Clause
// Partitioned bcast, reduce and allreduce: the schedule of internal transfers along trees,
// and the task that forwards and combines partitions in the engine's progress passes.
#include "collectives/tree_collective.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

#include "collectives/ops.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

namespace mpipcl::collectives {

using progress::Engine;
using progress::Transfer;

namespace {
// Tags of the internal transfers, below every tag a user may give (those are >= 0), so they
// never match a point-to-point partitioned operation even if the collective's key collided.
// -4 and -5 are the first round's checks (collective.cpp).
constexpr int kUpTag = -1;     // reduction: child -> parent
constexpr int kDownTag = -2;   // bcast: parent -> child
constexpr int kRelayTag = -3;  // reduce: rank 0 -> a root other than 0
}  // namespace

TreeCollective::TreeCollective(const CollArgs& a)
    : Collective(a), parts_(a.send.partitions), count_(a.send.count), op_(a.op), side_(a.send)
{
    root_ = a.root;
    type_ = own(a.send.datatype);
    try {
        MPI_Aint lb = 0;
        MPIPCL_CHECK_MPI(PMPI_Type_get_true_extent(type_, &true_lb_, &true_extent_));
        MPIPCL_CHECK_MPI(PMPI_Type_get_extent(type_, &lb, &extent_));
        dense_ = side_.type_size == extent_ && true_extent_ == extent_ && true_lb_ == 0;
        size_scratch();
        sig_.root = kind_ == CollKind::Allreduce ? 0 : root_;
        sig_.op = reduces() ? op_number(op_) : 0;
        sig_.partitions = parts_;
        sig_.type_size = side_.type_size;
        sig_.count = count_;
        state_parts_ = parts_;
        recv_ = static_cast<char*>(a.recvbuf);
        own_ = a.sendbuf == MPI_IN_PLACE ? recv_ : static_cast<const char*>(a.sendbuf);
        build_tree(a);
        build_checks();
    } catch (...) {
        release();
        throw;
    }
}

TreeCollective::~TreeCollective()
{
    // A failed round aborted the receives, but a send of a temporary buffer may still be in
    // flight: nobody may free what MPI can still read (Engine::keep_until_exit).
    if (failed()) {
        for (std::unique_ptr<char[]>& buf : temps_) {
            Engine::instance().keep_until_exit(buf);
        }
    }
}

void TreeCollective::build_tree(const CollArgs& a)
{
    // Along the nodes: one crossing per node boundary. Inside a node a bcast takes one hop
    // (the receivers' copies run in parallel) and a reduction a binomial tree (its combining
    // is spread over the ranks).
    const std::vector<int> nodes = progress::nodes_of(a.comm);
    MPIPCL_LOG(Debug, "collective over %d ranks on %zu nodes (this rank's node: %d)", size_,
               std::set<int>(nodes.begin(), nodes.end()).size(), nodes[rank_]);
    if (kind_ == CollKind::Bcast) {
        ready_parts_ = rank_ == root_ ? parts_ : 0;
        arrived_parts_ = rank_ == root_ ? 0 : parts_;
        build_bcast(node_tree(rank_, root_, nodes, Inside::Flat), a.recvbuf);
        return;
    }
    ready_parts_ = parts_;
    arrived_parts_ = kind_ == CollKind::Allreduce || rank_ == root_ ? parts_ : 0;
    // The node tree combines in rank order only when every node holds a contiguous range of
    // ranks; a user op may not commute, so it takes the binomial tree otherwise (a choice
    // every member makes alike, whatever it was told of the op's commutativity).
    build_reduce(op_number(op_) != 0 || nodes_contiguous(nodes)
                     ? node_tree(rank_, 0, nodes, Inside::Binomial)
                     : binomial_tree(rank_, 0, size_));
    need_up_ = !direct_up_;
    if (kind_ == CollKind::Allreduce) {
        // The result leaves rank 0 from recvbuf.
        build_bcast(node_tree(rank_, 0, nodes, Inside::Flat), a.recvbuf);
    }
}

void TreeCollective::build_bcast(const TreeLinks& tree, void* buf)
{
    if (tree.parent >= 0) {
        down_recv_ = add(Kind::Recv, buf, tree.parent, kDownTag);
    }
    for (const int c : tree.children) {
        down_sends_.push_back(add(Kind::Send, buf, c, kDownTag));
    }
    need_down_ = down_recv_ != nullptr && !down_sends_.empty();
}

int TreeCollective::steps() const noexcept
{
    return (need_up_ ? parts_ : 0) + (need_down_ ? parts_ : 0);
}

void TreeCollective::on_ready(int p, bool* queued) noexcept
{
    if (kind_ == CollKind::Bcast) {
        for (const TransferPtr& t : down_sends_) {
            mark_from_pready(*t, p, queued);
        }
    } else if (direct_up_) {
        mark_from_pready(*up_send_, p, queued);
    }
}

void TreeCollective::flush_sends() noexcept
{
    if (kind_ == CollKind::Bcast) {
        if (progress::issue_queued_all(down_sends_)) {
            progress::Engine::instance().push();  // one pass for every send it issued
        }
    } else if (direct_up_) {
        progress::issue_queued(*up_send_);
    }
}

bool TreeCollective::part_arrived(int p) const noexcept
{
    const Transfer* src = kind_ == CollKind::Reduce ? relay_recv_.get() : down_recv_.get();
    // sync: acquire pairs with the release that published the partition's bytes.
    return src != nullptr ? src->arrived(p)
                          : (state_[p].load(std::memory_order_acquire) & kFinal) != 0;
}

void TreeCollective::size_scratch()
{
    if (dense_ || kind_ == CollKind::Bcast) {
        return;
    }
    int bytes = 0;
    if (count_ > INT_MAX ||
        PMPI_Pack_size(static_cast<int>(count_), type_, MPI_COMM_SELF, &bytes) != MPI_SUCCESS) {
        throw Error(ErrId::BadCount, "a partition of a derived datatype is too large");
    }
    scratch_.resize(static_cast<std::size_t>(bytes));
}

void TreeCollective::build_reduce(const TreeLinks& tree)
{
    // The reduction tree is rooted at rank 0 whatever the root. Combining own ∘ children in
    // their order is the rank order MPI_Reduce defines wherever every subtree covers a
    // contiguous range of ranks (build_tree picks such a tree for a user op, which may not
    // commute; a predefined op commutes, and any order is MPI's). A root other than 0 gets
    // the result from rank 0 (the relay).
    const std::vector<int>& children = tree.children;
    // The bytes n elements span from the first one's true lower bound (none for n = 0).
    const MPI_Count n = static_cast<MPI_Count>(parts_) * count_;
    const std::size_t span =
        n == 0 ? 0 : static_cast<std::size_t>((n - 1) * extent_ + true_extent_);
    for (const int c : children) {
        temps_.emplace_back(new char[span > 0 ? span : 1]);
        temp_bases_.push_back(temps_.back().get() - true_lb_);
        up_recvs_.push_back(add(Kind::Recv, temp_bases_.back(), c, kUpTag));
    }
    // The result of the reduction phase: in the last child's buffer, or the own contribution.
    result_ = children.empty() ? const_cast<char*>(own_) : temp_bases_.back();
    if (rank_ != 0) {
        up_send_ = add(Kind::Send, result_, tree.parent, kUpTag);
        direct_up_ = children.empty();
    } else if (kind_ == CollKind::Reduce && root_ != 0) {
        relay_send_ = add(Kind::Send, result_, root_, kRelayTag);
    }
    if (kind_ == CollKind::Reduce && root_ != 0 && rank_ == root_) {
        relay_recv_ = add(Kind::Recv, recv_, 0, kRelayTag);
    }
}

char* TreeCollective::part(const void* buf, int p) const noexcept
{
    return static_cast<char*>(const_cast<void*>(buf)) + static_cast<MPI_Aint>(p) * count_ * extent_;
}

void TreeCollective::advance_steps_locked() noexcept
{
    bool all_before = true;  // every partition before p has moved all the way
    for (int p = cursor_; p < parts_; ++p) {
        const std::uint8_t s = state_[p].load(std::memory_order_acquire);
        bool done = true;
        if (need_up_ && (s & kUp) == 0) {
            done = try_up_locked(p) && done;
        }
        if (need_down_ && (s & kDown) == 0) {
            done = try_down_locked(p) && done;
        }
        if (done && all_before) {
            cursor_ = p + 1;
        }
        all_before = all_before && done;
    }
}

bool TreeCollective::try_down_locked(int p) noexcept
{
    if (!down_recv_->arrived(p)) {
        return false;
    }
    for (const TransferPtr& t : down_sends_) {
        mark_locked(*t, p);
    }
    state_[p].fetch_or(kDown, std::memory_order_release);
    pending_.fetch_sub(1, std::memory_order_release);
    return true;
}

bool TreeCollective::try_up_locked(int p) noexcept
{
    if ((state_[p].load(std::memory_order_acquire) & kOwn) == 0) {
        return false;
    }
    for (const TransferPtr& t : up_recvs_) {
        if (!t->arrived(p)) {
            return false;
        }
    }
    char* res = combine_locked(p);
    std::uint8_t bits = kUp;
    if (up_send_ != nullptr) {
        mark_locked(*up_send_, p);
    } else if (relay_send_ != nullptr) {
        mark_locked(*relay_send_, p);
    } else {
        // Rank 0 holds the result (reduce to 0, allreduce): into recvbuf, then down the tree.
        char* dst = part(recv_, p);
        if (res != dst) {
            copy_part_locked(res, dst);
        }
        bits |= kFinal;
        for (const TransferPtr& t : down_sends_) {
            mark_locked(*t, p);
        }
    }
    // sync: release publishes the result bytes to MPI_Parrived's acquire load of kFinal.
    state_[p].fetch_or(bits, std::memory_order_release);
    pending_.fetch_sub(1, std::memory_order_release);
    return true;
}

char* TreeCollective::combine_locked(int p) noexcept
{
    char* own = part(own_, p);
    if (up_recvs_.empty()) {
        return own;
    }
    // MPI_Reduce_local(in, inout) computes inout = in ∘ inout: fold from the right, into the
    // last child's buffer, so the operands keep rank order.
    char* acc = part(temp_bases_.back(), p);
    for (std::size_t i = up_recvs_.size() - 1; i-- > 0;) {
        reduce_local(part(temp_bases_[i], p), acc);
    }
    reduce_local(own, acc);
    return acc;
}

void TreeCollective::reduce_local(const char* in, char* inout) noexcept
{
    for (MPI_Count done = 0; done < count_;) {
        const int n = static_cast<int>(std::min<MPI_Count>(count_ - done, INT_MAX));
        const MPI_Aint off = static_cast<MPI_Aint>(done) * extent_;
        const int rc = PMPI_Reduce_local(in + off, inout + off, n, type_, op_);
        if (rc != MPI_SUCCESS) {
            MPIPCL_LOG(Info, "MPI_Reduce_local failed in a partitioned collective");
            fail(rc);
            return;
        }
        done += n;
    }
}

void TreeCollective::copy_part_locked(const char* src, char* dst) noexcept
{
    if (dense_) {
        std::memcpy(dst, src, static_cast<std::size_t>(count_ * extent_));
        return;
    }
    int pos = 0;
    const int bytes = static_cast<int>(scratch_.size());
    int rc = PMPI_Pack(src, static_cast<int>(count_), type_, scratch_.data(), bytes, &pos,
                       MPI_COMM_SELF);
    pos = 0;
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Unpack(scratch_.data(), bytes, &pos, dst, static_cast<int>(count_), type_,
                         MPI_COMM_SELF);
    }
    if (rc != MPI_SUCCESS) {
        fail(rc);
    }
}

}  // namespace mpipcl::collectives
