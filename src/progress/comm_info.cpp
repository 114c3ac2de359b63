// SPDX-License-Identifier: BSD-3-Clause
// Communicator keys (agreed without communication) and rank translation.
#include "progress/comm_info.hpp"

#include <memory>
#include <mutex>
#include <vector>

#include "common/error.hpp"

namespace mpipcl::progress {

namespace {
struct CommInfo {
    std::uint64_t key = 0;
    std::uint64_t children = 0;  ///< communicators created from this one so far
    MPI_Group group = MPI_GROUP_NULL;
};

int g_keyval = MPI_KEYVAL_INVALID;
MPI_Group g_world_group = MPI_GROUP_NULL;
std::mutex g_mu;  // serializes attribute creation

int delete_fn(MPI_Comm, int, void* attr, void*)
{
    auto* info = static_cast<CommInfo*>(attr);
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (info->group != MPI_GROUP_NULL && !finalized) {
        PMPI_Group_free(&info->group);
    }
    delete info;
    return MPI_SUCCESS;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
    // splitmix64-style combination
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

std::uint64_t group_hash(MPI_Group group)
{
    int n = 0;
    PMPI_Group_size(group, &n);
    std::vector<int> ranks(n);
    std::vector<int> world(n);
    for (int i = 0; i < n; ++i) {
        ranks[i] = i;
    }
    PMPI_Group_translate_ranks(group, n, ranks.data(), g_world_group, world.data());
    std::uint64_t h = 0x6d7069706326c1ULL ^ static_cast<std::uint64_t>(n);
    for (int w : world) {
        h = mix(h, static_cast<std::uint64_t>(w));
    }
    return h;
}

/// Requires g_mu. Creates the info with @p key (or the group hash when key == 0).
CommInfo* info_locked(MPI_Comm comm, std::uint64_t key_if_new)
{
    void* attr = nullptr;
    int flag = 0;
    MPIPCL_CHECK_MPI(PMPI_Comm_get_attr(comm, g_keyval, &attr, &flag));
    if (flag) {
        return static_cast<CommInfo*>(attr);
    }
    auto info = std::make_unique<CommInfo>();
    MPIPCL_CHECK_MPI(PMPI_Comm_group(comm, &info->group));
    info->key = key_if_new != 0 ? key_if_new : group_hash(info->group);
    MPIPCL_CHECK_MPI(PMPI_Comm_set_attr(comm, g_keyval, info.get()));
    return info.release();
}
}  // namespace

void comm_info_init()
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &g_keyval, nullptr);
    PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
}

void comm_info_finalize()
{
    // Attributes on WORLD/SELF are deleted by MPI_Finalize itself; keep the keyval until then.
    if (g_world_group != MPI_GROUP_NULL) {
        PMPI_Group_free(&g_world_group);
    }
}

std::uint64_t comm_key(MPI_Comm comm)
{
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
        throw Error(ErrId::BadComm, "invalid communicator");
    }
    if (inter) {
        throw Error(ErrId::BadComm, "intercommunicators are not supported yet");
    }
    std::lock_guard<std::mutex> lk(g_mu);
    return info_locked(comm, 0)->key;
}

int world_rank_of(MPI_Comm comm, int rank)
{
    std::lock_guard<std::mutex> lk(g_mu);
    CommInfo* info = info_locked(comm, 0);
    int world = MPI_UNDEFINED;
    MPIPCL_CHECK_MPI(PMPI_Group_translate_ranks(info->group, 1, &rank, g_world_group, &world));
    return world;
}

void note_child_comm(MPI_Comm parent, MPI_Comm newcomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID) {
        return;
    }
    try {
        std::lock_guard<std::mutex> lk(g_mu);
        CommInfo* p = info_locked(parent, 0);
        const std::uint64_t n = ++p->children;  // same on every member: creation is collective
        if (newcomm == MPI_COMM_NULL) {
            return;
        }
        MPI_Group g;
        MPIPCL_CHECK_MPI(PMPI_Comm_group(newcomm, &g));
        const std::uint64_t key = mix(mix(p->key, n), group_hash(g));
        PMPI_Group_free(&g);
        info_locked(newcomm, key == 0 ? 1 : key);
    } catch (const Error&) {
        // Falls back to the group hash on first use.
    }
}

}  // namespace mpipcl::progress
