// Registering a rendezvous buffer on a zero-copy lane that needs it (tl::cap::kRemoteKeys:
// RDMA): host memory through the lane's ibv_reg_mr, device memory (the dmabuf memory type,
// CUDA) through its plugin's dma-buf export and the lane's ibv_reg_dmabuf_mr, so RDMA moves it with no staging. Everything else, or a lane whose device
// does not take dma-buf MRs (rxe), is refused with a reason and the rendezvous uses the staged
// pipeline instead.
//
// The decision and the arguments of the registration live here, apart from libibverbs and the
// memory-type registry, so unit tests drive them with fakes (test/unit/zcopy_register_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "memtypes/memtype.h"
#include "transports/transport.h"
#include "transports/zcopy.h"

namespace swy::mem {
class MemTypeRegistry;
}

namespace swy::proto::rndv {

/// Exports device memory as a dma-buf (the memory-type registry; a fake in tests).
class DmabufExporter {
public:
    virtual ~DmabufExporter() = default;
    /// [ptr, ptr + length) as a dma-buf: a new fd the caller owns, and the offset of ptr in it.
    virtual Status export_dmabuf(const void* ptr, size_t length, int* fd,
                                 uint64_t* offset) const = 0;
};

/// DmabufExporter over the context's memory-type registry.
class RegistryDmabufExporter final : public DmabufExporter {
public:
    explicit RegistryDmabufExporter(const mem::MemTypeRegistry& registry) : registry_(registry) {}
    Status export_dmabuf(const void* ptr, size_t length, int* fd, uint64_t* offset) const override;

private:
    const mem::MemTypeRegistry& registry_;
};

/// Whether memory of @p type is registered through a dma-buf export: the dmabuf and cuda
/// types whose plugin says it exports (@p attr.dmabuf_capable). simdev's export is a memfd,
/// not a dma-buf, so it never qualifies.
bool dmabuf_exported_type(mem::MemType type, const mem::MemTypeAttr& attr);

/// Whether zero-copy on @p lane reaches device memory of @p type without staging: the lane
/// names memory with remote keys and registers dma-bufs (tl::cap::kRemoteKeys and
/// kDeviceMemory in LaneAttr::caps, e.g. RDMA with dma-buf MRs) and the type is exported
/// (above). The selector's tables for device memory offer zero-copy only where this holds.
bool zcopy_reaches_device_memory(const tl::LaneAttr& lane, mem::MemType type,
                                 const mem::MemTypeAttr& attr);

/// Register [buffer, buffer + length) of memory type @p type on zero-copy lane @p lane with
/// @p access (tl::ZcopyAccess bits).
///  * dmabuf / cuda memory on a lane with tl::cap::kDeviceMemory: @p exporter exports it, then
///    lane.register_dmabuf(fd, offset, length, iova = buffer, access); the fd is closed
///    afterwards, success or not (the registration keeps its own reference to the dma-buf).
///  * otherwise memory the CPU may touch (@p cpu_buffer): lane.register_memory().
///  * otherwise kUnsupported, @p why saying why (the caller then uses the staged pipeline).
/// Errors from the export or the lane are passed on with @p why filled.
Status register_zcopy_buffer(tl::ZcopyLane& lane, const DmabufExporter& exporter,
                             const void* buffer, size_t length, mem::MemType type, bool cpu_buffer,
                             unsigned access, std::unique_ptr<tl::MemoryRegistration>* out,
                             std::string* why);

}  // namespace swy::proto::rndv
