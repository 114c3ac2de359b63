// SPDX-License-Identifier: BSD-3-Clause
// Partitioned gather, allgather, alltoall and neighbour alltoall: one internal partitioned
// transfer per block a rank sends or receives.
#include "collectives/block_collective.hpp"

#include <algorithm>

#include "collectives/tree.hpp"
#include "common/config.hpp"
#include "common/error.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"

namespace mpipcl::collectives {

namespace {
// The tag of the internal transfers carrying blocks with tag index k (Neighbours): below the
// tree collectives' and the checks' (-1 .. -5), and below every tag a user may give.
constexpr int kBlockTag = -16;

/// How often @p v[i] occurs in v[0 .. i-1]: repeated edges between two ranks pair in order.
std::vector<int> occurrences(const std::vector<int>& v)
{
    std::vector<int> k(v.size(), 0);
    for (std::size_t i = 0; i < v.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            k[i] += v[j] == v[i] ? 1 : 0;
        }
    }
    return k;
}

BlockCollective::Neighbours cart_neighbours(MPI_Comm comm)
{
    int ndims = 0;
    MPIPCL_CHECK_MPI(PMPI_Cartdim_get(comm, &ndims));
    BlockCollective::Neighbours n;
    for (int d = 0; d < ndims; ++d) {
        int lower = MPI_PROC_NULL;
        int upper = MPI_PROC_NULL;
        MPIPCL_CHECK_MPI(PMPI_Cart_shift(comm, d, 1, &lower, &upper));
        // Send block j carries tag index j; receive block 2d (from the lower neighbour) is
        // that neighbour's block 2d + 1, the one it sends up, and the other way round: so
        // the pairs stay apart where both neighbours are one rank.
        n.out.insert(n.out.end(), {lower, upper});
        n.out_tag.insert(n.out_tag.end(), {2 * d, 2 * d + 1});
        n.in.insert(n.in.end(), {lower, upper});
        n.in_tag.insert(n.in_tag.end(), {2 * d + 1, 2 * d});
    }
    return n;
}

BlockCollective::Neighbours graph_neighbours(MPI_Comm comm, bool dist)
{
    BlockCollective::Neighbours n;
    if (dist) {
        int indeg = 0;
        int outdeg = 0;
        int weighted = 0;
        MPIPCL_CHECK_MPI(PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted));
        n.in.resize(static_cast<std::size_t>(indeg));
        n.out.resize(static_cast<std::size_t>(outdeg));
        std::vector<int> inw(static_cast<std::size_t>(indeg) + 1);
        std::vector<int> outw(static_cast<std::size_t>(outdeg) + 1);
        MPIPCL_CHECK_MPI(PMPI_Dist_graph_neighbors(comm, indeg, n.in.data(), inw.data(), outdeg,
                                                   n.out.data(), outw.data()));
    } else {
        int rank = 0;
        int count = 0;
        PMPI_Comm_rank(comm, &rank);
        MPIPCL_CHECK_MPI(PMPI_Graph_neighbors_count(comm, rank, &count));
        n.out.resize(static_cast<std::size_t>(count));
        MPIPCL_CHECK_MPI(PMPI_Graph_neighbors(comm, rank, count, n.out.data()));
        n.in = n.out;
    }
    n.out_tag = occurrences(n.out);
    n.in_tag = occurrences(n.in);
    return n;
}
}  // namespace

BlockCollective::Neighbours BlockCollective::neighbours(MPI_Comm comm)
{
    int topo = MPI_UNDEFINED;
    MPIPCL_CHECK_MPI(PMPI_Topo_test(comm, &topo));
    if (topo == MPI_CART) {
        return cart_neighbours(comm);
    }
    if (topo == MPI_GRAPH || topo == MPI_DIST_GRAPH) {
        return graph_neighbours(comm, topo == MPI_DIST_GRAPH);
    }
    throw Error(ErrId::BadTopology, "no cartesian or graph topology");
}

BlockCollective::BlockCollective(const CollArgs& a) : Collective(a), send_(a.send), recv_(a.recv)
{
    // Block sizes are compared pair by pair, as for point-to-point (one side may cut its
    // blocks into other partition counts); the members agree on kind and root.
    sig_.root = kind_ == CollKind::Gather ? a.root : 0;
    min_message_bytes_ = config().block_message_bytes;
    try {
        build(a);
        build_checks();
    } catch (...) {
        release();
        throw;
    }
}

BlockCollective::~BlockCollective() = default;

const char* BlockCollective::block(const void* buf, const Side& s, int b) noexcept
{
    return static_cast<const char*>(buf) +
           static_cast<MPI_Aint>(b) * s.partitions * s.count * s.extent;
}

BlockCollective::Neighbours BlockCollective::peers(const CollArgs& a) const
{
    if (kind_ == CollKind::Neighbor) {
        return neighbours(a.comm);
    }
    Neighbours n;
    std::vector<int> all(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
        all[static_cast<std::size_t>(r)] = r;
    }
    n.out = kind_ == CollKind::Gather ? std::vector<int>{a.root} : all;
    if (kind_ != CollKind::Gather || rank_ == a.root) {
        n.in = all;
    }
    n.out_tag.assign(n.out.size(), 0);
    n.in_tag.assign(n.in.size(), 0);
    return n;
}

void BlockCollective::build(const CollArgs& a)
{
    const Neighbours n = peers(a);
    const bool in_place = a.sendbuf == MPI_IN_PLACE;
    if (in_place) {
        own_block_ = rank_;
        send_ = recv_;  // the own block, in recvbuf, is what goes out
    }
    const MPI_Datatype rtype = n.in.empty() ? MPI_DATATYPE_NULL : own(recv_.datatype);
    const MPI_Datatype stype = in_place ? rtype : own(send_.datatype);
    ready_per_block_ = send_.partitions;
    if (kind_ == CollKind::Allgather) {
        build_allgather(a, stype, rtype);
    } else {
        // gather sends one block, to the root; alltoall and the neighbour call one per peer.
        sends_.resize(kind_ == CollKind::Gather ? 1 : n.out.size());
        for (std::size_t j = 0; j < n.out.size(); ++j) {
            const int peer = n.out[j];
            if (peer == MPI_PROC_NULL || (in_place && peer == rank_)) {
                continue;
            }
            const int b = kind_ == CollKind::Gather ? 0 : static_cast<int>(j);
            sends_[static_cast<std::size_t>(b)].push_back(
                add_transfer(Kind::Send, block(a.sendbuf, send_, b), peer, kBlockTag - n.out_tag[j],
                             send_, stype));
        }
        recvs_.resize(n.in.size());
        for (std::size_t i = 0; i < n.in.size(); ++i) {
            const int peer = n.in[i];
            if (peer == MPI_PROC_NULL || static_cast<int>(i) == own_block_) {
                continue;
            }
            recvs_[i] = add_transfer(Kind::Recv, block(a.recvbuf, recv_, static_cast<int>(i)), peer,
                                     kBlockTag - n.in_tag[i], recv_, rtype);
        }
    }
    ready_parts_ = static_cast<int>(sends_.size()) * ready_per_block_;
    arrived_parts_ = static_cast<int>(recvs_.size()) * recv_.partitions;
    queued_.reset(new std::atomic<bool>[sends_.size() + 1]);
    for (std::size_t b = 0; b <= sends_.size(); ++b) {
        queued_[b].store(false, std::memory_order_relaxed);
    }
}

void BlockCollective::build_allgather(const CollArgs& a, MPI_Datatype stype, MPI_Datatype rtype)
{
    const std::vector<int> nodes = progress::nodes_of(a.comm);
    const bool in_place = own_block_ >= 0;
    const void* own = in_place ? block(a.recvbuf, recv_, rank_) : a.sendbuf;
    sends_.resize(1);
    recvs_.resize(static_cast<std::size_t>(size_));
    if (!in_place) {  // the own block into recvbuf: a transfer to itself
        sends_[0].push_back(add_transfer(Kind::Send, own, rank_, kBlockTag - rank_, send_, stype));
    }
    for (int r = 0; r < size_; ++r) {
        // Block r's tag keeps the blocks of different origins apart between two ranks.
        const TreeLinks tree = node_tree(rank_, r, nodes, Inside::Flat);
        const int tag = kBlockTag - r;
        const char* buf = block(a.recvbuf, recv_, r);
        if (r == rank_ && !in_place) {
            recvs_[static_cast<std::size_t>(r)] =
                add_transfer(Kind::Recv, buf, rank_, tag, recv_, rtype);
        } else if (r != rank_) {
            recvs_[static_cast<std::size_t>(r)] =
                add_transfer(Kind::Recv, buf, tree.parent, tag, recv_, rtype);
        }
        Forward f;
        f.from = r == rank_ ? nullptr : recvs_[static_cast<std::size_t>(r)];
        for (const int c : tree.children) {
            const TransferPtr t = r == rank_ ? add_transfer(Kind::Send, own, c, tag, send_, stype)
                                             : add_transfer(Kind::Send, buf, c, tag, recv_, rtype);
            (r == rank_ ? sends_[0] : f.to).push_back(t);
        }
        if (!f.to.empty()) {
            f.done.assign(static_cast<std::size_t>(recv_.partitions), 0);
            forwards_.push_back(std::move(f));
        }
    }
}

int BlockCollective::steps() const noexcept
{
    return static_cast<int>(forwards_.size()) * recv_.partitions;
}

void BlockCollective::reset_round() noexcept
{
    for (Forward& f : forwards_) {
        std::fill(f.done.begin(), f.done.end(), 0);
    }
}

void BlockCollective::advance_steps_locked() noexcept
{
    for (Forward& f : forwards_) {
        for (int p = 0; p < recv_.partitions; ++p) {
            if (f.done[static_cast<std::size_t>(p)] == 0 && f.from->arrived(p)) {
                for (const TransferPtr& t : f.to) {
                    mark_locked(*t, p);
                }
                f.done[static_cast<std::size_t>(p)] = 1;
                pending_.fetch_sub(1, std::memory_order_release);
            }
        }
    }
}

void BlockCollective::on_ready(int p, bool* queued) noexcept
{
    const auto b = static_cast<std::size_t>(p / ready_per_block_);
    const int part = p % ready_per_block_;
    bool q = false;
    for (const TransferPtr& t : sends_[b]) {
        mark_from_pready(*t, part, &q);
    }
    if (q) {
        // sync: release: the flusher that takes the flag sees the queued units.
        queued_[b].store(true, std::memory_order_release);
        *queued = true;
    }
}

void BlockCollective::flush_sends() noexcept
{
    bool push = false;
    for (std::size_t b = 0; b < sends_.size(); ++b) {
        if (!queued_[b].load(std::memory_order_relaxed) ||
            !queued_[b].exchange(false, std::memory_order_acq_rel)) {
            continue;
        }
        push = progress::issue_queued_all(sends_[b]) || push;
    }
    if (push) {
        progress::Engine::instance().push();  // one pass for every send it issued
    }
}

bool BlockCollective::part_arrived(int q) const noexcept
{
    const int b = q / recv_.partitions;
    const int part = q % recv_.partitions;
    if (b == own_block_) {
        // sync: acquire pairs with MPI_Pready's release of the partition's bytes.
        return (state_[part].load(std::memory_order_acquire) & kOwn) != 0;
    }
    const TransferPtr& t = recvs_[static_cast<std::size_t>(b)];
    return t == nullptr || t->arrived(part);
}

}  // namespace mpipcl::collectives
