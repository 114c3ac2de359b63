// SPDX-License-Identifier: BSD-3-Clause
// The dynamic window, its attachment registry and the slot pool.
#include "rma/window.hpp"

#include <cstring>

#include "common/config.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace mpipcl::rma {

namespace {
/// Slots per pool chunk (32 KiB): one attachment serves many requests' flags.
constexpr std::size_t kChunkSlots = 4096;

/// The MPI's limit on attachments to one dynamic window, read through the MPI tool interface
/// (Open MPI: the osc_rdma_max_attach control variable), or 0 when it has none we know of.
int mpi_attach_limit()
{
    int provided = 0;
    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return 0;
    }
    int limit = 0;
    int index = -1;
    if (PMPI_T_cvar_get_index("osc_rdma_max_attach", &index) == MPI_SUCCESS) {
        char name[256];
        char desc[16];
        int name_len = sizeof name;
        int desc_len = sizeof desc;
        int verbosity = 0;
        int bind = 0;
        int scope = 0;
        MPI_Datatype type = MPI_DATATYPE_NULL;
        MPI_T_enum enumtype;
        MPI_T_cvar_handle handle;
        int count = 0;
        if (PMPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc,
                                 &desc_len, &bind, &scope) == MPI_SUCCESS &&
            (type == MPI_INT || type == MPI_UNSIGNED) &&
            PMPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
            unsigned int value = 0;  // int and unsigned: same size, and the value is small
            if (count == 1 && PMPI_T_cvar_read(handle, &value) == MPI_SUCCESS && value < 1u << 30) {
                limit = static_cast<int>(value);
            }
            PMPI_T_cvar_handle_free(&handle);
        }
    }
    PMPI_T_finalize();
    return limit;
}

std::string mpi_error_text(int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (PMPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
        return "MPI error " + std::to_string(rc);
    }
    return std::string(text, len);
}
/// True for a window of Open MPI 4's osc ucx, which its component names "ucx window <cid>":
/// freeing such a dynamic window after attach/detach crashes inside UCX (ucp_mem_unmap ->
/// ucs_rcache_region_invalidate, or an rcache refcount assertion in MPI_Win_detach).
bool osc_frees_attached_memory_badly(MPI_Win win)
{
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
    char name[MPI_MAX_OBJECT_NAME] = {};
    int len = 0;
    return PMPI_Win_get_name(win, name, &len) == MPI_SUCCESS &&
           std::strncmp(name, "ucx window", 10) == 0;
#else
    (void)win;
    return false;
#endif
}
}  // namespace

Window& Window::instance()
{
    static Window* w = new Window();  // never destroyed: backends may outlive static teardown
    return *w;
}

void Window::init(MPI_Comm comm) noexcept
{
    MPI_Win win = MPI_WIN_NULL;
    const int rc = PMPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win);
    if (rc != MPI_SUCCESS) {
        reason_ = "MPI_Win_create_dynamic failed (" + mpi_error_text(rc) +
                  "); e.g. Open MPI has no osc component for dynamic windows on one process, "
                  "and its osc pt2pt (TCP) refuses MPI_THREAD_MULTIPLE";
        // Debug: the info line comes from the backend choice, once, when a request asks for rma.
        MPIPCL_LOG(Debug, "RMA backend unavailable: %s", reason_.c_str());
        return;
    }
    PMPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (osc_frees_attached_memory_badly(win)) {
        reason_ =
            "Open MPI 4's osc ucx crashes in MPI_Win_free (ucp_mem_unmap) once regions of a "
            "dynamic window were attached and detached (tests/platform/README.md)";
        MPIPCL_LOG(Debug, "RMA backend unavailable: %s", reason_.c_str());
        PMPI_Win_free(&win);
        return;
    }
    PMPI_Win_set_name(win, const_cast<char*>("mpipcl rma"));
    if (const int lk = PMPI_Win_lock_all(MPI_MODE_NOCHECK, win); lk != MPI_SUCCESS) {
        reason_ = "MPI_Win_lock_all failed (" + mpi_error_text(lk) + ")";
        MPIPCL_LOG(Debug, "RMA backend unavailable: %s", reason_.c_str());
        PMPI_Win_free(&win);
        return;
    }
    int* model = nullptr;
    int flag = 0;
    PMPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    separate_ = flag && model != nullptr && *model == MPI_WIN_SEPARATE;
    win_ = win;
    reason_.clear();
    attached_ = 0;
    max_attach_ = config().rma_max_attach >= 0 ? config().rma_max_attach : mpi_attach_limit();
    MPIPCL_LOG(Debug, "RMA window up (%s memory model, attachment limit %d)",
               separate_ ? "separate" : "unified", max_attach_);
}

void Window::finalize() noexcept
{
    if (win_ == MPI_WIN_NULL) {
        return;
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto& r : regions_) {
            PMPI_Win_detach(win_, reinterpret_cast<void*>(r.first));
        }
        regions_.clear();
        for (auto& c : chunks_) {
            free_chunk_locked(*c);
        }
        chunks_.clear();
        attached_ = 0;
    }
    PMPI_Win_unlock_all(win_);
    PMPI_Win_free(&win_);
    win_ = MPI_WIN_NULL;
    reason_ = "the RMA window was freed (MPI_Finalize)";
}

bool Window::attach(const void* base, std::size_t len, std::uintptr_t* key)
{
    const auto lo = reinterpret_cast<std::uintptr_t>(base);
    const std::uintptr_t hi = lo + len;
    std::lock_guard<std::mutex> lk(mu_);
    if (win_ == MPI_WIN_NULL) {
        return false;
    }
    auto next = regions_.upper_bound(lo);  // first region starting after lo
    if (next != regions_.begin()) {
        auto prev = std::prev(next);
        if (prev->second.hi >= hi) {
            ++prev->second.refs;  // already attached as part of a larger region
            *key = prev->first;
            return true;
        }
        if (prev->second.hi > lo) {
            MPIPCL_LOG(Info, "buffer %p+%zu overlaps an attached region: not attachable", base,
                       len);
            return false;
        }
    }
    if (next != regions_.end() && next->first < hi) {
        MPIPCL_LOG(Info, "buffer %p+%zu overlaps an attached region: not attachable", base, len);
        return false;
    }
    if (!budget_locked()) {
        MPIPCL_LOG(Info, "buffer %p+%zu: %d attachments already (the MPI's limit)", base, len,
                   attached_);
        return false;
    }
    if (const int rc = PMPI_Win_attach(win_, const_cast<void*>(base), len); rc != MPI_SUCCESS) {
        MPIPCL_LOG(Info, "MPI_Win_attach(%p, %zu) failed: %s", base, len,
                   mpi_error_text(rc).c_str());
        return false;
    }
    regions_[lo] = Region{hi, 1};
    ++attached_;
    *key = lo;
    return true;
}

void Window::release(std::uintptr_t key) noexcept
{
    std::lock_guard<std::mutex> lk(mu_);
    auto it = regions_.find(key);
    if (win_ == MPI_WIN_NULL || it == regions_.end()) {
        return;  // already detached at MPI_Finalize
    }
    if (--it->second.refs == 0) {
        PMPI_Win_detach(win_, reinterpret_cast<void*>(key));
        regions_.erase(it);
        --attached_;
    }
}

Slots Window::alloc_slots(std::size_t n)
{
    std::lock_guard<std::mutex> lk(mu_);
    if (win_ == MPI_WIN_NULL) {
        throw Error(ErrId::Unsupported, "the RMA window is not available");
    }
    for (auto& c : chunks_) {
        for (auto it = c->free.begin(); it != c->free.end(); ++it) {
            if (it->second < n) {
                continue;
            }
            const std::size_t off = it->first;
            const std::size_t rest = it->second - n;
            c->free.erase(it);
            if (rest > 0) {
                c->free[off + n] = rest;
            }
            c->used += n;
            std::memset(c->mem + off, 0, n * sizeof(std::uint64_t));
            return Slots{c->mem + off, n};
        }
    }
    if (!budget_locked()) {
        MPIPCL_LOG(Info, "no attachment left for %zu more flag slots", n);
        return Slots{};
    }
    auto c = std::make_unique<Chunk>();
    c->slots = n > kChunkSlots ? n : kChunkSlots;
    void* mem = nullptr;
    const MPI_Aint bytes = static_cast<MPI_Aint>(c->slots * sizeof(std::uint64_t));
    MPIPCL_CHECK_MPI(PMPI_Alloc_mem(bytes, MPI_INFO_NULL, &mem));
    if (const int rc = PMPI_Win_attach(win_, mem, bytes); rc != MPI_SUCCESS) {
        PMPI_Free_mem(mem);
        MPIPCL_LOG(Info, "MPI_Win_attach of %zu flag slots failed: %s", c->slots,
                   mpi_error_text(rc).c_str());
        return Slots{};
    }
    ++attached_;
    c->mem = static_cast<std::uint64_t*>(mem);
    std::memset(c->mem, 0, bytes);
    c->used = n;
    if (c->slots > n) {
        c->free[n] = c->slots - n;
    }
    chunks_.push_back(std::move(c));
    return Slots{chunks_.back()->mem, n};
}

void Window::free_slots(const Slots& s) noexcept
{
    if (s.ptr == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lk(mu_);
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
        Chunk& c = *chunks_[i];
        if (s.ptr < c.mem || s.ptr >= c.mem + c.slots) {
            continue;
        }
        std::size_t off = static_cast<std::size_t>(s.ptr - c.mem);
        std::size_t len = s.count;
        auto next = c.free.lower_bound(off);
        if (next != c.free.end() && next->first == off + len) {  // coalesce with the right
            len += next->second;
            next = c.free.erase(next);
        }
        if (next != c.free.begin()) {  // and with the left
            auto prev = std::prev(next);
            if (prev->first + prev->second == off) {
                off = prev->first;
                len += prev->second;
                c.free.erase(prev);
            }
        }
        c.free[off] = len;
        c.used -= s.count;
        // Keep the first chunk for the next requests; give larger ones back when unused.
        if (c.used == 0 && i > 0) {
            free_chunk_locked(c);
            chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(i));
        }
        return;
    }
}

void Window::free_chunk_locked(Chunk& c) noexcept
{
    if (c.mem != nullptr) {
        PMPI_Win_detach(win_, c.mem);
        PMPI_Free_mem(c.mem);
        c.mem = nullptr;
        --attached_;
    }
}

}  // namespace mpipcl::rma
