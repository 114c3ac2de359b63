// SPDX-License-Identifier: BSD-3-Clause
// The reduction ops of the partitioned collectives: which predefined op is which in the
// members' signature, and the standard's table of predefined ops on predefined types.
#include "collectives/ops.hpp"

#include <initializer_list>

#include "common/datatype.hpp"
#include "common/error.hpp"

namespace mpipcl::collectives {

namespace {
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
bool built_from(MPI_Datatype t, unsigned groups, int /*depth: every_named_type's own*/)
{
    return every_named_type(t, [groups](MPI_Datatype d) { return (group_of(d) & groups) != 0; });
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

}  // namespace mpipcl::collectives
