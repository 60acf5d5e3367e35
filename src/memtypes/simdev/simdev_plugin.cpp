#include "memtypes/simdev/simdev_plugin.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>

#include "common/unique_fd.h"

namespace swy::mem {
namespace {

using Clock = std::chrono::steady_clock;

struct Allocation {
    size_t length;        // as requested
    size_t mapped;        // page-rounded
    char* alias;          // read-write view, plugin-only
    common::UniqueFd fd;  // memfd behind both views (for export_dmabuf)
};

struct PendingCopy {
    uint64_t token;
    char* dst;
    const char* src;
    size_t length;
    Clock::time_point due;
};

struct Simdev {
    SimdevOptions options;
    size_t page = 4096;

    mutable std::shared_mutex allocs_lock;
    std::map<uintptr_t, Allocation> allocs;  // key: device address

    // Lock order: queue_lock before allocs_lock (release drains the queue before unmapping).
    std::mutex queue_lock;
    std::deque<PendingCopy> pending;
    uint64_t next_token = 1;
    uint64_t completed_upto = 0;
    Clock::time_point engine_free{};

    Clock::duration copy_time(size_t length) const {
        const double s = options.latency_s + static_cast<double>(length) / options.bandwidth_Bps;
        return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    }

    // Alias address for device range [ptr, ptr+length), or nullptr if not one allocation's.
    // Caller holds allocs_lock (shared is enough).
    char* translate_locked(const void* ptr, size_t length) const {
        const auto p = reinterpret_cast<uintptr_t>(ptr);
        auto it = allocs.upper_bound(p);
        if (it == allocs.begin()) return nullptr;
        --it;
        const size_t n = length == 0 ? 1 : length;
        if (p - it->first >= it->second.length || n > it->second.length - (p - it->first)) {
            return nullptr;
        }
        return it->second.alias + (p - it->first);
    }

    char* translate(const void* ptr, size_t length) const {
        std::shared_lock guard(allocs_lock);
        return translate_locked(ptr, length);
    }

    void throttle_since(Clock::time_point start, size_t length) const {
        if (!options.throttle) return;
        const auto until = start + copy_time(length);
        while (Clock::now() < until) {}
    }

    // Caller holds queue_lock. Performs due copies (all of them when @p force).
    void run_queue(bool force) {
        const auto now = Clock::now();
        while (!pending.empty()) {
            PendingCopy& c = pending.front();
            if (!force && options.throttle && c.due > now) break;
            if (c.length != 0) std::memcpy(c.dst, c.src, c.length);
            completed_upto = c.token;
            pending.pop_front();
        }
    }
};

Simdev* self(void* state) { return static_cast<Simdev*>(state); }

Status simdev_detect(void* state, const void* ptr, size_t length, MemRange* out) {
    Simdev* s = self(state);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const size_t n = length == 0 ? 1 : length;
    std::shared_lock guard(s->allocs_lock);
    auto next = s->allocs.upper_bound(p);
    // A buffer that runs into an allocation from below is not host memory either.
    const bool overlaps_next = next != s->allocs.end() && next->first - p < n;
    if (next == s->allocs.begin()) return overlaps_next ? Status::kInvalidParam : Status::kNotFound;
    auto it = std::prev(next);
    MemRange r{MemType::kSimdev, false, 0, it->first, it->second.length};
    if (r.contains(p, n)) {
        *out = r;
        return Status::kOk;
    }
    // Starting inside an allocation (or in its page padding) and running past its end, or
    // reaching into the next one: this plugin's memory, but not a valid buffer. Say "cannot
    // tell" rather than let the registry call it host.
    if (p - it->first < it->second.mapped || overlaps_next) return Status::kInvalidParam;
    return Status::kNotFound;
}

Status simdev_copy_to_host(void* state, void* host_dst, const void* src, size_t length) {
    Simdev* s = self(state);
    const auto start = Clock::now();
    {
        std::shared_lock guard(s->allocs_lock);
        const char* alias = s->translate_locked(src, length);
        if (alias == nullptr) return Status::kInvalidParam;
        if (length != 0) std::memcpy(host_dst, alias, length);
    }
    s->throttle_since(start, length);
    return Status::kOk;
}

Status simdev_copy_from_host(void* state, void* dst, const void* host_src, size_t length) {
    Simdev* s = self(state);
    const auto start = Clock::now();
    {
        std::shared_lock guard(s->allocs_lock);
        char* alias = s->translate_locked(dst, length);
        if (alias == nullptr) return Status::kInvalidParam;
        if (length != 0) std::memcpy(alias, host_src, length);
    }
    s->throttle_since(start, length);
    return Status::kOk;
}

Status enqueue(Simdev* s, char* dst, const char* src, size_t length, uint64_t* token) {
    // Called with queue_lock held and the addresses already translated under allocs_lock.
    const auto now = Clock::now();
    const auto begin = s->engine_free > now ? s->engine_free : now;
    const auto due = begin + s->copy_time(length);
    s->engine_free = due;
    const uint64_t t = s->next_token++;
    s->pending.push_back(PendingCopy{t, dst, src, length, due});
    *token = t;
    return Status::kInProgress;
}

Status simdev_copy_to_host_async(void* state, void* host_dst, const void* src, size_t length,
                                 uint64_t* token) {
    Simdev* s = self(state);
    std::lock_guard queue(s->queue_lock);
    const char* alias = s->translate(src, length);
    if (alias == nullptr) return Status::kInvalidParam;
    return enqueue(s, static_cast<char*>(host_dst), alias, length, token);
}

Status simdev_copy_from_host_async(void* state, void* dst, const void* host_src, size_t length,
                                   uint64_t* token) {
    Simdev* s = self(state);
    std::lock_guard queue(s->queue_lock);
    char* alias = s->translate(dst, length);
    if (alias == nullptr) return Status::kInvalidParam;
    return enqueue(s, alias, static_cast<const char*>(host_src), length, token);
}

Status simdev_test(void* state, uint64_t token) {
    Simdev* s = self(state);
    if (token == 0) return Status::kOk;
    std::lock_guard queue(s->queue_lock);
    if (token >= s->next_token) return Status::kInvalidParam;
    if (token <= s->completed_upto) return Status::kOk;
    s->run_queue(false);
    return token <= s->completed_upto ? Status::kOk : Status::kInProgress;
}

Status simdev_export_dmabuf(void* state, const void* ptr, size_t length, int* fd,
                            uint64_t* offset) {
    Simdev* s = self(state);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock guard(s->allocs_lock);
    if (s->translate_locked(ptr, length) == nullptr) return Status::kInvalidParam;
    auto it = std::prev(s->allocs.upper_bound(p));
    const int dup_fd = fcntl(it->second.fd.get(), F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return Status::kNoResource;
    *fd = dup_fd;
    *offset = p - it->first;
    return Status::kOk;
}

Status simdev_allocate(void* state, size_t length, void** out) {
    Simdev* s = self(state);
    if (length == 0) return Status::kInvalidParam;
    const size_t mapped = (length + s->page - 1) / s->page * s->page;
    common::UniqueFd fd(memfd_create("swy-simdev", MFD_CLOEXEC));
    if (!fd) return errno == EMFILE || errno == ENFILE ? Status::kNoResource : Status::kNoMemory;
    if (ftruncate(fd.get(), static_cast<off_t>(mapped)) != 0) return Status::kNoMemory;
    void* device = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd.get(), 0);
    if (device == MAP_FAILED) return Status::kNoMemory;
    void* alias = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (alias == MAP_FAILED) {
        munmap(device, mapped);
        return Status::kNoMemory;
    }
    {
        std::unique_lock guard(s->allocs_lock);
        s->allocs[reinterpret_cast<uintptr_t>(device)] =
            Allocation{length, mapped, static_cast<char*>(alias), std::move(fd)};
    }
    *out = device;
    return Status::kOk;
}

Status simdev_release(void* state, void* ptr) {
    Simdev* s = self(state);
    // Finish queued copies first: they hold alias addresses that munmap would invalidate.
    std::lock_guard queue(s->queue_lock);
    s->run_queue(true);
    Allocation a;
    {
        std::unique_lock guard(s->allocs_lock);
        auto it = s->allocs.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == s->allocs.end()) return Status::kInvalidParam;
        a = std::move(it->second);
        s->allocs.erase(it);
    }
    munmap(ptr, a.mapped);
    munmap(a.alias, a.mapped);
    a.fd.reset();
    return Status::kOk;
}

void simdev_query(void* state, MemTypeAttr* out) {
    Simdev* s = self(state);
    *out = MemTypeAttr{};
    out->cpu_accessible = false;
    out->dmabuf_capable = true;
    out->copy_bw_Bps = s->options.bandwidth_Bps;
    out->copy_latency_s = s->options.latency_s;
}

void simdev_destroy(void* state) {
    Simdev* s = self(state);
    {
        std::lock_guard queue(s->queue_lock);
        s->run_queue(true);
    }
    for (auto& [base, a] : s->allocs) {
        munmap(reinterpret_cast<void*>(base), a.mapped);
        munmap(a.alias, a.mapped);
        a.fd.reset();
    }
    delete s;
}

}  // namespace

Status create_simdev_plugin(const SimdevOptions& options, MemTypePlugin* out, std::string* why) {
    if (!(options.bandwidth_Bps > 0) || !(options.latency_s >= 0)) {
        if (why != nullptr) *why = "simdev: SWY_SIMDEV_BW must be > 0 and SWY_SIMDEV_LATENCY >= 0";
        return Status::kInvalidParam;
    }
    auto* s = new (std::nothrow) Simdev();
    if (s == nullptr) return Status::kNoMemory;
    s->options = options;
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) s->page = static_cast<size_t>(page);

    *out = MemTypePlugin{};
    out->abi_version = kPluginAbiVersion;
    out->name = "simdev";
    out->type = MemType::kSimdev;
    out->state = s;
    out->detect = simdev_detect;
    out->copy_to_host = simdev_copy_to_host;
    out->copy_from_host = simdev_copy_from_host;
    out->copy_to_host_async = simdev_copy_to_host_async;
    out->copy_from_host_async = simdev_copy_from_host_async;
    out->test = simdev_test;
    out->export_dmabuf = simdev_export_dmabuf;
    out->allocate = simdev_allocate;
    out->release = simdev_release;
    out->query = simdev_query;
    out->destroy = simdev_destroy;
    return Status::kOk;
}

}  // namespace swy::mem
