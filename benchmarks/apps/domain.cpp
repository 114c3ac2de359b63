// SPDX-License-Identifier: BSD-3-Clause
// One rank's part of the grid: decomposition, slabs, local field, faces, gather.
#include "domain.hpp"

#include <climits>

#include "mpi_util.hpp"

namespace mpipcl::stencil {

using bench::check;

namespace {

constexpr int kGatherTag = 11;

}  // namespace

Range block(int n, int parts, int p)
{
    const int base = n / parts;
    const int extra = n % parts;
    return Range{p * base + (p < extra ? p : extra), base + (p < extra ? 1 : 0)};
}

Decomposition decompose(MPI_Comm cart, const Box& global)
{
    Decomposition d;
    std::array<int, 3> periods{};
    check(MPI_Cart_get(cart, 3, d.dims.data(), periods.data(), d.coords.data()), "MPI_Cart_get");
    check(MPI_Cart_shift(cart, 0, 1, &d.neighbour[kLowX], &d.neighbour[kHighX]), "MPI_Cart_shift");
    check(MPI_Cart_shift(cart, 1, 1, &d.neighbour[kLowY], &d.neighbour[kHighY]), "MPI_Cart_shift");
    d.x = d.x_of(d.coords[0], global);
    d.y = d.y_of(d.coords[1], global);
    return d;
}

LocalField::LocalField(const Problem& problem, const Decomposition& decomposition, int threads)
    : problem_(problem),
      x_(decomposition.x),
      y_(decomposition.y),
      box_{decomposition.x.count, decomposition.y.count, problem.global().nz},
      threads_(threads)
{
    for (int t = 0; t < threads; ++t) {
        slabs_.push_back(block(box_.nz, threads, t));
        max_slab_ = std::max(max_slab_, slabs_.back().count);
    }
    const std::size_t n = box_.cells_with_ghosts();
    u_[0].reset(new double[n]);
    u_[1].reset(new double[n]);
    h2f_.reset(new double[n]);
}

void LocalField::reset(int t)
{
    const Range s = slab(t);
    const int k_first = t == 0 ? -1 : s.begin;                     // thread 0: the low z boundary
    const int k_last = t == threads_ - 1 ? box_.nz : s.end() - 1;  // last thread: the high one
    for (int k = k_first; k <= k_last; ++k) {
        for (int j = -1; j <= box_.ny; ++j) {
            for (int i = -1; i <= box_.nx; ++i) {
                const int gi = x_.begin + i;
                const int gj = y_.begin + j;
                const std::size_t c = box_.index(i, j, k);
                u_[0][c] = u_[1][c] = problem_.initial(gi, gj, k);
                h2f_[c] = problem_.on_boundary(gi, gj, k) ? 0.0 : problem_.h2f(gi, gj, k);
            }
        }
    }
}

void LocalField::compute_rows(int t, Range rows_j, Range cols_i, const double* src,
                              double* dst) const
{
    const std::size_t sy = box_.sy();
    const std::size_t sz = box_.sz();
    const double* h2f = h2f_.get();
    const Range s = slab(t);
    for (int k = s.begin; k < s.end(); ++k) {
        for (int j = rows_j.begin; j < rows_j.end(); ++j) {
            const std::size_t row = box_.index(0, j, k);
            for (int i = cols_i.begin; i < cols_i.end(); ++i) {
                dst[row + i] = jacobi_cell(src, row + i, sy, sz, h2f[row + i]);
            }
        }
    }
}

void LocalField::compute_boundary(int t, const double* src, double* dst) const
{
    const Range all_i{0, box_.nx};
    compute_rows(t, Range{0, 1}, all_i, src, dst);
    if (box_.ny > 1) {
        compute_rows(t, Range{box_.ny - 1, 1}, all_i, src, dst);
    }
    const Range inner_j{1, box_.ny - 2};
    if (inner_j.count > 0) {
        compute_rows(t, inner_j, Range{0, 1}, src, dst);
        if (box_.nx > 1) {
            compute_rows(t, inner_j, Range{box_.nx - 1, 1}, src, dst);
        }
    }
}

void LocalField::compute_interior(int t, const double* src, double* dst) const
{
    if (box_.nx > 2 && box_.ny > 2) {
        compute_rows(t, Range{1, box_.ny - 2}, Range{1, box_.nx - 2}, src, dst);
    }
}

void LocalField::pack(int t, int face, const double* u, double* out) const
{
    const Range s = slab(t);
    for (int k = s.begin; k < s.end(); ++k) {
        if (face < kLowY) {
            const int i = face == kLowX ? 0 : box_.nx - 1;
            for (int j = 0; j < box_.ny; ++j) {
                *out++ = u[box_.index(i, j, k)];
            }
        } else {
            const double* row = u + box_.index(0, face == kLowY ? 0 : box_.ny - 1, k);
            for (int i = 0; i < box_.nx; ++i) {
                *out++ = row[i];
            }
        }
    }
}

void LocalField::unpack(int t, int face, const double* in, double* u) const
{
    const Range s = slab(t);
    for (int k = s.begin; k < s.end(); ++k) {
        if (face < kLowY) {
            const int i = face == kLowX ? -1 : box_.nx;
            for (int j = 0; j < box_.ny; ++j) {
                u[box_.index(i, j, k)] = *in++;
            }
        } else {
            double* row = u + box_.index(0, face == kLowY ? -1 : box_.ny, k);
            for (int i = 0; i < box_.nx; ++i) {
                row[i] = *in++;
            }
        }
    }
}

std::vector<double> LocalField::interior(long iterations) const
{
    const double* u = u_[iterations % 2].get();
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(box_.nx) * box_.ny * box_.nz);
    for (int k = 0; k < box_.nz; ++k) {
        for (int j = 0; j < box_.ny; ++j) {
            const double* row = u + box_.index(0, j, k);
            out.insert(out.end(), row, row + box_.nx);
        }
    }
    return out;
}

void gather_field(MPI_Comm cart, const Decomposition& decomposition, const Box& global,
                  const std::vector<double>& local, std::vector<double>& global_field)
{
    int rank = 0;
    int size = 0;
    check(MPI_Comm_rank(cart, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(cart, &size), "MPI_Comm_size");
    if (rank != 0) {
        check(
            MPI_Send(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, 0, kGatherTag, cart),
            "MPI_Send");
        return;
    }
    std::vector<double> block_cells;
    for (int r = 0; r < size; ++r) {
        std::array<int, 3> c{};
        check(MPI_Cart_coords(cart, r, 3, c.data()), "MPI_Cart_coords");
        const Range x = decomposition.x_of(c[0], global);
        const Range y = decomposition.y_of(c[1], global);
        const std::size_t count = static_cast<std::size_t>(x.count) * y.count * global.nz;
        if (r == 0) {
            block_cells = local;
        } else {
            block_cells.resize(count);
            check(MPI_Recv(block_cells.data(), static_cast<int>(count), MPI_DOUBLE, r, kGatherTag,
                           cart, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        }
        const double* in = block_cells.data();
        for (int k = 0; k < global.nz; ++k) {
            for (int j = y.begin; j < y.end(); ++j) {
                for (int i = x.begin; i < x.end(); ++i) {
                    global_field[global.index(i, j, k)] = *in++;
                }
            }
        }
    }
}

}  // namespace mpipcl::stencil
