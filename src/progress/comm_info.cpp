// SPDX-License-Identifier: BSD-3-Clause
// Communicator keys (agreed without communication) and rank translation.
#include "progress/comm_info.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"

namespace mpipcl::progress {

namespace {
struct CommInfo {
    std::uint64_t key = 0;
    std::uint64_t children = 0;     ///< communicators created from this one so far
    std::uint64_t collectives = 0;  ///< partitioned collectives initialized on it so far
    MPI_Group group = MPI_GROUP_NULL;
};

// Fixed keys of the predefined communicators, and the seeds that keep apart the key
// derivations which count creations per scope rather than per parent (arbitrary constants).
constexpr std::uint64_t kWorldKey = 0x6d7069706c2d574fULL;
constexpr std::uint64_t kSelfKey = 0x6d7069706c2d5345ULL;
constexpr std::uint64_t kInterGroupsSeed = 0x6d7069706c2d4947ULL;
constexpr std::uint64_t kCreateGroupSeed = 0x6d7069706c2d4347ULL;
constexpr std::uint64_t kTaggedSeed = 0x6d7069706c2d5447ULL;
constexpr std::uint64_t kIntercommSeed = 0x6d7069706c2d4943ULL;
constexpr std::uint64_t kCollectiveSeed = 0x6d7069706c2d434fULL;

int g_keyval = MPI_KEYVAL_INVALID;
MPI_Group g_world_group = MPI_GROUP_NULL;
std::mutex g_mu;  // serializes attribute creation and the two tables below
/// MPI_Comm_idup'ed handles not used yet -> their keys (the handle is unusable until then).
std::unordered_map<MPI_Comm, std::uint64_t> g_pending;
/// Creations so far per scope (note_scoped_locked).
std::unordered_map<std::uint64_t, std::uint64_t> g_scoped;
/// The node of each MPI_COMM_WORLD rank: the lowest world rank sharing memory with it.
/// Written once at MPI_Init*, read-only afterwards.
std::vector<int> g_node_of_world;

/// Fills g_node_of_world (collective over @p world, a duplicate of MPI_COMM_WORLD).
void map_nodes(MPI_Comm world)
{
    int me = 0;
    int size = 1;
    PMPI_Comm_rank(world, &me);
    PMPI_Comm_size(world, &size);
    MPI_Comm local = MPI_COMM_NULL;
    MPIPCL_CHECK_MPI(PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    int leader = me;
    const int rc = PMPI_Allreduce(&me, &leader, 1, MPI_INT, MPI_MIN, local);
    PMPI_Comm_free(&local);
    MPIPCL_CHECK_MPI(rc);
    g_node_of_world.assign(static_cast<std::size_t>(size), 0);
    MPIPCL_CHECK_MPI(
        PMPI_Allgather(&leader, 1, MPI_INT, g_node_of_world.data(), 1, MPI_INT, world));
}

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

std::uint64_t string_hash(const char* s)  // FNV-1a: the same in every process
{
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s != '\0'; ++s) {
        h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ULL;
    }
    return h;
}

/// The group hash of an intracommunicator; of an intercommunicator, of its local and remote
/// groups in an order both sides agree on.
std::uint64_t comm_group_hash(MPI_Comm comm)
{
    int inter = 0;
    MPIPCL_CHECK_MPI(PMPI_Comm_test_inter(comm, &inter));
    MPI_Group g = MPI_GROUP_NULL;
    MPIPCL_CHECK_MPI(PMPI_Comm_group(comm, &g));
    std::uint64_t h = group_hash(g);
    PMPI_Group_free(&g);
    if (inter) {
        MPIPCL_CHECK_MPI(PMPI_Comm_remote_group(comm, &g));
        const std::uint64_t remote = group_hash(g);
        PMPI_Group_free(&g);
        h = mix(mix(kInterGroupsSeed, std::min(h, remote)), std::max(h, remote));
    }
    return h;
}

/// A derived key is never 0 (info_locked's "not derived").
std::uint64_t derived(std::uint64_t key) { return key == 0 ? 1 : key; }

/// Requires g_mu. Creates the info with @p key_if_new, else with the key MPI_Comm_idup left
/// for this handle, else with the group hash.
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
    const auto pending = g_pending.find(comm);
    if (key_if_new != 0) {
        info->key = key_if_new;  // a new communicator: an entry for its handle would be stale
    } else if (pending != g_pending.end()) {
        info->key = pending->second;
    } else {
        info->key = comm_group_hash(comm);
    }
    MPIPCL_CHECK_MPI(PMPI_Comm_set_attr(comm, g_keyval, info.get()));
    if (pending != g_pending.end()) {
        g_pending.erase(pending);
    }
    return info.release();
}

/// Requires g_mu. For a constructor that is not collective over a whole parent: @p newcomm's
/// key counts the creations in its scope (@p seed, @p salt, its groups) on this process. Each
/// member's n-th creation in a scope is the same call: the calls of a scope involve the same
/// processes, which MPI makes call them in one order (see the callers).
void note_scoped_locked(std::uint64_t seed, std::uint64_t salt, MPI_Comm newcomm)
{
    const std::uint64_t scope = mix(mix(seed, salt), comm_group_hash(newcomm));
    const std::uint64_t n = ++g_scoped[scope];
    info_locked(newcomm, derived(mix(scope, n)));
}
}  // namespace

void comm_info_init(MPI_Comm world)
{
    map_nodes(world);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &g_keyval, nullptr);
    PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
    // Fixed keys, so that MPI_COMM_SELF and a 1-process MPI_COMM_WORLD (same group) differ.
    std::lock_guard<std::mutex> lk(g_mu);
    info_locked(MPI_COMM_WORLD, kWorldKey);
    info_locked(MPI_COMM_SELF, kSelfKey);
}

void comm_info_finalize()
{
    // Attributes on WORLD/SELF are deleted by MPI_Finalize itself; keep the keyval until then.
    if (g_world_group != MPI_GROUP_NULL) {
        PMPI_Group_free(&g_world_group);
    }
    std::lock_guard<std::mutex> lk(g_mu);
    g_pending.clear();
    g_scoped.clear();
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

std::uint64_t collective_key(MPI_Comm comm)
{
    const std::uint64_t key = comm_key(comm);  // checks the communicator
    std::lock_guard<std::mutex> lk(g_mu);
    const std::uint64_t n = ++info_locked(comm, 0)->collectives;
    return derived(mix(mix(kCollectiveSeed, key), n));
}

int world_rank_of(MPI_Comm comm, int rank)
{
    std::lock_guard<std::mutex> lk(g_mu);
    CommInfo* info = info_locked(comm, 0);
    int world = MPI_UNDEFINED;
    MPIPCL_CHECK_MPI(PMPI_Group_translate_ranks(info->group, 1, &rank, g_world_group, &world));
    return world;
}

int node_of_world(int world_rank)
{
    return world_rank >= 0 && static_cast<std::size_t>(world_rank) < g_node_of_world.size()
               ? g_node_of_world[static_cast<std::size_t>(world_rank)]
               : -1;
}

std::vector<int> nodes_of(MPI_Comm comm)
{
    std::lock_guard<std::mutex> lk(g_mu);
    CommInfo* info = info_locked(comm, 0);
    int size = 0;
    MPIPCL_CHECK_MPI(PMPI_Group_size(info->group, &size));
    std::vector<int> ranks(static_cast<std::size_t>(size));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::vector<int> world(ranks.size());
    MPIPCL_CHECK_MPI(
        PMPI_Group_translate_ranks(info->group, size, ranks.data(), g_world_group, world.data()));
    for (int& w : world) {
        const int node = node_of_world(w);
        w = node >= 0 ? node : w;
    }
    return world;
}

void note_child_comm(MPI_Comm parent, MPI_Comm newcomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID) {
        return;
    }
    std::lock_guard<std::mutex> lk(g_mu);
    CommInfo* p = info_locked(parent, 0);
    const std::uint64_t n = ++p->children;  // same on every member: creation is collective
    if (newcomm != MPI_COMM_NULL) {
        info_locked(newcomm, derived(mix(mix(p->key, n), comm_group_hash(newcomm))));
    }
}

void note_pending_child_comm(MPI_Comm parent, MPI_Comm newcomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID) {
        return;
    }
    std::lock_guard<std::mutex> lk(g_mu);
    CommInfo* p = info_locked(parent, 0);
    const std::uint64_t n = ++p->children;  // nonblocking collectives keep the call order too
    g_pending[newcomm] = derived(mix(mix(p->key, n), comm_group_hash(parent)));  // same groups
}

void note_group_child_comm(MPI_Comm parent, int tag, MPI_Comm newcomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID || newcomm == MPI_COMM_NULL) {
        return;
    }
    // MPI forbids concurrent calls with the same parent and tag on overlapping groups.
    std::lock_guard<std::mutex> lk(g_mu);
    const std::uint64_t parent_key = info_locked(parent, 0)->key;
    note_scoped_locked(kCreateGroupSeed, mix(parent_key, static_cast<std::uint64_t>(tag)), newcomm);
}

void note_tagged_comm(const char* stringtag, MPI_Comm newcomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID || newcomm == MPI_COMM_NULL || stringtag == nullptr) {
        return;
    }
    // MPI forbids concurrent calls with the same string tag on overlapping groups.
    std::lock_guard<std::mutex> lk(g_mu);
    note_scoped_locked(kTaggedSeed, string_hash(stringtag), newcomm);
}

void note_intercomm(MPI_Comm newintercomm)
{
    if (g_keyval == MPI_KEYVAL_INVALID || newintercomm == MPI_COMM_NULL) {
        return;
    }
    // Collective over both groups: a correct program creates two intercommunicators between
    // the same groups in the same order on every member (one thread at a time: see the docs).
    std::lock_guard<std::mutex> lk(g_mu);
    note_scoped_locked(kIntercommSeed, 0, newintercomm);
}

void forget_comm(MPI_Comm comm)
{
    std::lock_guard<std::mutex> lk(g_mu);
    g_pending.erase(comm);
}

}  // namespace mpipcl::progress
