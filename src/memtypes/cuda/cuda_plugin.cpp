#include "memtypes/cuda/cuda_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <new>
#include <vector>

#if __has_include(<cuda.h>)
// Only when a CUDA include path is set: check our declarations against the real header.
#include <cuda.h>
namespace swy::mem::cudrv {
static_assert(kSuccess == CUDA_SUCCESS && kErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(kPointerAttrContext == CU_POINTER_ATTRIBUTE_CONTEXT &&
              kPointerAttrMemoryType == CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
              kPointerAttrIsManaged == CU_POINTER_ATTRIBUTE_IS_MANAGED &&
              kPointerAttrDeviceOrdinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL &&
              kPointerAttrRangeStartAddr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
              kPointerAttrRangeSize == CU_POINTER_ATTRIBUTE_RANGE_SIZE);
static_assert(kMemoryTypeHost == CU_MEMORYTYPE_HOST && kMemoryTypeDevice == CU_MEMORYTYPE_DEVICE &&
              kMemoryTypeArray == CU_MEMORYTYPE_ARRAY &&
              kMemoryTypeUnified == CU_MEMORYTYPE_UNIFIED);
static_assert(kDevAttrConcurrentManagedAccess == CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS &&
              kDevAttrDmaBufSupported == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
static_assert(kMemRangeHandleTypeDmaBufFd == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
static_assert(sizeof(DevicePtr) == sizeof(CUdeviceptr) && sizeof(Device) == sizeof(CUdevice));
}  // namespace swy::mem::cudrv
#endif

namespace swy::mem {
namespace {

using namespace cudrv;

struct Api {
    InitFn init = nullptr;
    GetErrorStringFn get_error_string = nullptr;
    DeviceGetCountFn device_get_count = nullptr;
    DeviceGetFn device_get = nullptr;
    DeviceGetAttributeFn device_get_attribute = nullptr;
    PrimaryCtxRetainFn primary_ctx_retain = nullptr;
    PrimaryCtxReleaseFn primary_ctx_release = nullptr;
    CtxSetCurrentFn ctx_set_current = nullptr;
    CtxGetCurrentFn ctx_get_current = nullptr;
    PointerGetAttributesFn pointer_get_attributes = nullptr;
    MemcpyDtoHFn memcpy_dtoh = nullptr;
    MemcpyHtoDFn memcpy_htod = nullptr;
    MemcpyDtoHAsyncFn memcpy_dtoh_async = nullptr;
    MemcpyHtoDAsyncFn memcpy_htod_async = nullptr;
    StreamCreateFn stream_create = nullptr;
    StreamQueryFn stream_query = nullptr;
    StreamDestroyFn stream_destroy = nullptr;
    MemGetHandleForAddressRangeFn get_handle_for_address_range = nullptr;  // optional (11.7+)
    MemAllocFn mem_alloc = nullptr;                                        // optional
    MemFreeFn mem_free = nullptr;                                          // optional
};

struct DeviceState {
    Device device = 0;
    bool concurrent_managed = false;
    bool dmabuf_supported = false;
    std::mutex lock;            // guards everything below
    Context primary = nullptr;  // retained on first use
    Stream stream = nullptr;    // plugin-owned, for async copies
    uint64_t submitted = 0;     // async copies enqueued on `stream`
    uint64_t completed = 0;     // all up to here are known finished
};

constexpr int kTokenDeviceShift = 40;  // token = (device + 1) << 40 | sequence

struct Cuda {
    void* library = nullptr;
    Api api;
    std::vector<std::unique_ptr<DeviceState>> devices;
    size_t page = 4096;

    DeviceState* dev(int ordinal) {
        if (ordinal < 0 || static_cast<size_t>(ordinal) >= devices.size()) return nullptr;
        return devices[static_cast<size_t>(ordinal)].get();
    }

    // Caller holds d->lock.
    Status ensure_primary(DeviceState* d) {
        if (d->primary != nullptr) return Status::kOk;
        return api.primary_ctx_retain(&d->primary, d->device) == kSuccess ? Status::kOk
                                                                          : Status::kIoError;
    }
};

Cuda* self(void* state) { return static_cast<Cuda*>(state); }

struct PointerInfo {
    unsigned memory_type = 0;
    int device = -1;
    bool managed = false;
    uintptr_t base = 0;
    size_t size = 0;
    Context context = nullptr;
};

Status query_pointer(Cuda* c, const void* ptr, PointerInfo* info) {
    // Zeroed 8-byte slots: the driver writes 4 bytes for some attributes (little-endian).
    uint64_t values[6] = {};
    int attrs[6] = {kPointerAttrMemoryType,     kPointerAttrDeviceOrdinal, kPointerAttrIsManaged,
                    kPointerAttrRangeStartAddr, kPointerAttrRangeSize,     kPointerAttrContext};
    void* data[6];
    for (int i = 0; i < 6; ++i)
        data[i] = &values[i];
    const Result r =
        c->api.pointer_get_attributes(6, attrs, data, reinterpret_cast<DevicePtr>(ptr));
    if (r != kSuccess) return Status::kIoError;
    info->memory_type = static_cast<unsigned>(values[0]);
    info->device = static_cast<int>(static_cast<uint32_t>(values[1]));
    info->managed = static_cast<uint32_t>(values[2]) != 0;
    info->base = static_cast<uintptr_t>(values[3]);
    info->size = static_cast<size_t>(values[4]);
    info->context = reinterpret_cast<Context>(values[5]);
    return Status::kOk;
}

Status cuda_detect(void* state, const void* ptr, size_t length, MemRange* out) {
    Cuda* c = self(state);
    PointerInfo info;
    if (query_pointer(c, ptr, &info) != Status::kOk) return Status::kIoError;  // cannot tell
    const bool device_memory = info.memory_type == kMemoryTypeDevice ||
                               info.memory_type == kMemoryTypeUnified ||
                               info.memory_type == kMemoryTypeArray || info.managed;
    if (!device_memory) return Status::kNotFound;  // unknown to CUDA, or pinned host memory
    MemRange r{MemType::kCuda, false, info.device, info.base, info.size};
    if (r.length == 0) {
        r.base = reinterpret_cast<uintptr_t>(ptr);
        r.length = length == 0 ? 1 : length;
    }
    if (info.managed) {
        DeviceState* d = c->dev(info.device);
        r.cpu_accessible = d != nullptr && d->concurrent_managed;
    }
    if (!r.contains(reinterpret_cast<uintptr_t>(ptr), length == 0 ? 1 : length)) {
        return Status::kInvalidParam;  // runs past the end of the allocation
    }
    *out = r;
    return Status::kOk;
}

// Makes the pointer's context current for the lifetime of the object, then restores.
class ScopedContext {
public:
    ScopedContext(Cuda* c, const void* ptr) : c_(c) {
        PointerInfo info;
        if (query_pointer(c, ptr, &info) != Status::kOk || info.device < 0) return;
        Context ctx = info.context;
        DeviceState* d = c->dev(info.device);
        if (ctx == nullptr && d != nullptr) {  // e.g. cuMemCreate/cuMemMap: no owning context
            std::lock_guard guard(d->lock);
            if (c->ensure_primary(d) == Status::kOk) ctx = d->primary;
        }
        if (ctx == nullptr) return;
        if (c->api.ctx_get_current(&saved_) != kSuccess) saved_ = nullptr;
        ok_ = c->api.ctx_set_current(ctx) == kSuccess;
    }
    ~ScopedContext() {
        if (ok_) c_->api.ctx_set_current(saved_);
    }
    bool ok() const { return ok_; }

private:
    Cuda* c_;
    Context saved_ = nullptr;
    bool ok_ = false;
};

Status cuda_copy_to_host(void* state, void* host_dst, const void* src, size_t length) {
    Cuda* c = self(state);
    if (length == 0) return Status::kOk;
    ScopedContext ctx(c, src);
    if (!ctx.ok()) return Status::kInvalidParam;
    return c->api.memcpy_dtoh(host_dst, reinterpret_cast<DevicePtr>(src), length) == kSuccess
               ? Status::kOk
               : Status::kIoError;
}

Status cuda_copy_from_host(void* state, void* dst, const void* host_src, size_t length) {
    Cuda* c = self(state);
    if (length == 0) return Status::kOk;
    ScopedContext ctx(c, dst);
    if (!ctx.ok()) return Status::kInvalidParam;
    return c->api.memcpy_htod(reinterpret_cast<DevicePtr>(dst), host_src, length) == kSuccess
               ? Status::kOk
               : Status::kIoError;
}

// Enqueue one async copy on the device's stream. @p issue does the driver call.
template <typename Issue>
Status cuda_async(Cuda* c, const void* device_ptr, uint64_t* token, Issue issue) {
    PointerInfo info;
    if (query_pointer(c, device_ptr, &info) != Status::kOk) return Status::kIoError;
    DeviceState* d = c->dev(info.device);
    if (d == nullptr) return Status::kInvalidParam;
    std::lock_guard guard(d->lock);
    if (c->ensure_primary(d) != Status::kOk) return Status::kIoError;
    Context saved = nullptr;
    if (c->api.ctx_get_current(&saved) != kSuccess) saved = nullptr;
    if (c->api.ctx_set_current(d->primary) != kSuccess) return Status::kIoError;
    Status st = Status::kOk;
    if (d->stream == nullptr && c->api.stream_create(&d->stream, kStreamNonBlocking) != kSuccess) {
        d->stream = nullptr;
        st = Status::kIoError;
    }
    if (st == Status::kOk) st = issue(d->stream) == kSuccess ? Status::kOk : Status::kIoError;
    c->api.ctx_set_current(saved);
    if (st != Status::kOk) return st;
    const uint64_t seq = ++d->submitted;
    *token = (static_cast<uint64_t>(info.device + 1) << kTokenDeviceShift) | seq;
    return Status::kInProgress;
}

Status cuda_copy_to_host_async(void* state, void* host_dst, const void* src, size_t length,
                               uint64_t* token) {
    Cuda* c = self(state);
    *token = 0;
    if (length == 0) return Status::kOk;
    return cuda_async(c, src, token, [&](Stream s) {
        return c->api.memcpy_dtoh_async(host_dst, reinterpret_cast<DevicePtr>(src), length, s);
    });
}

Status cuda_copy_from_host_async(void* state, void* dst, const void* host_src, size_t length,
                                 uint64_t* token) {
    Cuda* c = self(state);
    *token = 0;
    if (length == 0) return Status::kOk;
    return cuda_async(c, dst, token, [&](Stream s) {
        return c->api.memcpy_htod_async(reinterpret_cast<DevicePtr>(dst), host_src, length, s);
    });
}

Status cuda_test(void* state, uint64_t token) {
    Cuda* c = self(state);
    if (token == 0) return Status::kOk;
    DeviceState* d = c->dev(static_cast<int>(token >> kTokenDeviceShift) - 1);
    if (d == nullptr) return Status::kInvalidParam;
    const uint64_t seq = token & ((uint64_t{1} << kTokenDeviceShift) - 1);
    std::lock_guard guard(d->lock);
    if (seq > d->submitted) return Status::kInvalidParam;
    if (seq <= d->completed) return Status::kOk;
    // One stream per device: when it is idle, everything submitted so far has finished.
    const Result r = c->api.stream_query(d->stream);
    if (r == kErrorNotReady) return Status::kInProgress;
    if (r != kSuccess) return Status::kIoError;
    d->completed = d->submitted;
    return Status::kOk;
}

Status cuda_export_dmabuf(void* state, const void* ptr, size_t length, int* fd, uint64_t* offset) {
    Cuda* c = self(state);
    if (c->api.get_handle_for_address_range == nullptr) return Status::kUnsupported;
    PointerInfo info;
    if (query_pointer(c, ptr, &info) != Status::kOk) return Status::kIoError;
    DeviceState* d = c->dev(info.device);
    if (d == nullptr) return Status::kInvalidParam;
    if (!d->dmabuf_supported) return Status::kUnsupported;
    // The driver wants host-page-aligned address and size.
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const uintptr_t begin = p / c->page * c->page;
    const uintptr_t end = (p + (length == 0 ? 1 : length) + c->page - 1) / c->page * c->page;
    int handle = -1;
    if (c->api.get_handle_for_address_range(&handle, static_cast<DevicePtr>(begin), end - begin,
                                            kMemRangeHandleTypeDmaBufFd, 0) != kSuccess) {
        return Status::kUnsupported;
    }
    *fd = handle;
    *offset = p - begin;
    return Status::kOk;
}

Status cuda_allocate(void* state, size_t length, void** out) {
    // For tests and swy_mem_alloc(): device memory on device 0 in its primary context.
    Cuda* c = self(state);
    if (c->api.mem_alloc == nullptr || length == 0) return Status::kUnsupported;
    DeviceState* d = c->dev(0);
    if (d == nullptr) return Status::kUnsupported;
    std::lock_guard guard(d->lock);
    if (c->ensure_primary(d) != Status::kOk) return Status::kIoError;
    Context saved = nullptr;
    if (c->api.ctx_get_current(&saved) != kSuccess) saved = nullptr;
    if (c->api.ctx_set_current(d->primary) != kSuccess) return Status::kIoError;
    DevicePtr p = 0;
    const Result r = c->api.mem_alloc(&p, length);
    c->api.ctx_set_current(saved);
    if (r != kSuccess) return Status::kNoMemory;
    *out = reinterpret_cast<void*>(p);
    return Status::kOk;
}

Status cuda_release(void* state, void* ptr) {
    Cuda* c = self(state);
    if (c->api.mem_free == nullptr) return Status::kUnsupported;
    ScopedContext ctx(c, ptr);
    if (!ctx.ok()) return Status::kInvalidParam;
    return c->api.mem_free(reinterpret_cast<DevicePtr>(ptr)) == kSuccess ? Status::kOk
                                                                         : Status::kInvalidParam;
}

void cuda_query(void* state, MemTypeAttr* out) {
    Cuda* c = self(state);
    *out = MemTypeAttr{};
    out->cpu_accessible = false;  // per range: managed memory may be (MemRange::cpu_accessible)
    bool dmabuf = c->api.get_handle_for_address_range != nullptr && !c->devices.empty();
    for (auto& d : c->devices)
        dmabuf = dmabuf && d->dmabuf_supported;
    out->dmabuf_capable = dmabuf;
    out->copy_bw_Bps = 20e9;      // PCIe 4.0 x16, pageable staging; calibration refines it
    out->copy_latency_s = 10e-6;  // synchronous cuMemcpy call
}

void cuda_destroy(void* state) {
    Cuda* c = self(state);
    for (auto& d : c->devices) {
        if (d->stream != nullptr && c->api.stream_destroy != nullptr) {
            Context saved = nullptr;
            if (c->api.ctx_get_current(&saved) != kSuccess) saved = nullptr;
            if (c->api.ctx_set_current(d->primary) == kSuccess) c->api.stream_destroy(d->stream);
            c->api.ctx_set_current(saved);
        }
        if (d->primary != nullptr && c->api.primary_ctx_release != nullptr) {
            c->api.primary_ctx_release(d->device);
        }
    }
    // The driver library stays loaded: unloading libcuda while the process may still use
    // CUDA elsewhere is not safe (NCCL and UCX never dlclose it either).
    delete c;
}

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* fn) {
    *fn = reinterpret_cast<Fn>(dlsym(lib, name));
    return *fn != nullptr;
}

std::string error_text(const Api& api, Result r) {
    const char* s = nullptr;
    if (api.get_error_string != nullptr && api.get_error_string(r, &s) == kSuccess &&
        s != nullptr) {
        return std::string(s) + " (" + std::to_string(r) + ")";
    }
    return "error " + std::to_string(r);
}

}  // namespace

Status create_cuda_plugin(const char* library, MemTypePlugin* out, std::string* why) {
    std::string dummy;
    if (why == nullptr) why = &dummy;
    if (library == nullptr) library = kCudaDriverLibrary;
    void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        *why = std::string("cuda: ") + library + " not found (no NVIDIA driver)";
        return Status::kUnsupported;
    }
    auto c = std::unique_ptr<Cuda>(new (std::nothrow) Cuda());
    if (!c) return Status::kNoMemory;
    c->library = lib;
    Api& a = c->api;
    const char* missing = nullptr;
    auto need = [&](const char* name, auto* fn) {
        if (!resolve(lib, name, fn) && missing == nullptr) missing = name;
    };
    need("cuInit", &a.init);
    need("cuGetErrorString", &a.get_error_string);
    need("cuDeviceGetCount", &a.device_get_count);
    need("cuDeviceGet", &a.device_get);
    need("cuDeviceGetAttribute", &a.device_get_attribute);
    need("cuDevicePrimaryCtxRetain", &a.primary_ctx_retain);
    need("cuDevicePrimaryCtxRelease_v2", &a.primary_ctx_release);
    need("cuCtxSetCurrent", &a.ctx_set_current);
    need("cuCtxGetCurrent", &a.ctx_get_current);
    need("cuPointerGetAttributes", &a.pointer_get_attributes);
    need("cuMemcpyDtoH_v2", &a.memcpy_dtoh);
    need("cuMemcpyHtoD_v2", &a.memcpy_htod);
    need("cuMemcpyDtoHAsync_v2", &a.memcpy_dtoh_async);
    need("cuMemcpyHtoDAsync_v2", &a.memcpy_htod_async);
    need("cuStreamCreate", &a.stream_create);
    need("cuStreamQuery", &a.stream_query);
    need("cuStreamDestroy_v2", &a.stream_destroy);
    resolve(lib, "cuMemGetHandleForAddressRange", &a.get_handle_for_address_range);
    resolve(lib, "cuMemAlloc_v2", &a.mem_alloc);
    resolve(lib, "cuMemFree_v2", &a.mem_free);
    // A library that is not libcuda is closed again; a real but unusable driver stays
    // loaded (see cuda_destroy) — it may be in use by the application.
    if (missing != nullptr) {
        *why = std::string("cuda: ") + library + " lacks " + missing +
               " (not an NVIDIA driver, or one too old)";
        dlclose(lib);
        return Status::kUnsupported;
    }
    Result r = a.init(0);
    if (r != kSuccess) {
        *why = "cuda: cuInit failed: " + error_text(a, r);
        return Status::kUnsupported;
    }
    int count = 0;
    r = a.device_get_count(&count);
    if (r != kSuccess || count <= 0) {
        *why = r != kSuccess ? "cuda: cuDeviceGetCount failed: " + error_text(a, r)
                             : std::string("cuda: no CUDA device");
        return Status::kUnsupported;
    }
    for (int i = 0; i < count; ++i) {
        auto d = std::make_unique<DeviceState>();
        if (a.device_get(&d->device, i) != kSuccess) {
            *why = "cuda: cuDeviceGet(" + std::to_string(i) + ") failed";
            return Status::kUnsupported;
        }
        int v = 0;
        d->concurrent_managed =
            a.device_get_attribute(&v, kDevAttrConcurrentManagedAccess, d->device) == kSuccess &&
            v != 0;
        v = 0;
        d->dmabuf_supported =
            a.device_get_attribute(&v, kDevAttrDmaBufSupported, d->device) == kSuccess && v != 0;
        c->devices.push_back(std::move(d));
    }
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) c->page = static_cast<size_t>(page);

    *out = MemTypePlugin{};
    out->abi_version = kPluginAbiVersion;
    out->name = "cuda";
    out->type = MemType::kCuda;
    out->state = c.release();
    out->detect = cuda_detect;
    out->copy_to_host = cuda_copy_to_host;
    out->copy_from_host = cuda_copy_from_host;
    out->copy_to_host_async = cuda_copy_to_host_async;
    out->copy_from_host_async = cuda_copy_from_host_async;
    out->test = cuda_test;
    out->export_dmabuf = cuda_export_dmabuf;
    out->allocate = cuda_allocate;
    out->release = cuda_release;
    out->query = cuda_query;
    out->destroy = cuda_destroy;
    return Status::kOk;
}

}  // namespace swy::mem
