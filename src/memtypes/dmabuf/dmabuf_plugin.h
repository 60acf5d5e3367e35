// dma-buf plugin: memory the application imports as a dma-buf fd (from a GPU driver, a video
// decoder, an RDMA-capable exporter...). swy_mem_map_dmabuf() gives the range an address in
// this process; detection, copies and export work on that address.
//
// Mapping tries mmap(fd). If the exporter allows it, the range is CPU-accessible and copies
// go through the mapping, bracketed by DMA_BUF_IOCTL_SYNC start/end when the fd is a real
// dma-buf (fstatfs magic DMA_BUF_MAGIC; a memfd standing in for one in tests is not, and
// gets plain memcpy). If mmap is refused, the address is a PROT_NONE reservation: unique, so
// detection works, any CPU access faults, and copies return kUnsupported (the data can only
// move by a device that imports the fd — export_dmabuf() hands it on).
//
// The fd is dup'ed at map time; the caller may close its own copy.
#pragma once

#include <string>

#include "memtypes/memtype.h"

namespace swy::mem {

/// Fill @p out with a new dmabuf plugin. kNoMemory.
Status create_dmabuf_plugin(MemTypePlugin* out, std::string* why);

/// Import [offset, offset+length) of dma-buf @p fd; *address is where it appears in this
/// process. kInvalidParam: bad fd or zero length; kNoMemory: no address space. Not part of
/// the C table (only this plugin maps fds); the registry calls it with the plugin's state.
Status dmabuf_map(void* state, int fd, uint64_t offset, size_t length, void** address);

/// Undo dmabuf_map(): unmap and close the dup'ed fd. kInvalidParam if @p address is not a
/// mapping's start.
Status dmabuf_unmap(void* state, void* address);

}  // namespace swy::mem
