/**
 * @file switchyard/memtype.h
 * @brief Switchyard public C API: memory types (host, simulated device, dma-buf, CUDA).
 *
 * Include beside <switchyard/switchyard.h>. Which memory types a context supports is chosen
 * with SWY_MEMTYPES (default "host"; add "simdev", "dmabuf", "cuda"). A buffer passed to a
 * send or receive is detected by address, so buffers from these functions (and CUDA buffers
 * from the application's own allocator) need no registration.
 *
 * Memory types (swy_memtype_t, declared in switchyard.h):
 *   SWY_MEMTYPE_HOST   -- ordinary process memory.
 *   SWY_MEMTYPE_SIMDEV -- simulated device memory (SWY_MEMTYPES=simdev): the CPU must not
 *                         touch it; any load or store through the pointer faults (SIGSEGV).
 *                         Move data with swy_mem_copy(). For testing device code paths
 *                         without a GPU.
 *   SWY_MEMTYPE_DMABUF -- a range of a dma-buf fd imported with swy_mem_map_dmabuf().
 *   SWY_MEMTYPE_CUDA   -- CUDA device or managed memory (needs the NVIDIA driver; without
 *                         one, "cuda" in SWY_MEMTYPES is ignored with a warning).
 *
 * Thread safety: every function here may be called from any thread at the same time, for
 * the same context. Freeing or unmapping a buffer while another thread uses it is an error
 * of the application (as with free()).
 */
#ifndef SWITCHYARD_MEMTYPE_H
#define SWITCHYARD_MEMTYPE_H

#include <stddef.h>
#include <stdint.h>

#include <switchyard/switchyard.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Allocate @p length bytes of memory of type @p type.
 * @param type    SWY_MEMTYPE_HOST (page-aligned), SWY_MEMTYPE_SIMDEV, or SWY_MEMTYPE_CUDA
 *                (device memory on device 0). Dma-buf memory comes from its exporter: use
 *                swy_mem_map_dmabuf().
 * @param[out] address  receives the buffer; owned by the caller, release with swy_mem_free().
 * @return SWY_OK; SWY_ERR_INVALID_PARAM for a NULL argument or zero @p length;
 *         SWY_ERR_UNSUPPORTED if the type cannot be allocated or is not enabled in
 *         SWY_MEMTYPES; SWY_ERR_NO_MEMORY; SWY_ERR_NO_RESOURCE when out of file descriptors
 *         (each simdev allocation holds one).
 */
swy_status_t swy_mem_alloc(swy_context_h context, swy_memtype_t type, size_t length,
                           void** address);

/**
 * @brief Free a buffer from swy_mem_alloc(). No operation may still be using it.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM if @p address is not the start of a live buffer
 *         from swy_mem_alloc() of this context (nothing is freed then).
 */
swy_status_t swy_mem_free(swy_context_h context, void* address);

/**
 * @brief Import the range [@p offset, @p offset + @p length) of a dma-buf so that it can be
 *        used as a message buffer (needs "dmabuf" in SWY_MEMTYPES).
 *
 * Switchyard keeps its own duplicate of @p fd; the caller may close its fd at any time. If the
 * exporter allows the CPU to map the buffer, *address is a real mapping and the CPU may
 * access it (Switchyard brackets its own accesses with DMA_BUF_IOCTL_SYNC). Otherwise
 * *address only identifies the range: a CPU access faults, swy_mem_copy() on it returns
 * SWY_ERR_UNSUPPORTED, and only transports that import dma-bufs can move its data.
 * @param[out] address  where the range appears; release with swy_mem_unmap_dmabuf().
 * @return SWY_OK; SWY_ERR_INVALID_PARAM for a bad fd, zero @p length or NULL @p address;
 *         SWY_ERR_UNSUPPORTED if "dmabuf" is not in SWY_MEMTYPES; SWY_ERR_NO_MEMORY.
 */
swy_status_t swy_mem_map_dmabuf(swy_context_h context, int fd, uint64_t offset, size_t length,
                                void** address);

/**
 * @brief Release a range imported with swy_mem_map_dmabuf() (and its duplicate fd).
 * @return SWY_OK; SWY_ERR_INVALID_PARAM if @p address is not a live mapping's address.
 */
swy_status_t swy_mem_unmap_dmabuf(swy_context_h context, void* address);

/**
 * @brief Tell the memory type of the buffer [@p address, @p address + @p length).
 *
 * With only host memory enabled (the default) the answer is always SWY_MEMTYPE_HOST and costs
 * nothing. Otherwise a buffer no plugin claims is host only if every plugin can rule it out;
 * SWY_MEMTYPE_UNKNOWN means Switchyard cannot tell (or the buffer starts inside a device
 * allocation and runs past its end), and such a buffer is refused by sends and receives.
 * @param[out] type  the detected type.
 * @return SWY_OK (also when *type is SWY_MEMTYPE_UNKNOWN); SWY_ERR_INVALID_PARAM for NULL
 *         @p context or @p type.
 */
swy_status_t swy_mem_detect(swy_context_h context, const void* address, size_t length,
                            swy_memtype_t* type);

/**
 * @brief Copy @p length bytes between any two memory types, synchronously: a staging helper
 *        for applications and tests (host↔device through the type's plugin; device↔device
 *        through a host bounce buffer). The ranges must not overlap unless both are host.
 * @param dst_type, src_type  the buffers' types; SWY_MEMTYPE_UNKNOWN detects them.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM if a buffer is not inside one allocation of its type,
 *         its type is not enabled, or its type cannot be detected; SWY_ERR_UNSUPPORTED if the
 *         memory cannot be copied by the CPU (a dma-buf its exporter does not let us map);
 *         SWY_ERR_IO for a driver failure.
 */
swy_status_t swy_mem_copy(swy_context_h context, void* dst, swy_memtype_t dst_type, const void* src,
                          swy_memtype_t src_type, size_t length);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_MEMTYPE_H */
