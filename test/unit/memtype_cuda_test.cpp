// CUDA plugin: loads libcuda.so.1 with dlopen; without a driver it must say so clearly.
#include "memtypes/cuda/cuda_plugin.h"
#include "memtypes/registry.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

using namespace swy;
using namespace swy::mem;

#if __has_include("/usr/local/cuda/include/cuda.h")
// Our own declarations of the driver ABI must match the real header.
#include "/usr/local/cuda/include/cuda.h"
static_assert(cudrv::kSuccess == CUDA_SUCCESS && cudrv::kErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(cudrv::kPointerAttrContext == CU_POINTER_ATTRIBUTE_CONTEXT &&
              cudrv::kPointerAttrMemoryType == CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
              cudrv::kPointerAttrIsManaged == CU_POINTER_ATTRIBUTE_IS_MANAGED &&
              cudrv::kPointerAttrDeviceOrdinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL &&
              cudrv::kPointerAttrRangeStartAddr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
              cudrv::kPointerAttrRangeSize == CU_POINTER_ATTRIBUTE_RANGE_SIZE);
static_assert(cudrv::kMemoryTypeHost == CU_MEMORYTYPE_HOST &&
              cudrv::kMemoryTypeDevice == CU_MEMORYTYPE_DEVICE &&
              cudrv::kMemoryTypeArray == CU_MEMORYTYPE_ARRAY &&
              cudrv::kMemoryTypeUnified == CU_MEMORYTYPE_UNIFIED);
static_assert(cudrv::kDevAttrConcurrentManagedAccess ==
                  CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS &&
              cudrv::kDevAttrDmaBufSupported == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
static_assert(cudrv::kMemRangeHandleTypeDmaBufFd == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
static_assert(cudrv::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(sizeof(cudrv::DevicePtr) == sizeof(CUdeviceptr) &&
              sizeof(cudrv::Device) == sizeof(CUdevice));
// Our entry-point typedefs use int for CUresult and the attribute enums (same size and
// calling convention on every supported ABI) and opaque pointers for the handles.
static_assert(sizeof(CUpointer_attribute) == sizeof(int) && sizeof(CUresult) == sizeof(int) &&
              sizeof(CUdevice_attribute) == sizeof(int) &&
              sizeof(CUmemRangeHandleType) == sizeof(int) &&
              sizeof(CUstream) == sizeof(cudrv::Stream) &&
              sizeof(CUcontext) == sizeof(cudrv::Context));
#endif

namespace {
bool driver_present() {
    void* lib = dlopen(kCudaDriverLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    dlclose(lib);
    return true;
}
}  // namespace

TEST(CudaPlugin, WithoutDriverReportsUnavailableClearly) {
    if (driver_present()) GTEST_SKIP() << "a CUDA driver is installed here";
    MemTypePlugin p{};
    std::string why;
    EXPECT_EQ(create_cuda_plugin(kCudaDriverLibrary, &p, &why), Status::kUnsupported);
    EXPECT_EQ(why, "cuda: libcuda.so.1 not found (no NVIDIA driver)");
}

TEST(CudaPlugin, ALibraryThatIsNotTheDriverIsRejected) {
    MemTypePlugin p{};
    std::string why;
    EXPECT_EQ(create_cuda_plugin("libc.so.6", &p, &why), Status::kUnsupported);
    EXPECT_NE(why.find("lacks cuInit"), std::string::npos) << why;
}

TEST(CudaPlugin, RegistryContinuesWithoutIt) {
    common::Config config;
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    ASSERT_EQ(MemTypeRegistry::create({"host", "simdev", "cuda"}, config, &reg, &why), Status::kOk)
        << why;
    if (reg->loaded(MemType::kCuda)) GTEST_SKIP() << "CUDA is usable here";
    EXPECT_NE(reg->cuda_unavailable_reason().find("cuda:"), std::string::npos);
    EXPECT_TRUE(reg->loaded(MemType::kSimdev));
    EXPECT_FALSE(reg->attr(MemType::kCuda).cpu_accessible);
    int x = 0;
    EXPECT_EQ(reg->detect(&x, sizeof x), MemType::kHost);
    void* p = nullptr;
    EXPECT_EQ(reg->allocate(MemType::kCuda, 64, &p), Status::kUnsupported);
}

// Runs only where a GPU and driver exist: device memory is detected, copied and exported.
TEST(CudaPlugin, DeviceMemoryRoundTripOnARealGpu) {
    MemTypePlugin p{};
    std::string why;
    if (create_cuda_plugin(kCudaDriverLibrary, &p, &why) != Status::kOk) {
        GTEST_SKIP() << why;
    }
    void* d = nullptr;
    ASSERT_EQ(p.allocate(p.state, 1 << 20, &d), Status::kOk);
    MemRange r;
    ASSERT_EQ(p.detect(p.state, static_cast<char*>(d) + 100, 10, &r), Status::kOk);
    EXPECT_EQ(r.type, MemType::kCuda);
    EXPECT_EQ(r.base, reinterpret_cast<uintptr_t>(d));
    EXPECT_GE(r.length, size_t{1} << 20);
    EXPECT_FALSE(r.cpu_accessible);
    std::vector<char> host(1 << 20);
    EXPECT_EQ(p.detect(p.state, host.data(), host.size(), &r), Status::kNotFound);
    for (size_t i = 0; i < host.size(); ++i)
        host[i] = static_cast<char>(i * 13);
    ASSERT_EQ(p.copy_from_host(p.state, d, host.data(), host.size()), Status::kOk);
    std::vector<char> back(host.size());
    uint64_t token = 0;
    ASSERT_EQ(p.copy_to_host_async(p.state, back.data(), d, back.size(), &token),
              Status::kInProgress);
    Status s;
    while ((s = p.test(p.state, token)) == Status::kInProgress) {}
    ASSERT_EQ(s, Status::kOk);
    EXPECT_EQ(host, back);
    MemTypeAttr a;
    p.query(p.state, &a);
    if (a.dmabuf_capable) {
        int fd = -1;
        uint64_t off = 0;
        EXPECT_EQ(p.export_dmabuf(p.state, static_cast<char*>(d) + 4096, 4096, &fd, &off),
                  Status::kOk);
        if (fd >= 0) close(fd);
    }
    EXPECT_EQ(p.release(p.state, d), Status::kOk);
    p.destroy(p.state);
}
