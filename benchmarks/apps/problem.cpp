// SPDX-License-Identifier: BSD-3-Clause
// The serial reference of the Jacobi iteration and the checksum / residual of a global field.
#include "problem.hpp"

#include <cmath>
#include <utility>

namespace mpipcl::stencil {

SerialGrid::SerialGrid(const Problem& problem) : problem_(problem), box_(problem.global())
{
    h2f_.resize(box_.cells_with_ghosts());
    u_[0].resize(box_.cells_with_ghosts());
    for (int k = -1; k <= box_.nz; ++k) {
        for (int j = -1; j <= box_.ny; ++j) {
            for (int i = -1; i <= box_.nx; ++i) {
                const std::size_t c = box_.index(i, j, k);
                u_[0][c] = problem_.initial(i, j, k);
                h2f_[c] = problem_.on_boundary(i, j, k) ? 0.0 : problem_.h2f(i, j, k);
            }
        }
    }
    u_[1] = u_[0];  // both hold the boundary layer
}

void SerialGrid::iterate(int iterations)
{
    const std::size_t sy = box_.sy();
    const std::size_t sz = box_.sz();
    for (int it = 0; it < iterations; ++it) {
        const double* src = u_[current_].data();
        double* dst = u_[1 - current_].data();
        for (int k = 0; k < box_.nz; ++k) {
            for (int j = 0; j < box_.ny; ++j) {
                const std::size_t row = box_.index(0, j, k);
                for (int i = 0; i < box_.nx; ++i) {
                    dst[row + i] = jacobi_cell(src, row + i, sy, sz, h2f_[row + i]);
                }
            }
        }
        current_ = 1 - current_;
    }
}

FieldSummary summarize_field(const Problem& problem, const std::vector<double>& u)
{
    const Box& box = problem.global();
    FieldSummary s;
    double squares = 0;
    for (int k = 0; k < box.nz; ++k) {
        for (int j = 0; j < box.ny; ++j) {
            for (int i = 0; i < box.nx; ++i) {
                const std::size_t c = box.index(i, j, k);
                s.checksum += u[c];
                const double step =
                    jacobi_cell(u.data(), c, box.sy(), box.sz(), problem.h2f(i, j, k)) - u[c];
                squares += step * step;
            }
        }
    }
    s.residual = std::sqrt(squares);
    return s;
}

}  // namespace mpipcl::stencil
