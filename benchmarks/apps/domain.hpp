// SPDX-License-Identifier: BSD-3-Clause
// One rank's part of the grid: the Cartesian decomposition, the z-slabs of the threads, the
// local field with its halo faces, and the gather of the distributed field.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "problem.hpp"

namespace mpipcl::stencil {

/// The four faces a rank may exchange, by the direction of its neighbour.
enum Face : int { kLowX = 0, kHighX = 1, kLowY = 2, kHighY = 3 };
inline constexpr int kFaces = 4;

/// The face a neighbour across @p face sees us through (low x <-> high x, low y <-> high y).
[[nodiscard]] constexpr int opposite(int face) { return face ^ 1; }

/// A contiguous run [begin, begin + count) of cells or planes.
struct Range {
    int begin = 0;
    int count = 0;
    [[nodiscard]] int end() const { return begin + count; }
};

/// Part @p p of @p parts of n cells: the first n % parts parts get one cell more.
[[nodiscard]] Range block(int n, int parts, int p);

/**
 * The decomposition over the ranks of a non-periodic Cartesian communicator whose z dimension
 * is 1: each rank holds a block of x and y (blocks differ by at most one cell) and all of z.
 */
struct Decomposition {
    std::array<int, 3> dims{};
    std::array<int, 3> coords{};
    std::array<int, kFaces> neighbour{};  ///< rank across each face, or MPI_PROC_NULL
    Range x;                              ///< this rank's global cells in x
    Range y;

    /// The blocks of Cartesian coordinates (cx, cy) of a global box.
    [[nodiscard]] Range x_of(int cx, const Box& global) const
    {
        return block(global.nx, dims[0], cx);
    }
    [[nodiscard]] Range y_of(int cy, const Box& global) const
    {
        return block(global.ny, dims[1], cy);
    }
};

/// Decomposition of @p global over the Cartesian communicator @p cart (dims[2] == 1).
[[nodiscard]] Decomposition decompose(MPI_Comm cart, const Box& global);

/**
 * This rank's cells, two arrays (the iteration reads one and writes the other) with a ghost
 * layer, and the work of thread t on its slab of z-planes [slab(t)): its boundary cells (the
 * ones that go into faces: i or j at the edge of the block), its interior, packing its part
 * of an outgoing face and unpacking its part of an incoming one into the ghost layer.
 * Thread t touches only planes of its slab (reads also the two planes around it).
 */
class LocalField {
   public:
    LocalField(const Problem& problem, const Decomposition& decomposition, int threads);

    [[nodiscard]] const Box& box() const { return box_; }
    [[nodiscard]] int threads() const { return threads_; }
    [[nodiscard]] Range slab(int t) const { return slabs_[static_cast<std::size_t>(t)]; }
    [[nodiscard]] int max_slab() const { return max_slab_; }

    /// Cells of a face per z-plane: ny for the x faces, nx for the y faces.
    [[nodiscard]] int face_width(int face) const { return face < kLowY ? box_.ny : box_.nx; }

    /// Thread t's part of resetting both arrays to the initial state (incl. the ghost layer:
    /// boundary values outside the box, the neighbours' start values elsewhere).
    void reset(int t);

    /// The array iteration number @p iteration of a run reads (iteration 0 reads the initial
    /// state), and the one it writes.
    [[nodiscard]] const double* source(long iteration) const { return u_[iteration % 2].get(); }
    [[nodiscard]] double* target(long iteration) { return u_[1 - iteration % 2].get(); }

    /// Thread t's cells with i or j at the edge of the block, then its remaining ones.
    void compute_boundary(int t, const double* src, double* dst) const;
    void compute_interior(int t, const double* src, double* dst) const;

    /// Copies thread t's part of @p face of @p u (the cells next to it) to @p out
    /// (face_width(face) * slab(t).count values, z-plane by z-plane).
    void pack(int t, int face, const double* u, double* out) const;
    /// Copies thread t's part of the neighbour's face from @p in into the ghost layer of @p u.
    void unpack(int t, int face, const double* in, double* u) const;

    /// The interior of the array written by a run of @p iterations iterations, k, j, i order.
    [[nodiscard]] std::vector<double> interior(long iterations) const;

   private:
    void compute_rows(int t, Range rows_j, Range cols_i, const double* src, double* dst) const;

    const Problem& problem_;
    Range x_;
    Range y_;
    Box box_;
    int threads_;
    std::vector<Range> slabs_;
    int max_slab_ = 0;
    // Not value-initialized: reset() touches each slab first from its own thread.
    std::unique_ptr<double[]> u_[2];
    std::unique_ptr<double[]> h2f_;
};

/**
 * Gathers the interior of every rank's field (@p local, in k, j, i order) on rank 0 of @p cart
 * into @p global, which must hold the global box with its boundary layer (it is left as it is
 * on the other ranks). Collective.
 */
void gather_field(MPI_Comm cart, const Decomposition& decomposition, const Box& global,
                  const std::vector<double>& local, std::vector<double>& global_field);

}  // namespace mpipcl::stencil
