// SPDX-License-Identifier: BSD-3-Clause
// The backend module table: lookup by kind, a kind registered twice, completeness. This binary
// links no backend, so every slot starts empty.
#include <gtest/gtest.h>

#include "common/backend_module.hpp"

using mpipcl::backend_module;
using mpipcl::backend_module_complete;
using mpipcl::BackendKind;
using mpipcl::BackendModule;
using mpipcl::register_backend_module;

namespace {

constexpr BackendModule kFirst = {BackendKind::Rma};
constexpr BackendModule kSecond = {BackendKind::Rma};
constexpr BackendModule kNative = {BackendKind::Native};

}  // namespace

TEST(BackendModule, LookupByKindAndTwiceIsNone)
{
    EXPECT_EQ(backend_module(BackendKind::Persistent), nullptr);  // none registered
    register_backend_module(kFirst);
    EXPECT_EQ(backend_module(BackendKind::Rma), &kFirst);
    EXPECT_EQ(backend_module(BackendKind::Persistent), nullptr);
    register_backend_module(kSecond);  // two rma modules: neither is chosen
    EXPECT_EQ(backend_module(BackendKind::Rma), nullptr);
    register_backend_module(kNative);
    EXPECT_EQ(backend_module(BackendKind::Native), &kNative);
    EXPECT_EQ(backend_module(static_cast<BackendKind>(7)), nullptr);
}

TEST(BackendModule, CompleteNeedsEveryEntryButAutoMessages)
{
    BackendModule m{BackendKind::Persistent};
    EXPECT_FALSE(backend_module_complete(m));
    m.init = [](MPI_Comm) noexcept {};
    m.finalize = []() noexcept {};
    m.available = []() noexcept { return true; };
    m.unavailable_reason = []() noexcept { return ""; };
    m.can_send = [](const mpipcl::Endpoint&) noexcept { return true; };
    m.make_offer = [](const mpipcl::Endpoint&, const mpipcl::RequestOptions&) {
        return mpipcl::Offer{};
    };
    m.create = [](const mpipcl::Endpoint&, const mpipcl::RequestOptions&, const mpipcl::Agreement&,
                  MPI_Comm, const char**) { return std::unique_ptr<mpipcl::Backend>(); };
    EXPECT_FALSE(backend_module_complete(m));
    m.tags_needed = [](const mpipcl::Agreement&) { return 0; };
    EXPECT_TRUE(backend_module_complete(m));
    EXPECT_EQ(m.auto_messages, nullptr);
}
