#include "memtypes/host/host_plugin.h"

#include <cstdlib>
#include <cstring>

namespace swy::mem {
namespace {

Status host_detect(void*, const void* ptr, size_t length, MemRange* out) {
    // Host is what remains when no device plugin claims a pointer; it claims everything.
    *out = MemRange{MemType::kHost, true, -1, reinterpret_cast<uintptr_t>(ptr), length};
    return Status::kOk;
}

Status host_copy(void*, void* dst, const void* src, size_t length) {
    if (length != 0) std::memcpy(dst, src, length);
    return Status::kOk;
}

Status host_copy_async(void*, void* dst, const void* src, size_t length, uint64_t* token) {
    if (length != 0) std::memcpy(dst, src, length);
    *token = 0;
    return Status::kOk;
}

Status host_test(void*, uint64_t) { return Status::kOk; }

Status host_allocate(void*, size_t length, void** out) {
    // Page-aligned so that tests and benchmarks see the same alignment as device memory.
    void* p = nullptr;
    if (posix_memalign(&p, 4096, length == 0 ? 1 : length) != 0) return Status::kNoMemory;
    *out = p;
    return Status::kOk;
}

Status host_release(void*, void* ptr) {
    std::free(ptr);
    return Status::kOk;
}

void host_query(void*, MemTypeAttr* out) {
    *out = MemTypeAttr{};
    out->cpu_accessible = true;
    out->copy_bw_Bps = 10e9;
    out->copy_latency_s = 0;
}

void host_destroy(void*) {}

}  // namespace

void create_host_plugin(MemTypePlugin* out) {
    *out = MemTypePlugin{};
    out->abi_version = kPluginAbiVersion;
    out->name = "host";
    out->type = MemType::kHost;
    out->state = nullptr;
    out->detect = host_detect;
    out->copy_to_host = host_copy;
    out->copy_from_host = host_copy;
    out->copy_to_host_async = host_copy_async;
    out->copy_from_host_async = host_copy_async;
    out->test = host_test;
    out->export_dmabuf = nullptr;
    out->allocate = host_allocate;
    out->release = host_release;
    out->query = host_query;
    out->destroy = host_destroy;
}

}  // namespace swy::mem
