// SPDX-License-Identifier: BSD-3-Clause
// The backend module slots (see backend_module.hpp for why load-time registration is safe).
#include "common/backend_module.hpp"

namespace mpipcl {

namespace {

constexpr int kSlots = 4;  // one per BackendKind value (Native and Auto never get a module)

/// Marks a kind registered more than once. Never dereferenced.
const BackendModule kConflict{};

// Constant-initialized (zero): valid before any registrar runs, whatever the order.
const BackendModule* g_modules[kSlots] = {};

int slot_of(BackendKind kind) noexcept
{
    const int s = static_cast<int>(kind);
    return s >= 0 && s < kSlots ? s : -1;
}

}  // namespace

void register_backend_module(const BackendModule& module) noexcept
{
    const int s = slot_of(module.kind);
    if (s < 0) {
        return;
    }
    g_modules[s] = g_modules[s] == nullptr ? &module : &kConflict;
}

const BackendModule* backend_module(BackendKind kind) noexcept
{
    const int s = slot_of(kind);
    if (s < 0 || g_modules[s] == &kConflict) {
        return nullptr;
    }
    return g_modules[s];
}

bool backend_module_complete(const BackendModule& m) noexcept
{
    return m.init != nullptr && m.finalize != nullptr && m.available != nullptr &&
           m.unavailable_reason != nullptr && m.can_send != nullptr && m.make_offer != nullptr &&
           m.create != nullptr && m.tags_needed != nullptr;
}

}  // namespace mpipcl
