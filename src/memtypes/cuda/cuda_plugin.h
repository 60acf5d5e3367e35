// CUDA memory plugin: device and managed memory allocated by the application through CUDA.
//
// The driver is loaded with dlopen("libcuda.so.1") when the registry is created, so the
// library builds and runs on machines without CUDA; without a driver the plugin reports
// itself unavailable with a clear message and is simply not loaded.
//
// We declare the few driver-API types, constants and entry points we use ourselves (namespace
// cudrv below), with the signatures documented in cuda.h, instead of including cuda.h: the
// build sets no CUDA include path (SWY_WITH_CUDA is off by default and the CMake files are not
// ours to change), and the driver ABI of these functions is stable by NVIDIA's versioning
// rule (entry points that changed got a _v2 name, which we dlsym explicitly). When cuda.h is
// on the include path anyway, cuda_plugin.cpp static_asserts every constant against it, and
// the unit test does the same against /usr/local/cuda/include/cuda.h when present.
//
// Detection: cuPointerGetAttributes (MEMORY_TYPE, DEVICE_ORDINAL, IS_MANAGED,
// RANGE_START_ADDR, RANGE_SIZE, CONTEXT). It answers definitively for foreign pointers
// (CUDA_SUCCESS with memory type 0), so a miss means host. Managed memory is reported as
// CPU-accessible only on devices with CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS.
// Copies run in the pointer's context (made current for the call, then restored); async
// copies use one plugin-owned stream per device, tested with cuStreamQuery.
// Export: cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) when the
// device reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "memtypes/memtype.h"

namespace swy::mem {

namespace cudrv {
using Result = int;                    // CUresult
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit builds)
using Device = int;                    // CUdevice
using Context = struct CtxSt*;         // CUcontext
using Stream = struct StreamSt*;       // CUstream

inline constexpr Result kSuccess = 0;          // CUDA_SUCCESS
inline constexpr Result kErrorNotReady = 600;  // CUDA_ERROR_NOT_READY

// CUpointer_attribute
inline constexpr int kPointerAttrContext = 1;
inline constexpr int kPointerAttrMemoryType = 2;
inline constexpr int kPointerAttrIsManaged = 8;
inline constexpr int kPointerAttrDeviceOrdinal = 9;
inline constexpr int kPointerAttrRangeStartAddr = 11;
inline constexpr int kPointerAttrRangeSize = 12;
// CUmemorytype
inline constexpr unsigned kMemoryTypeHost = 1;
inline constexpr unsigned kMemoryTypeDevice = 2;
inline constexpr unsigned kMemoryTypeArray = 3;
inline constexpr unsigned kMemoryTypeUnified = 4;
// CUdevice_attribute
inline constexpr int kDevAttrConcurrentManagedAccess = 89;
inline constexpr int kDevAttrDmaBufSupported = 124;
// CUmemRangeHandleType
inline constexpr int kMemRangeHandleTypeDmaBufFd = 1;
// CUstream_flags
inline constexpr unsigned kStreamNonBlocking = 1;

// Entry points, as dlsym'ed (name in the comment).
using InitFn = Result (*)(unsigned);                         // cuInit
using GetErrorStringFn = Result (*)(Result, const char**);   // cuGetErrorString
using DeviceGetCountFn = Result (*)(int*);                   // cuDeviceGetCount
using DeviceGetFn = Result (*)(Device*, int);                // cuDeviceGet
using DeviceGetAttributeFn = Result (*)(int*, int, Device);  // cuDeviceGetAttribute
using PrimaryCtxRetainFn = Result (*)(Context*, Device);     // cuDevicePrimaryCtxRetain
using PrimaryCtxReleaseFn = Result (*)(Device);              // cuDevicePrimaryCtxRelease_v2
using CtxSetCurrentFn = Result (*)(Context);                 // cuCtxSetCurrent
using CtxGetCurrentFn = Result (*)(Context*);                // cuCtxGetCurrent
using PointerGetAttributesFn = Result (*)(unsigned, int*, void**,
                                          DevicePtr);                    // cuPointerGetAttributes
using MemcpyDtoHFn = Result (*)(void*, DevicePtr, size_t);               // cuMemcpyDtoH_v2
using MemcpyHtoDFn = Result (*)(DevicePtr, const void*, size_t);         // cuMemcpyHtoD_v2
using MemcpyDtoHAsyncFn = Result (*)(void*, DevicePtr, size_t, Stream);  // cuMemcpyDtoHAsync_v2
using MemcpyHtoDAsyncFn = Result (*)(DevicePtr, const void*, size_t,
                                     Stream);          // cuMemcpyHtoDAsync_v2
using StreamCreateFn = Result (*)(Stream*, unsigned);  // cuStreamCreate
using StreamQueryFn = Result (*)(Stream);              // cuStreamQuery
using StreamDestroyFn = Result (*)(Stream);            // cuStreamDestroy_v2
using MemGetHandleForAddressRangeFn =
    Result (*)(void*, DevicePtr, size_t, int,
               unsigned long long);                 // cuMemGetHandleForAddressRange
using MemAllocFn = Result (*)(DevicePtr*, size_t);  // cuMemAlloc_v2
using MemFreeFn = Result (*)(DevicePtr);            // cuMemFree_v2
}  // namespace cudrv

/// Default driver library.
inline constexpr const char* kCudaDriverLibrary = "libcuda.so.1";

/// Load the driver (@p library, normally kCudaDriverLibrary), initialise it and fill @p out.
/// kUnsupported with @p why when there is no driver ("cuda: libcuda.so.1 not found (no
/// NVIDIA driver)"), when it lacks a required entry point, when cuInit fails, or when it
/// reports no device. kNoMemory.
Status create_cuda_plugin(const char* library, MemTypePlugin* out, std::string* why);

}  // namespace swy::mem
