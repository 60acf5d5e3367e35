// Memory-type plugin interface: a versioned C table per memory type, so plugins (host, simdev,
// dmabuf, cuda) stay behind a stable boundary and the C++ core never depends on a vendor API.
//
// A plugin answers "is this pointer mine?" (detect), copies between its memory and host memory
// (synchronously, and asynchronously with a completion check), exports dma-buf fds where it
// can, and reports its attributes. Whether the CPU may touch the memory is an attribute: the
// protocol layer never runs a CPU path (PIO, bcopy, CMA) on memory whose plugin says no.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace swy::mem {

/// Same values as the public swy_memtype_t.
enum class MemType : uint8_t { kUnknown = 0, kHost = 1, kSimdev = 2, kDmabuf = 3, kCuda = 4 };
inline constexpr size_t kMemTypeCount = 5;

/// Name used in SWY_MEMTYPES, tables and swy-perf ("host", "simdev", ...).
const char* memtype_name(MemType type);

/// A detected allocation: the whole range the pointer belongs to.
struct MemRange {
    MemType type = MemType::kUnknown;
    /// Plain CPU loads/stores are allowed on this range. Per range, not per type: a dma-buf
    /// whose exporter allows mmap and CUDA managed memory on a device with concurrent managed
    /// access are CPU-accessible although their type in general is not. False by default so
    /// that a range nobody filled in is never touched by the CPU. (Placed here, in what was
    /// padding, to keep the struct 24 bytes: copies of it are on the detection fast path.)
    bool cpu_accessible = false;
    int device = -1;
    uintptr_t base = 0;
    size_t length = 0;
    bool contains(uintptr_t p, size_t n) const {
        return p >= base && n <= length && p - base <= length - n;
    }
};
static_assert(sizeof(MemRange) == 24);

/// What a memory type allows.
struct MemTypeAttr {
    bool cpu_accessible = true;   ///< plain loads/stores from the CPU are allowed
    bool dmabuf_capable = false;  ///< export_dmabuf works
    double copy_bw_Bps = 10e9;    ///< copy to/from host bandwidth (for the selector)
    double copy_latency_s = 0;    ///< fixed cost of one copy call
};

inline constexpr uint32_t kPluginAbiVersion = 1;

/// The plugin table. Every function gets the plugin's own `state`. Unsupported operations are
/// nullptr (the caller then reports kUnsupported).
struct MemTypePlugin {
    uint32_t abi_version;  ///< kPluginAbiVersion
    const char* name;
    MemType type;
    void* state;

    /// kOk and @p out filled if [ptr, ptr+length) is this plugin's memory; kNotFound if it is
    /// definitely not (the registry may then call the memory host). Any other error means
    /// "cannot tell", and the registry reports kUnknown rather than guess host.
    Status (*detect)(void* state, const void* ptr, size_t length, MemRange* out);
    /// Synchronous copies between this memory type and host memory.
    Status (*copy_to_host)(void* state, void* host_dst, const void* src, size_t length);
    Status (*copy_from_host)(void* state, void* dst, const void* host_src, size_t length);
    /// Asynchronous copies: start, then poll test(token) until it returns kOk (or an error).
    Status (*copy_to_host_async)(void* state, void* host_dst, const void* src, size_t length,
                                 uint64_t* token);
    Status (*copy_from_host_async)(void* state, void* dst, const void* host_src, size_t length,
                                   uint64_t* token);
    /// A started copy returns kInProgress and sets *token (never 0; below 2^56, the registry
    /// keeps the memory type in the top byte); a copy that finished at once returns kOk and
    /// sets *token to 0. test(0) is always kOk.
    Status (*test)(void* state, uint64_t token);
    /// Export [ptr, ptr+length) as a dma-buf: fd (owned by the caller) and offset into it.
    Status (*export_dmabuf)(void* state, const void* ptr, size_t length, int* fd, uint64_t* offset);
    /// Allocation (simdev and tests; cuda uses the application's allocator).
    Status (*allocate)(void* state, size_t length, void** out);
    Status (*release)(void* state, void* ptr);
    void (*query)(void* state, MemTypeAttr* out);
    void (*destroy)(void* state);
};

}  // namespace swy::mem
