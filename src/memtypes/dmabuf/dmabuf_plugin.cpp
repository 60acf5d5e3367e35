#include "memtypes/dmabuf/dmabuf_plugin.h"

#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>

#include "common/unique_fd.h"

namespace swy::mem {
namespace {

struct Mapping {
    common::UniqueFd fd;  // our dup
    uint64_t offset;      // into the dma-buf, of `address`
    size_t length;
    char* map_base;  // what mmap returned (page-aligned)
    size_t map_length;
    bool cpu;          // mmap of the fd succeeded
    bool real_dmabuf;  // fd is a kernel dma-buf: bracket CPU access with DMA_BUF_IOCTL_SYNC
};

struct Dmabuf {
    size_t page = 4096;
    mutable std::shared_mutex lock;
    std::map<uintptr_t, Mapping> maps;  // key: address handed out

    // Caller holds lock. The mapping that contains [p, p+n), or nullptr.
    const Mapping* find_locked(uintptr_t p, size_t n, uintptr_t* base) const {
        auto it = maps.upper_bound(p);
        if (it == maps.begin()) return nullptr;
        --it;
        if (n == 0) n = 1;
        if (p - it->first >= it->second.length || n > it->second.length - (p - it->first)) {
            return nullptr;
        }
        *base = it->first;
        return &it->second;
    }
};

Dmabuf* self(void* state) { return static_cast<Dmabuf*>(state); }

// DMA_BUF_IOCTL_SYNC around CPU access; a no-op for fds that are not dma-bufs. ENOTTY
// (exporter without begin/end_cpu_access) is not an error.
Status sync(const Mapping& m, uint64_t flags) {
    if (!m.real_dmabuf) return Status::kOk;
    dma_buf_sync arg{};
    arg.flags = flags;
    while (ioctl(m.fd.get(), DMA_BUF_IOCTL_SYNC, &arg) != 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        if (errno == ENOTTY) return Status::kOk;
        return Status::kIoError;
    }
    return Status::kOk;
}

Status cpu_copy(void* state, const void* dev, size_t length, bool to_host, void* host) {
    Dmabuf* s = self(state);
    std::shared_lock guard(s->lock);
    uintptr_t base = 0;
    const Mapping* m = s->find_locked(reinterpret_cast<uintptr_t>(dev), length, &base);
    if (m == nullptr) return Status::kInvalidParam;
    if (!m->cpu) return Status::kUnsupported;
    const uint64_t dir = to_host ? DMA_BUF_SYNC_READ : DMA_BUF_SYNC_WRITE;
    Status st = sync(*m, DMA_BUF_SYNC_START | dir);
    if (st != Status::kOk) return st;
    if (length != 0) {
        if (to_host) {
            std::memcpy(host, dev, length);
        } else {
            std::memcpy(const_cast<void*>(dev), host, length);
        }
    }
    return sync(*m, DMA_BUF_SYNC_END | dir);
}

Status dmabuf_detect(void* state, const void* ptr, size_t length, MemRange* out) {
    Dmabuf* s = self(state);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const size_t n = length == 0 ? 1 : length;
    std::shared_lock guard(s->lock);
    uintptr_t base = 0;
    const Mapping* m = s->find_locked(p, n, &base);
    if (m != nullptr) {
        *out = MemRange{MemType::kDmabuf, m->cpu, -1, base, m->length};
        return Status::kOk;
    }
    // Partly inside a mapping (from either side): ours, but not a valid buffer.
    auto next = s->maps.upper_bound(p);
    if (next != s->maps.end() && next->first - p < n) return Status::kInvalidParam;
    if (next != s->maps.begin() && p - std::prev(next)->first < std::prev(next)->second.length) {
        return Status::kInvalidParam;
    }
    return Status::kNotFound;
}

Status dmabuf_copy_to_host(void* state, void* host_dst, const void* src, size_t length) {
    return cpu_copy(state, src, length, true, host_dst);
}

Status dmabuf_copy_from_host(void* state, void* dst, const void* host_src, size_t length) {
    return cpu_copy(state, dst, length, false, const_cast<void*>(host_src));
}

Status dmabuf_copy_to_host_async(void* state, void* host_dst, const void* src, size_t length,
                                 uint64_t* token) {
    *token = 0;
    return dmabuf_copy_to_host(state, host_dst, src, length);
}

Status dmabuf_copy_from_host_async(void* state, void* dst, const void* host_src, size_t length,
                                   uint64_t* token) {
    *token = 0;
    return dmabuf_copy_from_host(state, dst, host_src, length);
}

Status dmabuf_test(void*, uint64_t) { return Status::kOk; }

Status dmabuf_export(void* state, const void* ptr, size_t length, int* fd, uint64_t* offset) {
    Dmabuf* s = self(state);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock guard(s->lock);
    uintptr_t base = 0;
    const Mapping* m = s->find_locked(p, length, &base);
    if (m == nullptr) return Status::kInvalidParam;
    const int dup_fd = fcntl(m->fd.get(), F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return Status::kNoResource;
    *fd = dup_fd;
    *offset = m->offset + (p - base);
    return Status::kOk;
}

void dmabuf_query(void*, MemTypeAttr* out) {
    *out = MemTypeAttr{};
    // Per type: not every dma-buf can be mapped. MemRange::cpu_accessible says per range.
    out->cpu_accessible = false;
    out->dmabuf_capable = true;
    out->copy_bw_Bps = 10e9;
    out->copy_latency_s = 1e-6;  // two DMA_BUF_IOCTL_SYNC calls around the memcpy
}

void dmabuf_destroy(void* state) {
    Dmabuf* s = self(state);
    for (auto& [address, m] : s->maps) {
        munmap(m.map_base, m.map_length);
        m.fd.reset();
    }
    delete s;
}

}  // namespace

Status dmabuf_map(void* state, int fd, uint64_t offset, size_t length, void** address) {
    Dmabuf* s = self(state);
    if (length == 0 || fd < 0 || address == nullptr) return Status::kInvalidParam;
    common::UniqueFd dup_fd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!dup_fd) return errno == EBADF ? Status::kInvalidParam : Status::kNoResource;

    Mapping m{};
    m.fd = std::move(dup_fd);
    m.offset = offset;
    m.length = length;
    struct statfs fs {};
    m.real_dmabuf =
        fstatfs(m.fd.get(), &fs) == 0 && static_cast<unsigned long>(fs.f_type) == DMA_BUF_MAGIC;

    const uint64_t aligned = offset / s->page * s->page;
    const size_t delta = static_cast<size_t>(offset - aligned);
    m.map_length = (length + delta + s->page - 1) / s->page * s->page;
    void* p = mmap(nullptr, m.map_length, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd.get(),
                   static_cast<off_t>(aligned));
    char* addr = nullptr;
    if (p != MAP_FAILED) {
        m.cpu = true;
        m.map_base = static_cast<char*>(p);
        addr = m.map_base + delta;
    } else {
        // Exporter refuses CPU mappings: reserve address space only, so the range has a
        // unique address for detection and a stray CPU access faults.
        p = mmap(nullptr, m.map_length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                 0);
        if (p == MAP_FAILED) return Status::kNoMemory;  // m's destructor closes the dup
        m.cpu = false;
        m.map_base = static_cast<char*>(p);
        addr = m.map_base + delta;
    }
    {
        std::unique_lock guard(s->lock);
        s->maps[reinterpret_cast<uintptr_t>(addr)] = std::move(m);
    }
    *address = addr;
    return Status::kOk;
}

Status dmabuf_unmap(void* state, void* address) {
    Dmabuf* s = self(state);
    Mapping m{};
    {
        std::unique_lock guard(s->lock);
        auto it = s->maps.find(reinterpret_cast<uintptr_t>(address));
        if (it == s->maps.end()) return Status::kInvalidParam;
        m = std::move(it->second);
        s->maps.erase(it);
    }
    munmap(m.map_base, m.map_length);
    m.fd.reset();
    return Status::kOk;
}

Status create_dmabuf_plugin(MemTypePlugin* out, std::string* why) {
    auto* s = new (std::nothrow) Dmabuf();
    if (s == nullptr) {
        if (why != nullptr) *why = "dmabuf: out of memory";
        return Status::kNoMemory;
    }
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) s->page = static_cast<size_t>(page);
    *out = MemTypePlugin{};
    out->abi_version = kPluginAbiVersion;
    out->name = "dmabuf";
    out->type = MemType::kDmabuf;
    out->state = s;
    out->detect = dmabuf_detect;
    out->copy_to_host = dmabuf_copy_to_host;
    out->copy_from_host = dmabuf_copy_from_host;
    out->copy_to_host_async = dmabuf_copy_to_host_async;
    out->copy_from_host_async = dmabuf_copy_from_host_async;
    out->test = dmabuf_test;
    out->export_dmabuf = dmabuf_export;
    out->allocate = nullptr;  // the exporter allocates; we only import
    out->release = nullptr;   // dmabuf_unmap()
    out->query = dmabuf_query;
    out->destroy = dmabuf_destroy;
    return Status::kOk;
}

}  // namespace swy::mem
