// Memory-type registry: the plugins this context loaded (SWY_MEMTYPES), pointer detection
// with the range cache in front, and the operations the core and the C API need (copies for
// staging, allocation for simdev and tests, dma-buf import and export).
//
// Detection policy:
//  - no device plugin loaded (the default, SWY_MEMTYPES=host): every pointer is host; detect()
//    is an inline flag test, no lookup at all;
//  - otherwise: range cache; on a miss each device plugin's detect(). A pointer no plugin
//    claims is host only if every loaded device plugin answered a definitive "not mine"
//    (simdev and dmabuf know their ranges exactly; CUDA's cuPointerGetAttributes answers for
//    any pointer). If any plugin could not tell, the answer is kUnknown, never a guess of
//    host: treating device memory as host means a CPU copy from device memory (see
//    openucx/ucx#4767).
//
// Cache coherence: allocate/map insert the new range (dropping anything stale that overlaps),
// release/unmap erase it. Release and the slow path of detect are serialised by a
// shared_mutex (detect shared, release exclusive), so a detect cannot cache a range that a
// concurrent release is removing. Memory freed behind the registry's back (cudaFree by the
// application) is not seen: call invalidate() for it, or the cached range stays until an
// overlapping range is inserted.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/config.h"
#include "memtypes/memtype.h"
#include "memtypes/range_cache.h"

namespace swy::mem {

class MemTypeRegistry {
public:
    /// Load the plugins named in @p names (SWY_MEMTYPES: host, simdev, dmabuf, cuda; host is
    /// always loaded, duplicates are ignored). simdev reads SWY_SIMDEV_BW, SWY_SIMDEV_LATENCY
    /// and SWY_SIMDEV_THROTTLE from @p config.
    /// Errors: kInvalidParam with @p why for an unknown name or a bad simdev setting;
    /// kNoMemory. A requested "cuda" without a usable driver is NOT an error: a warning is
    /// logged ("cuda: libcuda.so.1 not found (no NVIDIA driver)") and the registry works
    /// without it — without a driver no CUDA memory can exist in this process, so nothing is
    /// misdetected; cuda_unavailable_reason() keeps the message.
    static Status create(const std::vector<std::string>& names, const common::Config& config,
                         std::unique_ptr<MemTypeRegistry>* out, std::string* why);

    ~MemTypeRegistry();
    MemTypeRegistry(const MemTypeRegistry&) = delete;
    MemTypeRegistry& operator=(const MemTypeRegistry&) = delete;

    /// True when a plugin other than host is loaded (detection then does real work).
    bool device_plugins_loaded() const { return device_count_ != 0; }
    /// True when the plugin for @p type is loaded (kHost: always).
    bool loaded(MemType type) const;
    /// Why "cuda" was requested but not loaded; empty otherwise.
    const std::string& cuda_unavailable_reason() const { return cuda_unavailable_; }

    /// Type of [ptr, ptr+length) and, in @p out, the whole range it belongs to (for host: the
    /// queried range itself, cpu_accessible). kUnknown when no plugin claims it and some
    /// plugin could not rule it out, or when the buffer starts inside a device allocation
    /// but runs past its end. Cost: a flag test with no device plugin; a per-thread slot or
    /// map lookup on a cache hit; plugin calls on a miss.
    MemType detect(const void* ptr, size_t length, MemRange* out = nullptr) const {
        if (device_count_ == 0) [[likely]] {
            if (out != nullptr) {
                *out = MemRange{MemType::kHost, true, -1, reinterpret_cast<uintptr_t>(ptr), length};
            }
            return MemType::kHost;
        }
        return detect_device(ptr, length, out);
    }

    /// Attributes of a memory type. A type that is not loaded (and kUnknown) reports
    /// cpu_accessible = false. Per-range CPU access is MemRange::cpu_accessible.
    MemTypeAttr attr(MemType type) const;

    /// Synchronous copies between memory of @p type and host memory. @p type may be kUnknown
    /// (detected first). kInvalidParam: range not inside one allocation of that type, or type
    /// not loaded; kUnsupported: the plugin cannot copy this range (a dma-buf without CPU
    /// mapping); kIoError: driver failure.
    Status copy_to_host(MemType src_type, void* host_dst, const void* src, size_t length) const;
    Status copy_from_host(MemType dst_type, void* dst, const void* host_src, size_t length) const;

    /// Any direction: host↔host (memcpy), host↔device (the plugin), device↔device (staged
    /// through a host bounce buffer). Types may be kUnknown (detected).
    Status copy(void* dst, MemType dst_type, const void* src, MemType src_type,
                size_t length) const;

    /// Asynchronous copies: kOk = already complete (*token = 0); kInProgress = poll test(*token)
    /// until it is not kInProgress. Tokens carry the memory type in their top byte.
    Status copy_to_host_async(MemType src_type, void* host_dst, const void* src, size_t length,
                              uint64_t* token) const;
    Status copy_from_host_async(MemType dst_type, void* dst, const void* host_src, size_t length,
                                uint64_t* token) const;
    /// kOk (done), kInProgress, kInvalidParam (not a token of ours), kIoError.
    Status test(uint64_t token) const;

    /// Allocate @p length bytes of @p type (host: page-aligned; simdev: CPU-inaccessible;
    /// cuda: device 0). kUnsupported for types without allocation (dmabuf: use map_dmabuf)
    /// or not loaded; kInvalidParam for length 0; kNoMemory.
    Status allocate(MemType type, size_t length, void** out);
    /// Free memory from allocate() and invalidate its cached range. kInvalidParam if @p ptr
    /// is not the start of such an allocation.
    Status release(void* ptr);

    /// Import [offset, offset+length) of a dma-buf fd (the fd is dup'ed; the caller keeps
    /// its own). *address identifies the range from now on; it is CPU-accessible only if the
    /// exporter allows mmap (see MemRange::cpu_accessible). kUnsupported if the dmabuf plugin
    /// is not loaded; kInvalidParam for a bad fd or zero length.
    Status map_dmabuf(int fd, uint64_t offset, size_t length, void** address);
    /// Undo map_dmabuf() and invalidate the range. kInvalidParam if not a mapping's address.
    Status unmap(void* address);

    /// A dma-buf fd (owned by the caller) and offset for [ptr, ptr+length). kUnsupported when
    /// the memory's plugin cannot export (host memory, CUDA without dma-buf support).
    Status export_dmabuf(const void* ptr, size_t length, int* fd, uint64_t* offset) const;

    /// Forget cached ranges overlapping [ptr, ptr+length): for memory the application freed
    /// without the registry (cudaFree). Cheap when nothing is cached there.
    void invalidate(const void* ptr, size_t length);

    /// The loaded plugin table for @p type, or nullptr.
    const MemTypePlugin* plugin(MemType type) const;

    /// Whether @p table speaks this library's plugin ABI (kPluginAbiVersion). The registry
    /// refuses any other table at load: a plugin built against another memtype.h may lay out
    /// its function table differently, so none of its functions can be called safely.
    /// @return false with @p why naming the plugin, its version and ours.
    static bool abi_compatible(const MemTypePlugin& table, std::string* why);

    /// The range cache (tests and benchmarks).
    const RangeCache& cache() const { return cache_; }

private:
    MemTypeRegistry() = default;
    MemType detect_device(const void* ptr, size_t length, MemRange* out) const;
    // Asks the device plugins; no cache, no lock. kOk+range, kNotFound (host), or kUnknown
    // range with kBusy when some plugin could not tell.
    Status ask_plugins(const void* ptr, size_t length, MemRange* out) const;
    // Refuses (kUnsupported, @p why) a table of another ABI version (abi_compatible).
    Status add_plugin(const MemTypePlugin& table, std::string* why);
    const MemTypePlugin* copy_plugin(MemType* type, const void* device_ptr, size_t length) const;

    std::array<MemTypePlugin, kMemTypeCount> plugins_{};  // index: MemType; abi_version 0 = absent
    std::array<MemTypeAttr, kMemTypeCount> attrs_{};
    std::array<const MemTypePlugin*, kMemTypeCount> device_{};  // loaded device plugins, in order
    size_t device_count_ = 0;
    std::string cuda_unavailable_;

    mutable RangeCache cache_;
    // Shared: detect's miss path (ask plugins, cache the answer). Exclusive: release/unmap.
    mutable std::shared_mutex churn_lock_;
    // Host allocations from allocate(), so release() of anything else is refused cleanly.
    std::mutex host_lock_;
    std::unordered_set<void*> host_allocs_;
};

}  // namespace swy::mem
