// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend's module table (common/backend_module.hpp), built in both configurations:
// its functions come from backend.cpp, or from disabled.cpp (MPIPCL_ENABLE_RMA=OFF), so the
// rma entry always exists and reports why it is unavailable.
#include "common/backend_module.hpp"
#include "rma/rma.hpp"

namespace mpipcl {

constexpr BackendModule kRmaModule = {
    BackendKind::Rma,
    rma::init,
    rma::finalize,
    rma::available,
    rma::unavailable_reason,
    rma::can_send,
    rma::make_offer,
    rma::create,
    [](const Agreement&) { return 0; },  // no data tags: the data goes through the window
    nullptr,                             // the put units come from the handshake as they are
    nullptr,                             // no packed layout
};

}  // namespace mpipcl
