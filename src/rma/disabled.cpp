// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend entry points in a build without it (MPIPCL_ENABLE_RMA=OFF); module.cpp places
// them in the rma module table, which then reports itself unavailable with the reason below.
#include "rma/rma.hpp"

namespace mpipcl::rma {

void init(MPI_Comm) noexcept {}
void finalize() noexcept {}
bool available() noexcept { return false; }
const char* unavailable_reason() noexcept
{
    return "this build has no RMA backend (MPIPCL_ENABLE_RMA=OFF)";
}
bool can_send(const Endpoint&) noexcept { return false; }
Offer make_offer(const Endpoint&, const RequestOptions&) { return Offer{}; }
std::unique_ptr<Backend> create(const Endpoint&, const RequestOptions&, const Agreement&, MPI_Comm,
                                const char** why_not)
{
    *why_not = unavailable_reason();
    return nullptr;
}

}  // namespace mpipcl::rma
