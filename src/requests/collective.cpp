// SPDX-License-Identifier: BSD-3-Clause
// Partitioned collectives: the schedule of internal transfers along trees, and the
// task that forwards and combines partitions in the engine's progress passes.
#include "requests/collective.hpp"

#include <climits>
#include <cstring>
#include <initializer_list>
#include <set>

#include "common/error.hpp"
#include "common/log.hpp"
#include "progress/comm_info.hpp"
#include "progress/engine.hpp"
#include "requests/request.hpp"

namespace mpipcl::requests {

using progress::Engine;
using progress::Transfer;

namespace {
// Tags of the internal transfers, below every tag a user may give (those are >= 0), so they
// never match a point-to-point partitioned operation even if the collective's key collided.
constexpr int kUpTag = -1;         // reduction: child -> parent
constexpr int kDownTag = -2;       // bcast: parent -> child
constexpr int kRelayTag = -3;      // reduce: rank 0 -> a root other than 0
constexpr int kCheckUpTag = -4;    // first-round check, child -> parent (rank-0 tree)
constexpr int kCheckDownTag = -5;  // first-round check, parent -> child (rank-0 tree)

/// The predefined ops in signature order (op_number is the index + 1).
const MPI_Op* predefined_ops(int* n)
{
    static const MPI_Op ops[] = {MPI_MAX,    MPI_MIN,    MPI_SUM,     MPI_PROD, MPI_LAND,
                                 MPI_BAND,   MPI_LOR,    MPI_BOR,     MPI_LXOR, MPI_BXOR,
                                 MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    *n = static_cast<int>(sizeof ops / sizeof ops[0]);
    return ops;
}

/// The type groups of the standard's table of predefined reduction ops (MPI-4.1 6.9.2).
enum TypeGroup : unsigned {
    kCInt = 1,     // C integer
    kFInt = 2,     // Fortran integer
    kFloat = 4,    // floating point
    kLogical = 8,  // logical
    kComplex = 16,
    kByte = 32,
    kMulti = 64,  // multi-language: MPI_AINT, MPI_OFFSET, MPI_COUNT
    kPair = 128,  // MPI_MAXLOC / MPI_MINLOC pair types
};

bool in(MPI_Datatype t, std::initializer_list<MPI_Datatype> list)
{
    for (const MPI_Datatype d : list) {
        if (d != MPI_DATATYPE_NULL && d == t) {
            return true;
        }
    }
    return false;
}

/// The group of a named datatype (0: none an op is defined on, e.g. MPI_CHAR, MPI_PACKED).
unsigned group_of(MPI_Datatype t)
{
    if (in(t, {MPI_INT, MPI_LONG, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
               MPI_LONG_LONG_INT, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_SIGNED_CHAR,
               MPI_UNSIGNED_CHAR, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
               MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T})) {
        return kCInt;
    }
    if (in(t, {MPI_INTEGER})) {
        return kFInt;
    }
    if (in(t, {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION})) {
        return kFloat;
    }
    if (in(t, {MPI_LOGICAL, MPI_C_BOOL, MPI_CXX_BOOL})) {
        return kLogical;
    }
    if (in(t, {MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX,
               MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_CXX_FLOAT_COMPLEX,
               MPI_CXX_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX})) {
        return kComplex;
    }
    if (in(t, {MPI_BYTE})) {
        return kByte;
    }
    if (in(t, {MPI_AINT, MPI_OFFSET, MPI_COUNT})) {
        return kMulti;
    }
    if (in(t, {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
               MPI_LONG_DOUBLE_INT, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER})) {
        return kPair;
    }
    return 0;
}

/// The groups predefined op number @p n (op_number) is defined on.
unsigned groups_of_op(int n)
{
    switch (n) {
        case 1:  // MPI_MAX
        case 2:  // MPI_MIN
            return kCInt | kFInt | kFloat | kMulti;
        case 3:  // MPI_SUM
        case 4:  // MPI_PROD
            return kCInt | kFInt | kFloat | kComplex | kMulti;
        case 5:  // MPI_LAND
        case 7:  // MPI_LOR
        case 9:  // MPI_LXOR
            return kCInt | kLogical;
        case 6:   // MPI_BAND
        case 8:   // MPI_BOR
        case 10:  // MPI_BXOR
            return kCInt | kFInt | kByte | kMulti;
        case 11:  // MPI_MAXLOC
        case 12:  // MPI_MINLOC
            return kPair;
        default:  // MPI_REPLACE, MPI_NO_OP: one-sided accumulates only
            return 0;
    }
}

/// Every named type @p t is built from is in @p groups (a pair type counts as a whole).
bool built_from(MPI_Datatype t, unsigned groups, int depth)
{
    int ni = 0;
    int na = 0;
    int nd = 0;
    int combiner = MPI_COMBINER_NAMED;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        return false;
    }
    if (combiner == MPI_COMBINER_NAMED) {
        return (group_of(t) & groups) != 0;
    }
    if (depth > 64) {
        return false;
    }
    std::vector<int> ints(static_cast<std::size_t>(ni));
    std::vector<MPI_Aint> addrs(static_cast<std::size_t>(na));
    std::vector<MPI_Datatype> types(static_cast<std::size_t>(nd));
    if (PMPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data()) !=
        MPI_SUCCESS) {
        return false;
    }
    bool ok = true;
    for (MPI_Datatype& d : types) {
        ok = ok && built_from(d, groups, depth + 1);
        int dni = 0;
        int dna = 0;
        int dnd = 0;
        int dc = MPI_COMBINER_NAMED;
        if (PMPI_Type_get_envelope(d, &dni, &dna, &dnd, &dc) == MPI_SUCCESS &&
            dc != MPI_COMBINER_NAMED) {
            PMPI_Type_free(&d);
        }
    }
    return ok;
}
}  // namespace

int op_number(MPI_Op op) noexcept
{
    int n = 0;
    const MPI_Op* ops = predefined_ops(&n);
    for (int i = 0; i < n; ++i) {
        if (ops[i] == op) {
            return i + 1;
        }
    }
    return 0;
}

int check_op(MPI_Op op, MPI_Datatype type)
{
    const int n = op_number(op);
    if (n == 0 || built_from(type, groups_of_op(n), 0)) {
        return MPI_SUCCESS;
    }
    return error_code(ErrId::BadOp);
}

Collective::Collective(const CollArgs& a)
    : kind_(a.kind), parts_(a.partitions), count_(a.count), op_(a.op)
{
    PMPI_Comm_rank(a.comm, &rank_);
    PMPI_Comm_size(a.comm, &size_);
    root_ = a.root;
    type_ = own_type(a.datatype, &owns_type_);
    try {
        MPI_Aint lb = 0;
        MPIPCL_CHECK_MPI(PMPI_Type_get_true_extent(type_, &true_lb_, &true_extent_));
        MPIPCL_CHECK_MPI(PMPI_Type_get_extent(type_, &lb, &extent_));
        dense_ = a.type_size == extent_ && true_extent_ == extent_ && true_lb_ == 0;
        size_scratch();
        sig_.kind = static_cast<std::int32_t>(kind_);
        sig_.root = kind_ == CollKind::Allreduce ? 0 : root_;
        sig_.op = reduces() ? op_number(op_) : 0;
        sig_.partitions = parts_;
        sig_.type_size = a.type_size;
        sig_.count = count_;
        Endpoint face;
        face.kind = Kind::Coll;
        face.buf = this;
        face.partitions = parts_;
        face.count = count_;
        face.datatype = type_;
        face.comm = a.comm;
        face_ = std::make_shared<Transfer>(face, a.options, 0, false);
        // Every local check has passed: only now the communicator's collective count moves
        // on (members whose init failed stay in step with each other).
        key_ = progress::collective_key(a.comm);
        state_.reset(new std::atomic<std::uint8_t>[static_cast<std::size_t>(parts_)]);
        for (int p = 0; p < parts_; ++p) {
            state_[p].store(0, std::memory_order_relaxed);
        }
        recv_ = static_cast<char*>(a.recvbuf);
        own_ = a.sendbuf == MPI_IN_PLACE ? recv_ : static_cast<const char*>(a.sendbuf);
        build_tree(a);
    } catch (...) {
        release();
        if (owns_type_) {
            PMPI_Type_free(&type_);
        }
        throw;
    }
}

Collective::~Collective()
{
    if (owns_type_) {
        int finalized = 0;
        PMPI_Finalized(&finalized);
        if (!finalized) {
            PMPI_Type_free(&type_);
        }
    }
}

void Collective::build_tree(const CollArgs& a)
{
    // Along the nodes: one crossing per node boundary. Inside a node a bcast takes one hop
    // (the receivers' copies run in parallel) and a reduction a binomial tree (its combining
    // is spread over the ranks).
    const std::vector<int> nodes = progress::nodes_of(a.comm);
    MPIPCL_LOG(Debug, "collective over %d ranks on %zu nodes (this rank's node: %d)", size_,
               std::set<int>(nodes.begin(), nodes.end()).size(), nodes[rank_]);
    if (kind_ == CollKind::Bcast) {
        contributes_ = rank_ == root_;
        build_bcast(a, node_tree(rank_, root_, nodes, Inside::Flat), a.recvbuf);
        data_ = all_;
        build_checks(a);
        return;
    }
    contributes_ = true;
    // The node tree combines in rank order only when every node holds a contiguous range of
    // ranks; a user op may not commute, so it takes the binomial tree otherwise (a choice
    // every member makes alike, whatever it was told of the op's commutativity).
    build_reduce(a, op_number(op_) != 0 || nodes_contiguous(nodes)
                        ? node_tree(rank_, 0, nodes, Inside::Binomial)
                        : binomial_tree(rank_, 0, size_));
    need_up_ = !direct_up_;
    if (kind_ == CollKind::Allreduce) {
        // The result leaves rank 0 from recvbuf.
        build_bcast(a, node_tree(rank_, 0, nodes, Inside::Flat), a.recvbuf);
    }
    data_ = all_;
    build_checks(a);
}

void Collective::build_bcast(const CollArgs& a, const TreeLinks& tree, void* buf)
{
    if (tree.parent >= 0) {
        down_recv_ = add_transfer(Kind::Recv, buf, tree.parent, kDownTag, a);
    }
    for (const int c : tree.children) {
        down_sends_.push_back(add_transfer(Kind::Send, buf, c, kDownTag, a));
    }
    need_down_ = down_recv_ != nullptr && !down_sends_.empty();
}

void Collective::build_checks(const CollArgs& a)
{
    // The binomial tree: it depends on nothing members could disagree on.
    const TreeLinks tree = binomial_tree(rank_, 0, size_);
    if (tree.parent >= 0) {
        check_up_send_ = add_transfer(Kind::Send, &check_byte_, tree.parent, kCheckUpTag, a, 1, 0);
        check_down_recv_ =
            add_transfer(Kind::Recv, &check_byte_, tree.parent, kCheckDownTag, a, 1, 0);
    }
    for (const int c : tree.children) {
        check_up_recvs_.push_back(add_transfer(Kind::Recv, &check_byte_, c, kCheckUpTag, a, 1, 0));
        check_down_sends_.push_back(
            add_transfer(Kind::Send, &check_byte_, c, kCheckDownTag, a, 1, 0));
    }
}

void Collective::size_scratch()
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

void Collective::build_reduce(const CollArgs& a, const TreeLinks& tree)
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
        up_recvs_.push_back(add_transfer(Kind::Recv, temp_bases_.back(), c, kUpTag, a));
    }
    // The result of the reduction phase: in the last child's buffer, or the own contribution.
    result_ = children.empty() ? const_cast<char*>(own_) : temp_bases_.back();
    if (rank_ != 0) {
        up_send_ = add_transfer(Kind::Send, result_, tree.parent, kUpTag, a);
        direct_up_ = children.empty();
    } else if (kind_ == CollKind::Reduce && root_ != 0) {
        relay_send_ = add_transfer(Kind::Send, result_, root_, kRelayTag, a);
    }
    if (kind_ == CollKind::Reduce && root_ != 0 && rank_ == root_) {
        relay_recv_ = add_transfer(Kind::Recv, recv_, 0, kRelayTag, a);
    }
}

Collective::TransferPtr Collective::add_transfer(Kind kind, const void* buf, int peer, int tag,
                                                 const CollArgs& a, int parts, MPI_Count count)
{
    InitArgs args;
    args.kind = kind;
    args.buf = buf;
    args.partitions = parts;
    args.count = count;
    args.datatype = type_;
    args.peer = peer;
    args.tag = tag;
    args.comm = a.comm;
    args.type_size = a.type_size;
    args.extent = a.extent;
    args.options = a.options;
    if (count == 0) {
        args.options.backend = BackendKind::Persistent;  // nothing to put: no window needed
    } else if (args.options.messages == 0) {
        // One internal message per partition unless the user asked otherwise: each partition
        // moves on at once, and MPI itself reads the buffer (the packed layout would copy it
        // in the Pready thread while this rank's other transfers write it).
        args.options.messages = parts;
    }
    // The collective owns the datatype handle: the transfers borrow it.
    auto t = std::make_shared<Transfer>(make_endpoint(args, key_), args.options,
                                        Engine::instance().next_id(), false);
    t->set_coll(sig_);
    all_.push_back(t);
    Engine::instance().add(t);
    return t;
}

BackendKind Collective::backend() const noexcept
{
    return all_.empty() ? BackendKind::Persistent : all_.front()->backend_kind();
}

char* Collective::part(const void* buf, int p) const noexcept
{
    return static_cast<char*>(const_cast<void*>(buf)) + static_cast<MPI_Aint>(p) * count_ * extent_;
}

void Collective::start()
{
    Engine& engine = Engine::instance();
    engine.remove_task(*this);  // waits for a pass still inside the previous round
    if (error_.load(std::memory_order_acquire) != MPI_SUCCESS) {
        return;  // sticky: the round completes at once with the error
    }
    for (int p = 0; p < parts_; ++p) {
        state_[p].store(0, std::memory_order_relaxed);
    }
    ready_count_.store(0, std::memory_order_relaxed);
    cursor_ = 0;
    const int steps = (need_up_ ? parts_ : 0) + (need_down_ ? parts_ : 0);
    pending_.store(steps, std::memory_order_relaxed);
    // The check transfers run in the first round only (see build_checks).
    for (const TransferPtr& t : started_once_ ? data_ : all_) {
        engine.start(t);
    }
    started_once_ = true;
    // Also without steps of its own: the task spreads a failed transfer to the others.
    engine.start_task(shared_from_this());
}

int Collective::pready(int lo, int hi, bool flush) noexcept
{
    int rc = MPI_SUCCESS;
    bool queued = false;
    for (int p = lo; p <= hi; ++p) {
        // sync: acq_rel: releases the caller's writes of partition p to the combiner (the
        // progress pass that sees kOwn), and orders duplicate detection.
        if ((state_[p].fetch_or(kOwn, std::memory_order_acq_rel) & kOwn) != 0) {
            rc = error_code(ErrId::DuplicatePready);
            continue;
        }
        ready_count_.fetch_add(1, std::memory_order_acq_rel);
        if (kind_ == CollKind::Bcast) {
            for (const TransferPtr& t : down_sends_) {
                bool q = false;
                (void)t->mark_ready(p, &q);
                queued = queued || q;
            }
        } else if (direct_up_) {
            bool q = false;
            (void)up_send_->mark_ready(p, &q);
            queued = queued || q;
        }
    }
    if (flush && queued) {
        flush_ready();
    }
    if (need_up_) {
        // The progress pass combines and passes it on: wake the progress thread for it.
        Engine& engine = Engine::instance();
        if (engine.progress_thread_running()) {
            engine.nudge();
        }
    }
    return rc;
}

void Collective::flush_ready() noexcept
{
    if (!Engine::instance().thread_multiple()) {
        return;  // the next progress pass issues it
    }
    if (kind_ == CollKind::Bcast) {
        for (const TransferPtr& t : down_sends_) {
            issue_queued(*t);
        }
    } else if (direct_up_) {
        issue_queued(*up_send_);
    }
}

int Collective::parrived(int p, int* flag) noexcept
{
    const Transfer* src = kind_ == CollKind::Reduce ? relay_recv_.get() : down_recv_.get();
    for (int pass = 0; pass < 2; ++pass) {
        if (round_complete()) {
            const int err = round_error();
            *flag = err == MPI_SUCCESS ? 1 : 0;
            return err;
        }
        // sync: acquire pairs with the release that published the partition's bytes.
        if (src != nullptr ? src->arrived(p)
                           : (state_[p].load(std::memory_order_acquire) & kFinal) != 0) {
            *flag = 1;
            Engine::parrived_hit();
            return MPI_SUCCESS;
        }
        if (pass == 0) {
            Engine::instance().parrived_missed();  // the point-to-point path's cheap miss
        }
    }
    *flag = 0;
    return MPI_SUCCESS;
}

bool Collective::all_transfers_done() const noexcept
{
    for (const TransferPtr& t : all_) {
        if (!t->round_complete()) {
            return false;
        }
    }
    return true;
}

bool Collective::round_complete() const noexcept
{
    // A failed round also waits for every transfer: one still running may write into the
    // temporary buffers, or its peer may still wait for it (the task aborts them all).
    if (error_.load(std::memory_order_acquire) == MPI_SUCCESS &&
        ((contributes_ && ready_count_.load(std::memory_order_acquire) < parts_) ||
         pending_.load(std::memory_order_acquire) > 0)) {
        return false;
    }
    return all_transfers_done();
}

int Collective::round_error() const noexcept
{
    if (const int e = error_.load(std::memory_order_acquire); e != MPI_SUCCESS) {
        return e;
    }
    for (const TransferPtr& t : all_) {
        if (t->round_error() != MPI_SUCCESS) {
            return t->round_error();
        }
    }
    return MPI_SUCCESS;
}

void Collective::release()
{
    Engine& engine = Engine::instance();
    engine.remove_task(*this);
    const bool failed = error_.load(std::memory_order_acquire) != MPI_SUCCESS;
    bool keep = false;
    for (const TransferPtr& t : all_) {
        // A receive the engine keeps (Engine::remove_unless_written) keeps this collective's
        // temporary buffers until MPI_Finalize as well.
        if (failed) {
            keep = engine.remove_unless_written(t) || keep;
        } else {
            engine.remove(t);
        }
    }
    if (keep) {
        engine.keep_until_finalize(shared_from_this());
    }
}

void Collective::fail(int code) noexcept
{
    int expected = MPI_SUCCESS;
    error_.compare_exchange_strong(expected, code, std::memory_order_acq_rel);
}

int Collective::transfer_error_locked() const noexcept
{
    for (const TransferPtr& t : all_) {
        if (const int e = t->sticky_error(); e != MPI_SUCCESS) {
            return e;
        }
    }
    return MPI_SUCCESS;
}

void Collective::abort_all_locked(int code) noexcept
{
    fail(code);
    const int err = error_.load(std::memory_order_acquire);
    Engine& engine = Engine::instance();
    for (const TransferPtr& t : all_) {
        engine.abort_locked(*t, err);
    }
    pending_.store(0, std::memory_order_release);
}

bool Collective::advance_locked() noexcept
{
    if (error_.load(std::memory_order_acquire) == MPI_SUCCESS) {
        if (const int e = transfer_error_locked(); e != MPI_SUCCESS) {
            fail(e);
        } else {
            if (pending_.load(std::memory_order_relaxed) > 0) {
                advance_steps_locked();
            }
            advance_check_locked();
        }
    }
    if (const int e = error_.load(std::memory_order_acquire); e != MPI_SUCCESS) {
        abort_all_locked(e);
        return true;
    }
    // Stays on the passes until its transfers are done: a peer's failure may still come.
    return pending_.load(std::memory_order_relaxed) == 0 && all_transfers_done();
}

bool Collective::waits_on_transfers() const noexcept
{
    return error_.load(std::memory_order_relaxed) == MPI_SUCCESS &&
           pending_.load(std::memory_order_relaxed) == 0 && up_checked_ && down_checked_;
}

void Collective::advance_check_locked() noexcept
{
    if (!up_checked_) {
        for (const TransferPtr& t : data_) {
            if (t->pairing() != progress::Pairing::Paired) {
                return;
            }
        }
        for (const TransferPtr& t : check_up_recvs_) {
            if (!t->arrived(0)) {
                return;
            }
        }
        up_checked_ = true;
        if (check_up_send_ != nullptr) {
            mark_locked(*check_up_send_, 0);
        }
    }
    if (!down_checked_ && (check_down_recv_ == nullptr || check_down_recv_->arrived(0))) {
        down_checked_ = true;
        for (const TransferPtr& t : check_down_sends_) {
            mark_locked(*t, 0);
        }
    }
}

void Collective::advance_steps_locked() noexcept
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

void Collective::mark_locked(Transfer& t, int p) noexcept
{
    bool queued = false;
    (void)t.mark_ready(p, &queued);
    if (queued) {
        t.flush();
    }
}

bool Collective::try_down_locked(int p) noexcept
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

bool Collective::try_up_locked(int p) noexcept
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

char* Collective::combine_locked(int p) noexcept
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

void Collective::reduce_local(const char* in, char* inout) noexcept
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

void Collective::copy_part_locked(const char* src, char* dst) noexcept
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

}  // namespace mpipcl::requests
