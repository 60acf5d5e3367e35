#include "protocols/rndv/zcopy_register.h"

#include "common/unique_fd.h"
#include "memtypes/registry.h"

namespace swy::proto::rndv {

Status RegistryDmabufExporter::export_dmabuf(const void* ptr, size_t length, int* fd,
                                             uint64_t* offset) const {
    return registry_.export_dmabuf(ptr, length, fd, offset);
}

namespace {

bool exported_kind(mem::MemType type) {
    return type == mem::MemType::kDmabuf || type == mem::MemType::kCuda;
}

}  // namespace

bool dmabuf_exported_type(mem::MemType type, const mem::MemTypeAttr& attr) {
    return exported_kind(type) && attr.dmabuf_capable;
}

bool zcopy_reaches_device_memory(const tl::LaneAttr& lane, mem::MemType type,
                                 const mem::MemTypeAttr& attr) {
    constexpr uint32_t kNeeded =
        tl::cap::kGetZcopy | tl::cap::kPutZcopy | tl::cap::kRemoteKeys | tl::cap::kDeviceMemory;
    return (lane.caps & kNeeded) == kNeeded && dmabuf_exported_type(type, attr);
}

Status register_zcopy_buffer(tl::ZcopyLane& lane, const DmabufExporter& exporter,
                             const void* buffer, size_t length, mem::MemType type, bool cpu_buffer,
                             unsigned access, std::unique_ptr<tl::MemoryRegistration>* out,
                             std::string* why) {
    const bool device_memory = (lane.caps() & tl::cap::kDeviceMemory) != 0;
    if (exported_kind(type) && device_memory) {
        int exported = -1;
        uint64_t offset = 0;
        Status s = exporter.export_dmabuf(buffer, length, &exported, &offset);
        if (s == Status::kOk) {
            // Ours to close: the registration holds its own reference to the dma-buf.
            const common::UniqueFd fd(exported);
            // iova = the buffer's address: the peer and our own RDMA operations name the
            // memory exactly as they would name host memory.
            return lane.register_dmabuf(fd.get(), offset, length,
                                        reinterpret_cast<uint64_t>(buffer), access, out, why);
        }
        if (!cpu_buffer) {
            *why = std::string(mem::memtype_name(type)) + " memory: no dma-buf export (" +
                   status_text(s) + ")";
            return s;
        }
        // A mapping the CPU may touch: try it as host memory.
    }
    if (cpu_buffer) return lane.register_memory(buffer, length, access, out, why);
    *why = std::string(mem::memtype_name(type)) + " memory: " +
           (device_memory ? "its memory type exports no dma-buf"
                          : "the device takes no dma-buf MRs, and the CPU must not touch it");
    return Status::kUnsupported;
}

}  // namespace swy::proto::rndv
