// SPDX-License-Identifier: BSD-3-Clause
// The halo exchange of every variant, inside the threaded Jacobi loop.
#pragma once

#include <mpi.h>

#include <array>
#include <vector>

#include "domain.hpp"
#include "options.hpp"

namespace mpipcl::stencil {

/**
 * One rank's halo faces (a contiguous send and receive buffer per face that has a neighbour)
 * and the iteration loop of every variant. Face buffers hold z-plane after z-plane, so thread
 * t's part of a face is one contiguous run: at offset width * slab(t).begin for plain and
 * multi, and at t * width * max_slab for the partitioned variants, whose T partitions must be
 * of equal size (a thread with a thinner slab leaves the end of its partition unused).
 */
class Halo {
   public:
    /// @p comm: the Cartesian communicator of @p decomposition (MPI_ERRORS_RETURN).
    Halo(MPI_Comm comm, const Decomposition& decomposition, LocalField& field);
    ~Halo();
    Halo(const Halo&) = delete;
    Halo& operator=(const Halo&) = delete;

    /// Gets ready for runs of @p variant: for a partitioned one, creates its persistent
    /// partitioned requests (one send and one receive per face, T partitions each).
    void prepare(Variant variant);

    /// Iterations [first, first + count) of the Jacobi iteration on the field, with the halo
    /// exchange of the variant prepare() was called for. All ranks call it.
    void run(long first, int count);

    /// Frees what prepare() created.
    void release();

    /// Bytes this rank sends per iteration (its faces' cells; no partition padding).
    [[nodiscard]] double bytes_per_iteration() const;

   private:
    [[nodiscard]] int part_count(int face, int t) const;
    [[nodiscard]] std::size_t part_offset(int face, int t) const;
    [[nodiscard]] double* send_part(int face, int t);
    [[nodiscard]] double* recv_part(int face, int t);

    void run_compute(long first, int count);
    void run_plain(long first, int count);
    void run_multi(long first, int count);
    void run_partitioned(long first, int count);
    void exchange_whole_faces();

    MPI_Comm comm_;
    const Decomposition& decomposition_;
    LocalField& field_;
    std::vector<int> faces_;  ///< the faces with a neighbour
    std::array<std::vector<double>, kFaces> send_;
    std::array<std::vector<double>, kFaces> recv_;
    Variant variant_ = Variant::compute;
    bool padded_ = false;
    std::vector<MPI_Request> partitioned_;  ///< receives first, then sends (MPI_Startall order)
};

}  // namespace mpipcl::stencil
