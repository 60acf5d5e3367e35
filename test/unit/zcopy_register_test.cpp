// How a rendezvous buffer is registered for RDMA (protocols/rndv/zcopy_register.h), with a fake lane and a
// fake dma-buf exporter: which path each memory type takes, the exact arguments of the dma-buf
// registration (fd, offset, iova, access), that the exported fd is closed, and the reasons
// given when RDMA cannot reach the memory (rxe: no dma-buf MRs).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "protocols/rndv/zcopy_register.h"

using swy::Status;
using swy::mem::MemType;
using swy::mem::MemTypeAttr;
using swy::proto::rndv::DmabufExporter;
using swy::proto::rndv::register_zcopy_buffer;

namespace {

class FakeRegistration final : public swy::tl::MemoryRegistration {
public:
    uint32_t lkey() const override { return 1; }
    uint32_t rkey() const override { return 2; }
    uint64_t address() const override { return 0; }
    size_t length() const override { return 0; }
};

/// Records the calls a lane gets.
class FakeLane final : public swy::tl::ZcopyLane {
public:
    int host_calls = 0, dmabuf_calls = 0;
    const void* host_address = nullptr;
    int fd = -2;
    bool fd_was_open = false;
    uint64_t offset = 0, iova = 0;
    size_t length = 0;
    unsigned access = 0;
    Status result = Status::kOk;

    Status register_memory(const void* address, size_t n, unsigned a,
                           std::unique_ptr<swy::tl::MemoryRegistration>* out,
                           std::string*) override {
        ++host_calls;
        host_address = address;
        length = n;
        access = a;
        out->reset(new FakeRegistration);
        return result;
    }
    Status register_dmabuf(int f, uint64_t off, size_t n, uint64_t va, unsigned a,
                           std::unique_ptr<swy::tl::MemoryRegistration>* out,
                           std::string* why) override {
        ++dmabuf_calls;
        fd = f;
        fd_was_open = fcntl(f, F_GETFD) != -1;
        offset = off;
        length = n;
        iova = va;
        access = a;
        if (result != Status::kOk) {
            *why = "fake: refused";
            return result;
        }
        out->reset(new FakeRegistration);
        return Status::kOk;
    }
    bool device_memory = false;  ///< reports cap::kDeviceMemory (dma-buf MRs)
    uint32_t caps() const override {
        return swy::tl::cap::kRemoteKeys | (device_memory ? swy::tl::cap::kDeviceMemory : 0);
    }
    size_t max_zcopy() const override { return SIZE_MAX; }
    Status get_zcopy(void*, const swy::tl::MemoryRegistration*, swy::tl::RemoteKey, size_t,
                     const swy::tl::ZcopyCompletion&) override {
        return Status::kUnsupported;
    }
    Status put_zcopy(const void*, const swy::tl::MemoryRegistration*, swy::tl::RemoteKey, size_t,
                     const swy::tl::ZcopyCompletion&) override {
        return Status::kUnsupported;
    }
};

/// Exports a real (memfd) descriptor so the test can see it being closed.
class FakeExporter final : public DmabufExporter {
public:
    mutable int calls = 0;
    mutable int last_fd = -1;
    Status result = Status::kOk;
    uint64_t offset = 0x1230;
    Status export_dmabuf(const void*, size_t, int* fd, uint64_t* off) const override {
        ++calls;
        if (result != Status::kOk) return result;
        last_fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
        *fd = last_fd;
        *off = offset;
        return Status::kOk;
    }
};

swy::tl::LaneAttr lane_attr(bool dmabuf) {
    swy::tl::LaneAttr a;
    a.caps = swy::tl::cap::kGetZcopy | swy::tl::cap::kPutZcopy | swy::tl::cap::kRemoteKeys |
             (dmabuf ? swy::tl::cap::kDeviceMemory : 0);
    return a;
}

/// register_zcopy_buffer on @p lane, which reports dma-buf MRs as @p attr says.
Status register_for_rdma(FakeLane& lane, const swy::tl::LaneAttr& attr,
                         const DmabufExporter& exporter, const void* buffer, size_t length,
                         MemType type, bool cpu_buffer, unsigned access,
                         std::unique_ptr<swy::tl::MemoryRegistration>* out, std::string* why) {
    lane.device_memory = (attr.caps & swy::tl::cap::kDeviceMemory) != 0;
    return register_zcopy_buffer(lane, exporter, buffer, length, type, cpu_buffer, access, out,
                                 why);
}

}  // namespace

TEST(RdmaRegister, DmabufMemoryIsRegisteredFromItsExportAtItsOwnAddress) {
    for (MemType type : {MemType::kDmabuf, MemType::kCuda}) {
        FakeLane lane;
        FakeExporter exporter;
        std::unique_ptr<swy::tl::MemoryRegistration> reg;
        std::string why;
        auto* buffer = reinterpret_cast<void*>(uintptr_t{0x7f0012345678});
        ASSERT_EQ(register_for_rdma(lane, lane_attr(true), exporter, buffer, 1 << 20, type, false,
                                    swy::tl::kZcopyRemoteRead, &reg, &why),
                  Status::kOk)
            << why;
        EXPECT_NE(reg, nullptr);
        EXPECT_EQ(lane.dmabuf_calls, 1);
        EXPECT_EQ(lane.host_calls, 0);
        EXPECT_EQ(lane.fd, exporter.last_fd);
        EXPECT_TRUE(lane.fd_was_open);
        EXPECT_EQ(lane.offset, 0x1230u) << "the offset into the dma-buf, as exported";
        EXPECT_EQ(lane.iova, 0x7f0012345678u) << "iova = the buffer's virtual address";
        EXPECT_EQ(lane.length, size_t{1} << 20);
        EXPECT_EQ(lane.access, unsigned{swy::tl::kZcopyRemoteRead});
        EXPECT_EQ(fcntl(exporter.last_fd, F_GETFD), -1) << "the exported fd was not closed";
    }
}

TEST(RdmaRegister, DeviceWithoutDmabufMrsRefusesDeviceMemoryWithAReason) {
    FakeLane lane;
    FakeExporter exporter;
    std::unique_ptr<swy::tl::MemoryRegistration> reg;
    std::string why;
    int x = 0;
    EXPECT_EQ(register_for_rdma(lane, lane_attr(false), exporter, &x, 4, MemType::kDmabuf, false,
                                swy::tl::kZcopyLocalWrite, &reg, &why),
              Status::kUnsupported);
    EXPECT_EQ(reg, nullptr);
    EXPECT_EQ(exporter.calls, 0) << "nothing to export for: the lane cannot take it";
    EXPECT_EQ(lane.dmabuf_calls + lane.host_calls, 0);
    EXPECT_NE(why.find("no dma-buf MRs"), std::string::npos) << why;
}

TEST(RdmaRegister, SimdevIsNeverRegisteredAsADmabuf) {
    // simdev exports a memfd, not a dma-buf: never handed to ibv_reg_dmabuf_mr.
    FakeLane lane;
    FakeExporter exporter;
    std::unique_ptr<swy::tl::MemoryRegistration> reg;
    std::string why;
    int x = 0;
    EXPECT_EQ(register_for_rdma(lane, lane_attr(true), exporter, &x, 4, MemType::kSimdev, false,
                                swy::tl::kZcopyLocalWrite, &reg, &why),
              Status::kUnsupported);
    EXPECT_EQ(exporter.calls, 0);
    EXPECT_EQ(lane.dmabuf_calls + lane.host_calls, 0);
    MemTypeAttr capable;
    capable.dmabuf_capable = true;
    EXPECT_FALSE(
        swy::proto::rndv::zcopy_reaches_device_memory(lane_attr(true), MemType::kSimdev, capable));
    EXPECT_TRUE(
        swy::proto::rndv::zcopy_reaches_device_memory(lane_attr(true), MemType::kDmabuf, capable));
    EXPECT_TRUE(
        swy::proto::rndv::zcopy_reaches_device_memory(lane_attr(true), MemType::kCuda, capable));
    EXPECT_FALSE(
        swy::proto::rndv::zcopy_reaches_device_memory(lane_attr(false), MemType::kCuda, capable))
        << "rxe: no dma-buf MRs, so the table keeps the staged pipeline";
    MemTypeAttr not_exported;  // e.g. CUDA on a driver without dma-buf export
    EXPECT_FALSE(swy::proto::rndv::zcopy_reaches_device_memory(lane_attr(true), MemType::kCuda,
                                                               not_exported));
}

TEST(RdmaRegister, HostMemoryUsesThePlainRegistration) {
    FakeLane lane;
    FakeExporter exporter;
    std::unique_ptr<swy::tl::MemoryRegistration> reg;
    std::string why;
    char buffer[64];
    for (bool dmabuf : {false, true}) {
        ASSERT_EQ(register_for_rdma(lane, lane_attr(dmabuf), exporter, buffer, sizeof(buffer),
                                    MemType::kHost, true, swy::tl::kZcopyRemoteWrite, &reg, &why),
                  Status::kOk);
    }
    EXPECT_EQ(lane.host_calls, 2);
    EXPECT_EQ(lane.host_address, buffer);
    EXPECT_EQ(lane.dmabuf_calls, 0);
    EXPECT_EQ(exporter.calls, 0);
}

TEST(RdmaRegister, FailedExportOrRegistrationIsPassedOnAndClosesTheFd) {
    FakeLane lane;
    FakeExporter exporter;
    std::unique_ptr<swy::tl::MemoryRegistration> reg;
    std::string why;
    int x = 0;
    exporter.result = Status::kUnsupported;  // e.g. a CUDA driver without dma-buf export
    EXPECT_EQ(register_for_rdma(lane, lane_attr(true), exporter, &x, 4, MemType::kCuda, false,
                                swy::tl::kZcopyLocalWrite, &reg, &why),
              Status::kUnsupported);
    EXPECT_NE(why.find("no dma-buf export"), std::string::npos) << why;
    EXPECT_EQ(lane.dmabuf_calls, 0);
    // A CPU-mappable dma-buf whose export fails still has the host path.
    EXPECT_EQ(register_for_rdma(lane, lane_attr(true), exporter, &x, 4, MemType::kDmabuf, true,
                                swy::tl::kZcopyLocalWrite, &reg, &why),
              Status::kOk);
    EXPECT_EQ(lane.host_calls, 1);
    exporter.result = Status::kOk;
    lane.result = Status::kIoError;
    EXPECT_EQ(register_for_rdma(lane, lane_attr(true), exporter, &x, 4, MemType::kDmabuf, false,
                                swy::tl::kZcopyLocalWrite, &reg, &why),
              Status::kIoError);
    EXPECT_EQ(why, "fake: refused");
    EXPECT_EQ(fcntl(exporter.last_fd, F_GETFD), -1) << "fd leaked on a failed registration";
}
