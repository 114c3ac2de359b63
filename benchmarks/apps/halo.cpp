// SPDX-License-Identifier: BSD-3-Clause
// The halo exchange of every variant, inside the threaded Jacobi loop.
#include "halo.hpp"

#include <mpipcl.h>
#include <omp.h>

#include <string>
#include <thread>

#include "mpi_util.hpp"

namespace mpipcl::stencil {

using bench::BackendInfo;
using bench::check;

namespace {

// Message tags of a face travelling towards the neighbour across face f (the receiver
// expects tag(opposite(f)) from its neighbour across f).
constexpr int kTagPlain = 100;
constexpr int kTagPartitioned = 110;
constexpr int kTagMulti = 200;  // + face * T + thread; T <= 256 keeps it below 32767

/**
 * Polls faces 0 .. @p n - 1 (indices into the faces with a neighbour) with @p arrived (a test
 * that, once it reports true, has consumed that face) until every one has arrived; yields the
 * core between fruitless passes.
 */
template <class Arrived>
void poll_faces(std::size_t n, Arrived&& arrived)
{
    unsigned pending = (1u << n) - 1;
    while (pending != 0) {
        bool progress = false;
        for (std::size_t i = 0; i < n; ++i) {
            if ((pending & (1u << i)) != 0 && arrived(i)) {
                pending &= ~(1u << i);
                progress = true;
            }
        }
        if (!progress) {
            std::this_thread::yield();
        }
    }
}

}  // namespace

Halo::Halo(MPI_Comm comm, const Decomposition& decomposition, LocalField& field)
    : comm_(comm), decomposition_(decomposition), field_(field)
{
    for (int f = 0; f < kFaces; ++f) {
        if (decomposition.neighbour[static_cast<std::size_t>(f)] == MPI_PROC_NULL) {
            continue;
        }
        faces_.push_back(f);
        const std::size_t cells = static_cast<std::size_t>(field.face_width(f)) *
                                  static_cast<std::size_t>(field.max_slab()) *
                                  static_cast<std::size_t>(field.threads());
        send_[static_cast<std::size_t>(f)].assign(cells, 0.0);  // padding is sent too: defined
        recv_[static_cast<std::size_t>(f)].assign(cells, 0.0);
    }
}

Halo::~Halo() { release(); }

int Halo::part_count(int face, int t) const
{
    return field_.face_width(face) * (padded_ ? field_.max_slab() : field_.slab(t).count);
}

std::size_t Halo::part_offset(int face, int t) const
{
    const auto width = static_cast<std::size_t>(field_.face_width(face));
    return padded_ ? static_cast<std::size_t>(t) * width * field_.max_slab()
                   : width * static_cast<std::size_t>(field_.slab(t).begin);
}

double* Halo::send_part(int face, int t)
{
    return send_[static_cast<std::size_t>(face)].data() + part_offset(face, t);
}

double* Halo::recv_part(int face, int t)
{
    return recv_[static_cast<std::size_t>(face)].data() + part_offset(face, t);
}

double Halo::bytes_per_iteration() const
{
    double cells = 0;
    for (const int f : faces_) {
        cells += static_cast<double>(field_.face_width(f)) * field_.box().nz;
    }
    return cells * sizeof(double);
}

void Halo::prepare(Variant variant)
{
    release();
    variant_ = variant;
    const std::string backend = backend_of(variant);
    padded_ = !backend.empty();
    if (!padded_) {
        return;
    }
    const BackendInfo info(backend);
    const int partitions = field_.threads();
    std::vector<MPI_Request> sends;
    for (const int f : faces_) {
        const int peer = decomposition_.neighbour[static_cast<std::size_t>(f)];
        const auto count = static_cast<MPI_Count>(part_count(f, 0));
        MPI_Request recv = MPI_REQUEST_NULL;
        MPI_Request send = MPI_REQUEST_NULL;
        check(
            MPI_Precv_init(recv_[static_cast<std::size_t>(f)].data(), partitions, count, MPI_DOUBLE,
                           peer, kTagPartitioned + opposite(f), comm_, info.get(), &recv),
            "MPI_Precv_init");
        check(MPI_Psend_init(send_[static_cast<std::size_t>(f)].data(), partitions, count,
                             MPI_DOUBLE, peer, kTagPartitioned + f, comm_, info.get(), &send),
              "MPI_Psend_init");
        partitioned_.push_back(recv);
        sends.push_back(send);
    }
    partitioned_.insert(partitioned_.end(), sends.begin(), sends.end());
}

void Halo::release()
{
    for (MPI_Request& r : partitioned_) {
        check(MPI_Request_free(&r), "MPI_Request_free");
    }
    partitioned_.clear();
    padded_ = false;
}

void Halo::run(long first, int count)
{
    if (count == 0) {
        return;
    }
    switch (variant_) {
        case Variant::compute:
            run_compute(first, count);
            break;
        case Variant::plain:
            run_plain(first, count);
            break;
        case Variant::multi:
            run_multi(first, count);
            break;
        default:
            run_partitioned(first, count);
            break;
    }
}

void Halo::run_compute(long first, int count)
{
#pragma omp parallel num_threads(field_.threads())
    {
        const int t = omp_get_thread_num();
        for (long it = first; it < first + count; ++it) {
            field_.compute_boundary(t, field_.source(it), field_.target(it));
            field_.compute_interior(t, field_.source(it), field_.target(it));
#pragma omp barrier
        }
    }
}

void Halo::exchange_whole_faces()
{
    std::vector<MPI_Request> requests;
    requests.reserve(2 * faces_.size());
    for (const int f : faces_) {
        const auto cells = static_cast<int>(field_.face_width(f) * field_.box().nz);
        const int peer = decomposition_.neighbour[static_cast<std::size_t>(f)];
        requests.emplace_back();
        check(MPI_Irecv(recv_[static_cast<std::size_t>(f)].data(), cells, MPI_DOUBLE, peer,
                        kTagPlain + opposite(f), comm_, &requests.back()),
              "MPI_Irecv");
    }
    for (const int f : faces_) {
        const auto cells = static_cast<int>(field_.face_width(f) * field_.box().nz);
        const int peer = decomposition_.neighbour[static_cast<std::size_t>(f)];
        requests.emplace_back();
        check(MPI_Isend(send_[static_cast<std::size_t>(f)].data(), cells, MPI_DOUBLE, peer,
                        kTagPlain + f, comm_, &requests.back()),
              "MPI_Isend");
    }
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
}

// plain: every thread computes all its cells and packs its parts; the threads join; thread 0
// exchanges the whole faces; after a second join each thread unpacks its parts.
void Halo::run_plain(long first, int count)
{
#pragma omp parallel num_threads(field_.threads())
    {
        const int t = omp_get_thread_num();
        for (long it = first; it < first + count; ++it) {
            double* dst = field_.target(it);
            field_.compute_boundary(t, field_.source(it), dst);
            field_.compute_interior(t, field_.source(it), dst);
            for (const int f : faces_) {
                field_.pack(t, f, dst, send_part(f, t));
            }
#pragma omp barrier
            if (t == 0) {
                exchange_whole_faces();
            }
#pragma omp barrier
            for (const int f : faces_) {
                field_.unpack(t, f, recv_part(f, t), dst);
            }
        }
    }
}

// multi: thread t posts the receives of its parts, computes its boundary cells, sends its part
// of each face with MPI_Isend, computes its interior, then tests its receives and unpacks each
// part as it lands.
void Halo::run_multi(long first, int count)
{
    const int threads = field_.threads();
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num();
        std::array<MPI_Request, kFaces> recvs{};
        std::vector<MPI_Request> sends;
        for (long it = first; it < first + count; ++it) {
            double* dst = field_.target(it);
            for (const int f : faces_) {
                check(MPI_Irecv(recv_part(f, t), part_count(f, t), MPI_DOUBLE,
                                decomposition_.neighbour[static_cast<std::size_t>(f)],
                                kTagMulti + opposite(f) * threads + t, comm_,
                                &recvs[static_cast<std::size_t>(f)]),
                      "MPI_Irecv");
            }
            field_.compute_boundary(t, field_.source(it), dst);
            sends.clear();
            for (const int f : faces_) {
                field_.pack(t, f, dst, send_part(f, t));
                sends.emplace_back();
                check(MPI_Isend(send_part(f, t), part_count(f, t), MPI_DOUBLE,
                                decomposition_.neighbour[static_cast<std::size_t>(f)],
                                kTagMulti + f * threads + t, comm_, &sends.back()),
                      "MPI_Isend");
            }
            field_.compute_interior(t, field_.source(it), dst);
            poll_faces(faces_.size(), [&](std::size_t i) {
                const int f = faces_[i];
                int done = 0;
                check(MPI_Test(&recvs[static_cast<std::size_t>(f)], &done, MPI_STATUS_IGNORE),
                      "MPI_Test");
                if (done != 0) {
                    field_.unpack(t, f, recv_part(f, t), dst);
                }
                return done != 0;
            });
            check(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE),
                  "MPI_Waitall");
#pragma omp barrier
        }
    }
}

// part-*: thread 0 completes the previous round and starts the requests (receives first); after
// a join, thread t computes its boundary cells, packs its part of each face and marks it with
// MPI_Pready(t), computes its interior, then polls MPI_Parrived(t) on each incoming face and
// unpacks each part as it lands.
void Halo::run_partitioned(long first, int count)
{
    const auto n = static_cast<int>(partitioned_.size());
    const std::size_t receives = faces_.size();
#pragma omp parallel num_threads(field_.threads())
    {
        const int t = omp_get_thread_num();
        for (long it = first; it < first + count; ++it) {
            double* dst = field_.target(it);
#pragma omp barrier
            if (t == 0) {
                if (it != first) {
                    check(MPI_Waitall(n, partitioned_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
                }
                check(MPI_Startall(n, partitioned_.data()), "MPI_Startall");
            }
#pragma omp barrier
            field_.compute_boundary(t, field_.source(it), dst);
            for (std::size_t i = 0; i < faces_.size(); ++i) {
                field_.pack(t, faces_[i], dst, send_part(faces_[i], t));
                check(MPI_Pready(t, partitioned_[receives + i]), "MPI_Pready");
            }
            field_.compute_interior(t, field_.source(it), dst);
            poll_faces(faces_.size(), [&](std::size_t i) {
                int flag = 0;
                check(MPI_Parrived(partitioned_[i], t, &flag), "MPI_Parrived");
                if (flag != 0) {
                    field_.unpack(t, faces_[i], recv_part(faces_[i], t), dst);
                }
                return flag != 0;
            });
        }
#pragma omp barrier
        if (t == 0) {
            check(MPI_Waitall(n, partitioned_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        }
    }
}

}  // namespace mpipcl::stencil
