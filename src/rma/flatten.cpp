// SPDX-License-Identifier: BSD-3-Clause
// Decodes a datatype into byte blocks with MPI_Type_get_envelope/contents (recursively), and
// builds the equivalent byte datatype used in MPI_Put.
#include "rma/flatten.hpp"

#include <climits>

#include "common/error.hpp"

namespace mpipcl::rma {

namespace {

bool is_named(MPI_Datatype t)
{
    int ni = 0;
    int na = 0;
    int nd = 0;
    int comb = 0;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
           comb == MPI_COMBINER_NAMED;
}

/// Frees the derived datatypes MPI_Type_get_contents handed out (predefined ones stay).
struct ContentTypes {
    std::vector<MPI_Datatype> types;
    ~ContentTypes()
    {
        for (MPI_Datatype& t : types) {
            if (t != MPI_DATATYPE_NULL && !is_named(t)) {
                PMPI_Type_free(&t);
            }
        }
    }
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
    int ni = 0;
    int na = 0;
    int nd = 0;
    int comb = 0;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return false;
    }
    if (comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
        comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER) {
        return decode_basic(t, out);
    }
    std::vector<int> ints(ni);
    std::vector<MPI_Aint> addrs(na);
    ContentTypes ct;
    ct.types.assign(nd, MPI_DATATYPE_NULL);
    if (PMPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), ct.types.data()) !=
        MPI_SUCCESS) {
        return false;
    }
    const std::size_t cap = out.cap();
    if (comb == MPI_COMBINER_STRUCT) {
        const int count = ints[0];
        for (int i = 0; i < count; ++i) {
            Child c(cap);
            if (!decode_child(ct.types[i], &c) ||
                !out.append_run(c.blocks, c.extent, addrs[i], ints[1 + i])) {
                return false;
            }
        }
        return true;
    }
    if (nd != 1) {
        return false;
    }
    Child c(cap);
    return decode_child(ct.types[0], &c) && decode_derived(comb, ints, addrs, c, out);
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
        throw Error(c, "PMPI_Type_commit of the RMA byte datatype failed");
    }
    return t;
}

}  // namespace mpipcl::rma
