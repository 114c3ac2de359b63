// SPDX-License-Identifier: BSD-3-Clause
// Datatype inspection: TypeContents (the one reader of MPI_Type_get_envelope/contents and the
// one rule for freeing the handles get_contents returns), byte-block lists and the type-map
// combinators, the flattening of a datatype into them, own_type, dense_type and every_named_type.
#include "common/datatype.hpp"

#include <algorithm>
#include <climits>

#include "common/error.hpp"

namespace mpipcl {

bool BlockList::add(std::int64_t disp, std::int64_t len)
{
    if (overflow_) {
        return false;
    }
    if (len <= 0) {
        return true;
    }
    if (!blocks_.empty() && blocks_.back().disp + blocks_.back().len == disp) {
        blocks_.back().len += len;
    } else if (blocks_.size() == cap_) {
        overflow_ = true;
        return false;
    } else {
        blocks_.push_back({disp, len});
    }
    bytes_ += len;
    return true;
}

bool BlockList::append(const BlockList& child, std::int64_t offset)
{
    for (const Block& b : child.blocks()) {
        if (!add(b.disp + offset, b.len)) {
            return false;
        }
    }
    return !overflow_;
}

bool BlockList::append_run(const BlockList& child, std::int64_t child_extent, std::int64_t offset,
                           std::int64_t n)
{
    if (n <= 0 || child.blocks().empty()) {
        return !overflow_;
    }
    const auto& cb = child.blocks();
    if (cb.size() == 1 && cb[0].len == child_extent) {
        // A gap-free child: the run is one block, however long.
        return add(cb[0].disp + offset, n * child_extent);
    }
    for (std::int64_t i = 0; i < n; ++i) {
        if (!append(child, offset + i * child_extent)) {
            return false;
        }
    }
    return true;
}

bool append_subarray(BlockList& out, const BlockList& child, std::int64_t child_extent,
                     const std::vector<std::int64_t>& sizes,
                     const std::vector<std::int64_t>& subsizes,
                     const std::vector<std::int64_t>& starts, bool c_order)
{
    const std::size_t nd = sizes.size();
    if (nd == 0 || subsizes.size() != nd || starts.size() != nd) {
        return false;
    }
    // Work in C order: dimension nd-1 varies fastest.
    std::vector<std::int64_t> sz(sizes), sub(subsizes), st(starts);
    if (!c_order) {
        std::reverse(sz.begin(), sz.end());
        std::reverse(sub.begin(), sub.end());
        std::reverse(st.begin(), st.end());
    }
    for (std::size_t d = 0; d < nd; ++d) {
        if (sub[d] <= 0) {
            return !out.overflow();
        }
    }
    // stride[d]: elements between consecutive indices of dimension d.
    std::vector<std::int64_t> stride(nd, 1);
    for (std::size_t d = nd - 1; d > 0; --d) {
        stride[d - 1] = stride[d] * sz[d];
    }
    std::vector<std::int64_t> idx(nd, 0);  // odometer over the outer nd-1 dimensions
    for (;;) {
        std::int64_t first = 0;
        for (std::size_t d = 0; d < nd; ++d) {
            first += (st[d] + idx[d]) * stride[d];
        }
        if (!out.append_run(child, child_extent, first * child_extent, sub[nd - 1])) {
            return false;
        }
        std::size_t d = nd - 1;
        for (;;) {
            if (d == 0) {
                return true;
            }
            --d;
            if (++idx[d] < sub[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

namespace {

/// Deepest nesting of derived types the walks below follow; a deeper type answers false.
constexpr int kMaxTypeDepth = 64;

/// Whether @p comb is the combiner of a predefined type: a named one, or one that
/// MPI_Type_create_f90_* returned. MPI forbids freeing those (Open MPI refuses with
/// MPI_ERR_TYPE, which the default error handler makes fatal).
bool predefined(int comb)
{
    return comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
           comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER;
}

/// One datatype as MPI_Type_get_envelope (read) and MPI_Type_get_contents (contents) describe
/// it. It owns the datatype handles get_contents returned and frees them with itself, all but
/// the predefined ones: the library's one rule for content types.
class TypeContents {
   public:
    TypeContents() = default;
    TypeContents(const TypeContents&) = delete;
    TypeContents& operator=(const TypeContents&) = delete;
    ~TypeContents()
    {
        for (MPI_Datatype& t : types) {
            int n = 0;
            int comb = MPI_COMBINER_NAMED;
            if (t != MPI_DATATYPE_NULL &&
                PMPI_Type_get_envelope(t, &n, &n, &n, &comb) == MPI_SUCCESS && !predefined(comb)) {
                PMPI_Type_free(&t);
            }
        }
    }

    /// Reads the envelope of @p type: combiner and the content counts. False if the call fails.
    bool read(MPI_Datatype type)
    {
        type_ = type;
        return PMPI_Type_get_envelope(type, &ni_, &na_, &nd_, &combiner) == MPI_SUCCESS;
    }
    /// After read() of a type that is not named: reads ints, addrs and types. False if the
    /// call fails (then no handle is held).
    bool contents()
    {
        ints.assign(static_cast<std::size_t>(ni_), 0);
        addrs.assign(static_cast<std::size_t>(na_), 0);
        types.assign(static_cast<std::size_t>(nd_), MPI_DATATYPE_NULL);
        if (PMPI_Type_get_contents(type_, ni_, na_, nd_, ints.data(), addrs.data(), types.data()) !=
            MPI_SUCCESS) {
            types.clear();
            return false;
        }
        return true;
    }

    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    std::vector<MPI_Aint> addrs;
    std::vector<MPI_Datatype> types;

   private:
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
    int ni_ = 0;
    int na_ = 0;
    int nd_ = 0;
};

bool extent_of(MPI_Datatype t, std::int64_t* extent)
{
    MPI_Aint lb = 0;
    MPI_Aint ext = 0;
    if (PMPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS) {
        return false;
    }
    *extent = ext;
    return true;
}

/// Appends the blocks of one element of @p t (at displacement 0) to @p out.
bool decode(MPI_Datatype t, BlockList& out);

/// A content type decoded on its own, with its extent.
struct Child {
    BlockList blocks;
    std::int64_t extent = 0;
    explicit Child(std::size_t cap) : blocks(cap) {}
};

bool decode_child(MPI_Datatype t, Child* c)
{
    return extent_of(t, &c->extent) && decode(t, c->blocks);
}

/// A predefined type: one block of its size, unless it has a hole (MPI_SHORT_INT ...).
bool decode_basic(MPI_Datatype t, BlockList& out)
{
    MPI_Count size = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_extent = 0;
    if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, &true_lb, &true_extent) != MPI_SUCCESS) {
        return false;
    }
    if (size != true_extent) {
        return false;  // a predefined pair type with an internal hole
    }
    return out.add(true_lb, size);
}

/// Appends @p n runs of the child @p c: run i at displacement disp(i), len(i) elements long.
template <class Disp, class Len>
bool append_runs(BlockList& out, const Child& c, int n, Disp&& disp, Len&& len)
{
    for (int i = 0; i < n; ++i) {
        if (!out.append_run(c.blocks, c.extent, disp(i), len(i))) {
            return false;
        }
    }
    return true;
}

/// A derived type of one child type @p c with combiner @p comb and contents @p ints/@p addrs.
bool decode_derived(int comb, const std::vector<int>& ints, const std::vector<MPI_Aint>& addrs,
                    const Child& c, BlockList& out)
{
    const std::int64_t ext = c.extent;
    const int n = ints.empty() ? 0 : ints[0];
    const auto every = [&](int) { return ints[1]; };
    const auto each = [&](int i) { return ints[1 + i]; };
    const auto addr = [&](int i) { return std::int64_t{addrs[i]}; };
    switch (comb) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED:  // same type map; lb/extent are read from the type itself
            return out.append(c.blocks, 0);
        case MPI_COMBINER_CONTIGUOUS:
            return out.append_run(c.blocks, ext, 0, n);
        case MPI_COMBINER_VECTOR:
            return append_runs(
                out, c, n, [&](int i) { return std::int64_t{i} * ints[2] * ext; }, every);
        case MPI_COMBINER_HVECTOR:
            return append_runs(
                out, c, n, [&](int i) { return std::int64_t{i} * addrs[0]; }, every);
        case MPI_COMBINER_INDEXED:
            return append_runs(
                out, c, n, [&](int i) { return std::int64_t{ints[1 + n + i]} * ext; }, each);
        case MPI_COMBINER_HINDEXED:
            return append_runs(out, c, n, addr, each);
        case MPI_COMBINER_INDEXED_BLOCK:
            return append_runs(
                out, c, n, [&](int i) { return std::int64_t{ints[2 + i]} * ext; }, every);
        case MPI_COMBINER_HINDEXED_BLOCK:
            return append_runs(out, c, n, addr, every);
        case MPI_COMBINER_SUBARRAY: {
            std::vector<std::int64_t> sizes(ints.begin() + 1, ints.begin() + 1 + n);
            std::vector<std::int64_t> subs(ints.begin() + 1 + n, ints.begin() + 1 + 2 * n);
            std::vector<std::int64_t> starts(ints.begin() + 1 + 2 * n, ints.begin() + 1 + 3 * n);
            return append_subarray(out, c.blocks, ext, sizes, subs, starts,
                                   ints[1 + 3 * n] == MPI_ORDER_C);
        }
        default:
            return false;  // MPI_COMBINER_DARRAY and anything newer
    }
}

bool decode(MPI_Datatype t, BlockList& out)
{
    TypeContents c;
    if (!c.read(t)) {
        return false;
    }
    if (predefined(c.combiner)) {
        return decode_basic(t, out);
    }
    if (!c.contents()) {
        return false;
    }
    const std::size_t cap = out.cap();
    if (c.combiner == MPI_COMBINER_STRUCT) {
        const int count = c.ints[0];
        for (int i = 0; i < count; ++i) {
            Child ch(cap);
            if (!decode_child(c.types[i], &ch) ||
                !out.append_run(ch.blocks, ch.extent, c.addrs[i], c.ints[1 + i])) {
                return false;
            }
        }
        return true;
    }
    if (c.types.size() != 1) {
        return false;
    }
    Child ch(cap);
    return decode_child(c.types[0], &ch) && decode_derived(c.combiner, c.ints, c.addrs, ch, out);
}

}  // namespace

bool flatten_type(MPI_Datatype type, std::size_t cap, Flat* out)
{
    BlockList blocks(cap);
    MPI_Count size = 0;
    MPI_Aint lb = 0;
    MPI_Aint extent = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_extent = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS) {
        return false;
    }
    if (size > 0 && !decode(type, blocks)) {
        return false;
    }
    // The decoded type map must account for every byte of the type, inside its true extent.
    if (blocks.bytes() != size) {
        return false;
    }
    for (const Block& b : blocks.blocks()) {
        if (b.disp < true_lb || b.disp + b.len > true_lb + true_extent || b.len > INT_MAX) {
            return false;
        }
    }
    out->blocks = blocks.blocks();
    out->size = size;
    out->lb = lb;
    out->extent = extent;
    out->true_lb = true_lb;
    out->true_extent = true_extent;
    return true;
}

MPI_Datatype byte_datatype(const Flat& flat)
{
    if (flat.contiguous()) {
        return MPI_BYTE;
    }
    const int n = static_cast<int>(flat.blocks.size());
    std::vector<int> lens(n);
    std::vector<MPI_Aint> disps(n);
    for (int i = 0; i < n; ++i) {
        lens[i] = static_cast<int>(flat.blocks[i].len);
        disps[i] = static_cast<MPI_Aint>(flat.blocks[i].disp);
    }
    MPI_Datatype raw = MPI_DATATYPE_NULL;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPIPCL_CHECK_MPI(PMPI_Type_create_hindexed(n, lens.data(), disps.data(), MPI_BYTE, &raw));
    const int rc = PMPI_Type_create_resized(raw, flat.lb, flat.extent, &t);
    PMPI_Type_free(&raw);
    MPIPCL_CHECK_MPI(rc);
    if (const int c = PMPI_Type_commit(&t); c != MPI_SUCCESS) {
        PMPI_Type_free(&t);
        throw Error(c, "PMPI_Type_commit of the byte datatype failed");
    }
    return t;
}

MPI_Datatype own_type(MPI_Datatype type, MPI_Comm probe_comm, bool* owned)
{
    int ni = 0;
    int na = 0;
    int nd = 0;
    int combiner = MPI_COMBINER_NAMED;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        throw Error(ErrId::BadType, "invalid datatype");
    }
    *owned = combiner != MPI_COMBINER_NAMED;
    if (!*owned) {
        return type;
    }
    // MPI has no "is committed" query; a persistent send of one element to MPI_PROC_NULL on
    // probe_comm (MPI_ERRORS_RETURN) refuses an uncommitted type on Open MPI and MPICH alike
    // (Open MPI's MPI_Pack_size would crash instead). Init paths only.
    // (A non-null buffer: both MPIs refuse NULL with count 1 even though nothing is read.)
    static char dummy[1];
    MPI_Request probe = MPI_REQUEST_NULL;
    if (PMPI_Send_init(dummy, 1, type, MPI_PROC_NULL, 0, probe_comm, &probe) != MPI_SUCCESS) {
        throw Error(ErrId::BadType, "the datatype is not committed");
    }
    PMPI_Request_free(&probe);
    MPI_Datatype dup = MPI_DATATYPE_NULL;
    MPIPCL_CHECK_MPI(PMPI_Type_dup(type, &dup));
    return dup;
}

namespace {
/// @p t is named, or a duplicate or contiguous run of a type that is (at nesting @p depth).
bool dense_chain(MPI_Datatype t, int depth)
{
    TypeContents c;
    if (!c.read(t)) {
        return false;
    }
    if (c.combiner == MPI_COMBINER_NAMED) {
        return true;
    }
    const bool chain = c.combiner == MPI_COMBINER_DUP || c.combiner == MPI_COMBINER_CONTIGUOUS;
    return chain && depth <= kMaxTypeDepth && c.contents() && c.types.size() == 1 &&
           dense_chain(c.types[0], depth + 1);
}
}  // namespace

bool dense_type(MPI_Datatype type)
{
    MPI_Count size = 0;
    MPI_Count lb = 0;
    MPI_Count extent = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS || lb != 0 || extent != size) {
        return false;
    }
    return dense_chain(type, 0);
}

namespace {
bool every_named_type_at(MPI_Datatype t, const std::function<bool(MPI_Datatype)>& pred, int depth)
{
    TypeContents c;
    if (!c.read(t)) {
        return false;
    }
    if (c.combiner == MPI_COMBINER_NAMED) {
        return pred(t);
    }
    if (depth > kMaxTypeDepth || !c.contents()) {
        return false;
    }
    for (const MPI_Datatype d : c.types) {
        if (!every_named_type_at(d, pred, depth + 1)) {
            return false;
        }
    }
    return true;
}
}  // namespace

bool every_named_type(MPI_Datatype type, const std::function<bool(MPI_Datatype)>& pred)
{
    return every_named_type_at(type, pred, 0);
}

}  // namespace mpipcl
