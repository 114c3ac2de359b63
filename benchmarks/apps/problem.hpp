// SPDX-License-Identifier: BSD-3-Clause
// The problem every variant and the serial reference solve: grid, boundary, source, update.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpipcl::stencil {

/**
 * A box of nx x ny x nz cells with a ghost layer of one cell on every side, x fastest: cell
 * (i, j, k) for -1 <= i <= nx etc. lives at index(i, j, k). Local fields and the serial
 * reference use the same layout.
 */
struct Box {
    int nx = 0;
    int ny = 0;
    int nz = 0;

    [[nodiscard]] std::size_t sy() const { return static_cast<std::size_t>(nx) + 2; }
    [[nodiscard]] std::size_t sz() const { return sy() * (static_cast<std::size_t>(ny) + 2); }
    [[nodiscard]] std::size_t cells_with_ghosts() const
    {
        return sz() * (static_cast<std::size_t>(nz) + 2);
    }
    [[nodiscard]] std::size_t index(int i, int j, int k) const
    {
        return static_cast<std::size_t>(i + 1) + sy() * static_cast<std::size_t>(j + 1) +
               sz() * static_cast<std::size_t>(k + 1);
    }
};

/**
 * One Jacobi update of the cell at @p c (strides 1, @p sy, @p sz): the six neighbours and the
 * scaled source, summed in this order, divided by 6. The serial reference and every variant
 * evaluate this one expression on the same values, so their fields are equal bit for bit
 * (the build turns off floating-point contraction).
 */
inline double jacobi_cell(const double* u, std::size_t c, std::size_t sy, std::size_t sz,
                          double h2f)
{
    return (u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz] + h2f) / 6.0;
}

/**
 * The global problem: -Laplace(u) = f on the cells of a global nx x ny x nz box with spacing
 * h = 1 / (max(nx, ny, nz) + 1), fixed (Dirichlet) values on the ghost layer around it, and
 * a pseudo-random start inside, so that a misplaced halo value changes the result. Only
 * arithmetic (no libm), so every rank computes the same bits for the same global cell.
 */
class Problem {
   public:
    Problem(int nx, int ny, int nz)
        : global_{nx, ny, nz}, h_(1.0 / (static_cast<double>(std::max({nx, ny, nz})) + 1.0))
    {
    }

    [[nodiscard]] const Box& global() const { return global_; }

    /// Whether global cell (i, j, k) lies outside the box (on the fixed boundary layer).
    [[nodiscard]] bool on_boundary(int i, int j, int k) const
    {
        return i < 0 || j < 0 || k < 0 || i >= global_.nx || j >= global_.ny || k >= global_.nz;
    }

    /// The start value of global cell (i, j, k): the boundary value outside the box.
    [[nodiscard]] double initial(int i, int j, int k) const
    {
        if (on_boundary(i, j, k)) {
            return x(i) + 2.0 * x(j) + 3.0 * x(k);
        }
        std::uint64_t z = index_of(i, j, k) + 0x9e3779b97f4a7c15ULL;  // splitmix64
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        return static_cast<double>(z >> 11) * 0x1.0p-53;
    }

    /// h^2 f at global cell (i, j, k).
    [[nodiscard]] double h2f(int i, int j, int k) const
    {
        const double f = 1.0 + x(i) * x(j) + 4.0 * x(k) * (1.0 - x(k));
        return h_ * h_ * f;
    }

   private:
    [[nodiscard]] double x(int i) const { return static_cast<double>(i + 1) * h_; }
    [[nodiscard]] std::uint64_t index_of(int i, int j, int k) const
    {
        return static_cast<std::uint64_t>(i) +
               static_cast<std::uint64_t>(global_.nx) *
                   (static_cast<std::uint64_t>(j) +
                    static_cast<std::uint64_t>(global_.ny) * static_cast<std::uint64_t>(k));
    }

    Box global_;
    double h_;
};

/// The serial reference: the whole global box on one process, iterated with jacobi_cell.
class SerialGrid {
   public:
    explicit SerialGrid(const Problem& problem);

    /// Runs @p iterations Jacobi iterations from the initial state.
    void iterate(int iterations);

    /// The current field (with the boundary layer).
    [[nodiscard]] const std::vector<double>& field() const { return u_[current_]; }

   private:
    const Problem& problem_;
    Box box_;
    std::vector<double> u_[2];
    std::vector<double> h2f_;
    int current_ = 0;
};

/// What the output reports of a global field: a checksum (the sum of every interior cell, in
/// the order k, j, i) and the residual ||J(u) - u||_2 over the interior (the size of the next
/// Jacobi step).
struct FieldSummary {
    double checksum = 0;
    double residual = 0;
};

/// Summary of the global field @p u (layout problem.global(), boundary layer included).
[[nodiscard]] FieldSummary summarize_field(const Problem& problem, const std::vector<double>& u);

}  // namespace mpipcl::stencil
