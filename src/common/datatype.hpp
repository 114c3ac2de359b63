// SPDX-License-Identifier: BSD-3-Clause
// Datatype inspection, the one place that reads datatypes with MPI_Type_get_envelope/contents:
// the library's own handle on a user's type (own_type), whether a type is dense (dense_type),
// a walk over the named types a derived type is built from (every_named_type), and the
// flattening of one element into byte blocks with the equivalent byte datatype
// (flatten_type, byte_datatype; the RMA backend Puts with those). Every datatype handle
// MPI_Type_get_contents returns is freed by one rule, in datatype.cpp: all but the predefined
// ones (named, and the MPI_Type_create_f90_* types, which MPI forbids to free).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace mpipcl {

/// The library's own handle on @p type: a duplicate for derived types (the user may free
/// theirs right after init), the type itself for named ones. *owned says which. A derived type
/// must be committed: MPI has no query for that, so a persistent send of one element to
/// MPI_PROC_NULL on @p probe_comm (which must have MPI_ERRORS_RETURN) probes it. Init paths
/// only. Throws Error (BadType for an invalid or uncommitted type).
MPI_Datatype own_type(MPI_Datatype type, MPI_Comm probe_comm, bool* owned);

/// Whether @p type is dense: lower bound 0, extent == size, and a named type or a chain of
/// duplicates and contiguous runs of one, so its bytes lie in type-signature order. Any other
/// constructor, or a chain deeper than 64, answers false.
bool dense_type(MPI_Datatype type);

/// Whether @p pred holds for every named type @p type is built from (@p type itself if it is
/// named; a predefined pair type such as MPI_DOUBLE_INT counts as a whole), over every content
/// type of every constructor. An F90 type (MPI_Type_create_f90_*) holds no named type. False if
/// a call fails or the nesting is deeper than 64.
bool every_named_type(MPI_Datatype type, const std::function<bool(MPI_Datatype)>& pred);

/// One byte block of a flattened datatype.
struct Block {
    std::int64_t disp;  ///< byte displacement from the element's start address
    std::int64_t len;   ///< bytes
    bool operator==(const Block& o) const { return disp == o.disp && len == o.len; }
};

/// Blocks in type-map order; a block that starts where the previous one ends is merged into
/// it. Holds at most @p cap blocks: one more sets overflow() and the list stops growing.
class BlockList {
   public:
    explicit BlockList(std::size_t cap) : cap_(cap) {}

    /// Appends [disp, disp+len); zero-length blocks are dropped. False once overflowed.
    bool add(std::int64_t disp, std::int64_t len);
    /// Appends every block of @p child shifted by @p offset.
    bool append(const BlockList& child, std::int64_t offset);
    /// Appends @p n consecutive copies of @p child (extent @p child_extent) from @p offset.
    bool append_run(const BlockList& child, std::int64_t child_extent, std::int64_t offset,
                    std::int64_t n);

    const std::vector<Block>& blocks() const { return blocks_; }
    std::size_t cap() const { return cap_; }
    bool overflow() const { return overflow_; }
    /// Sum of the block lengths.
    std::int64_t bytes() const { return bytes_; }

   private:
    std::size_t cap_;
    bool overflow_ = false;
    std::int64_t bytes_ = 0;
    std::vector<Block> blocks_;
};

/// MPI_Type_create_subarray's type map: the @p subsizes box at @p starts of an array of
/// @p sizes elements of @p child (extent @p child_extent); @p c_order: C order (last
/// dimension fastest) if true, else Fortran order.
bool append_subarray(BlockList& out, const BlockList& child, std::int64_t child_extent,
                     const std::vector<std::int64_t>& sizes,
                     const std::vector<std::int64_t>& subsizes,
                     const std::vector<std::int64_t>& starts, bool c_order);

/// One element of a datatype in bytes.
struct Flat {
    std::vector<Block> blocks;
    std::int64_t size = 0;  ///< MPI_Type_size
    std::int64_t lb = 0;    ///< MPI_Type_get_extent
    std::int64_t extent = 0;
    std::int64_t true_lb = 0;  ///< MPI_Type_get_true_extent
    std::int64_t true_extent = 0;

    /// Consecutive elements form one gap-free byte run (element i starts at true_lb + i*extent).
    bool contiguous() const { return size == 0 || (blocks.size() == 1 && blocks[0].len == extent); }
};

/// Decodes @p type into @p out (at most @p cap blocks), recursively: named, dup, contiguous,
/// (h)vector, (h)indexed(_block), struct, subarray, resized. Returns false when the type cannot
/// be described this way (too many blocks, MPI_COMBINER_DARRAY, a predefined type with
/// internal holes such as MPI_SHORT_INT, a failing MPI call); the caller then uses another path.
bool flatten_type(MPI_Datatype type, std::size_t cap, Flat* out);

/// Builds the committed byte datatype equivalent to @p flat (hindexed MPI_BYTE blocks, resized
/// to flat's lb/extent), or MPI_BYTE for a contiguous one. Throws Error.
MPI_Datatype byte_datatype(const Flat& flat);

}  // namespace mpipcl
