// C API: memory types (allocation, dma-buf import, detection, staging copies).
#include <switchyard/memtype.h>

#include "api/api_guard.h"
#include "core/context.h"
#include "memtypes/registry.h"

using namespace swy;

namespace {

mem::MemTypeRegistry& registry_of(swy_context_h context) {
    return reinterpret_cast<core::Context*>(context)->memtypes();
}

bool valid_type(swy_memtype_t t) { return t >= SWY_MEMTYPE_UNKNOWN && t <= SWY_MEMTYPE_CUDA; }

static_assert(static_cast<int>(mem::MemType::kHost) == SWY_MEMTYPE_HOST &&
              static_cast<int>(mem::MemType::kSimdev) == SWY_MEMTYPE_SIMDEV &&
              static_cast<int>(mem::MemType::kDmabuf) == SWY_MEMTYPE_DMABUF &&
              static_cast<int>(mem::MemType::kCuda) == SWY_MEMTYPE_CUDA &&
              static_cast<int>(mem::MemType::kUnknown) == SWY_MEMTYPE_UNKNOWN);

}  // namespace

extern "C" {

swy_status_t swy_mem_alloc(swy_context_h context, swy_memtype_t type, size_t length,
                           void** address) {
    if (context == nullptr || address == nullptr) {
        return api::invalid(__func__, "context and address must not be NULL");
    }
    if (length == 0) return api::invalid(__func__, "length is 0");
    if (!valid_type(type) || type == SWY_MEMTYPE_UNKNOWN) {
        return api::invalid(__func__, "type must be a concrete memory type");
    }
    const Status s =
        registry_of(context).allocate(static_cast<mem::MemType>(type), length, address);
    if (s == Status::kUnsupported) {
        common::log_printf(common::LogLevel::kError,
                           "swy_mem_alloc: cannot allocate %s memory (not in SWY_MEMTYPES, "
                           "driver unavailable, or imported only)",
                           mem::memtype_name(static_cast<mem::MemType>(type)));
    }
    return api::to_c(s);
}

swy_status_t swy_mem_free(swy_context_h context, void* address) {
    if (context == nullptr || address == nullptr) {
        return api::invalid(__func__, "context and address must not be NULL");
    }
    const Status s = registry_of(context).release(address);
    if (s == Status::kInvalidParam) {
        return api::invalid(__func__, "address is not a buffer from swy_mem_alloc()");
    }
    return api::to_c(s);
}

swy_status_t swy_mem_map_dmabuf(swy_context_h context, int fd, uint64_t offset, size_t length,
                                void** address) {
    if (context == nullptr || address == nullptr) {
        return api::invalid(__func__, "context and address must not be NULL");
    }
    if (fd < 0 || length == 0) return api::invalid(__func__, "bad fd or zero length");
    const Status s = registry_of(context).map_dmabuf(fd, offset, length, address);
    if (s == Status::kUnsupported) {
        common::log_printf(common::LogLevel::kError,
                           "swy_mem_map_dmabuf: \"dmabuf\" is not in SWY_MEMTYPES");
    }
    return api::to_c(s);
}

swy_status_t swy_mem_unmap_dmabuf(swy_context_h context, void* address) {
    if (context == nullptr || address == nullptr) {
        return api::invalid(__func__, "context and address must not be NULL");
    }
    const Status s = registry_of(context).unmap(address);
    if (s == Status::kInvalidParam) {
        return api::invalid(__func__, "address is not from swy_mem_map_dmabuf()");
    }
    return api::to_c(s);
}

swy_status_t swy_mem_detect(swy_context_h context, const void* address, size_t length,
                            swy_memtype_t* type) {
    if (context == nullptr || type == nullptr) {
        return api::invalid(__func__, "context and type must not be NULL");
    }
    *type = static_cast<swy_memtype_t>(registry_of(context).detect(address, length));
    return SWY_OK;
}

swy_status_t swy_mem_copy(swy_context_h context, void* dst, swy_memtype_t dst_type, const void* src,
                          swy_memtype_t src_type, size_t length) {
    if (context == nullptr) return api::invalid(__func__, "context is NULL");
    if (length == 0) return SWY_OK;
    if (dst == nullptr || src == nullptr) return api::invalid(__func__, "dst or src is NULL");
    if (!valid_type(dst_type) || !valid_type(src_type)) {
        return api::invalid(__func__, "unknown memory type value");
    }
    return api::to_c(registry_of(context).copy(dst, static_cast<mem::MemType>(dst_type), src,
                                               static_cast<mem::MemType>(src_type), length));
}

}  // extern "C"
