// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend's module table (common/backend_module.hpp), built in both configurations:
// its functions come from backend.cpp, or from disabled.cpp (MPIPCL_ENABLE_RMA=OFF), so the
// rma entry always exists and reports why it is unavailable. Registered at load time by the
// registrar below (see backend_module.hpp for why the order of static initializers does not
// matter).
#include "common/backend_module.hpp"
#include "rma/rma.hpp"

namespace mpipcl::rma {

namespace {

constexpr BackendModule kModule = {
    BackendKind::Rma,
    init,
    finalize,
    available,
    unavailable_reason,
    can_send,
    make_offer,
    create,
    [](const Agreement&) { return 0; },  // no data tags: the data goes through the window
    nullptr,                             // the put units come from the handshake as they are
};
const BackendModuleRegistrar kRegistrar(kModule);

}  // namespace

}  // namespace mpipcl::rma
