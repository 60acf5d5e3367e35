// dmabuf plugin with fake exporters: a memfd (mmap allowed) and fds that refuse mmap.
#include "memtypes/dmabuf/dmabuf_plugin.h"
#include "memtypes/registry.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace swy;
using namespace swy::mem;

namespace {

class Dmabuf : public ::testing::Test {
protected:
    void SetUp() override {
        common::Config config;
        std::string why;
        ASSERT_EQ(MemTypeRegistry::create({"dmabuf"}, config, &reg_, &why), Status::kOk) << why;
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    }
    // A memfd standing in for a dma-buf whose exporter allows mmap.
    int mappable_exporter(size_t size, unsigned char seed) {
        int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
        EXPECT_GE(fd, 0);
        std::vector<unsigned char> data(size);
        for (size_t i = 0; i < size; ++i)
            data[i] = static_cast<unsigned char>(i + seed);
        EXPECT_EQ(pwrite(fd, data.data(), size, 0), static_cast<ssize_t>(size));
        return fd;
    }
    std::unique_ptr<MemTypeRegistry> reg_;
    size_t page_ = 4096;
};

}  // namespace

TEST_F(Dmabuf, MappableExporterIsCpuAccessibleAndCopiesUseTheMapping) {
    const size_t size = 4 * page_;
    int fd = mappable_exporter(size, 1);
    void* addr = nullptr;
    ASSERT_EQ(reg_->map_dmabuf(fd, page_, 2 * page_, &addr), Status::kOk);
    close(fd);  // the registry keeps its own dup
    MemRange r;
    ASSERT_EQ(reg_->detect(addr, 2 * page_, &r), MemType::kDmabuf);
    EXPECT_TRUE(r.cpu_accessible);
    EXPECT_EQ(r.base, reinterpret_cast<uintptr_t>(addr));
    EXPECT_EQ(r.length, 2 * page_);
    // Edges.
    EXPECT_EQ(reg_->detect(static_cast<char*>(addr) + 2 * page_ - 1, 1), MemType::kDmabuf);
    EXPECT_NE(reg_->detect(static_cast<char*>(addr) + 2 * page_, 1), MemType::kDmabuf);
    EXPECT_NE(reg_->detect(static_cast<char*>(addr) - 1, 1), MemType::kDmabuf);
    EXPECT_EQ(reg_->detect(static_cast<char*>(addr) - 1, 2), MemType::kUnknown);

    std::vector<unsigned char> out(100);
    ASSERT_EQ(reg_->copy_to_host(MemType::kDmabuf, out.data(), addr, out.size()), Status::kOk);
    EXPECT_EQ(out[0], static_cast<unsigned char>(page_ + 1)) << "offset honoured";
    const char msg[] = "written through the plugin";
    ASSERT_EQ(
        reg_->copy_from_host(MemType::kUnknown, static_cast<char*>(addr) + 10, msg, sizeof msg),
        Status::kOk);
    EXPECT_EQ(std::memcmp(static_cast<char*>(addr) + 10, msg, sizeof msg), 0) << "CPU may read it";

    // Export hands on a dup of the fd with the offset into the dma-buf.
    int efd = -1;
    uint64_t off = 0;
    ASSERT_EQ(reg_->export_dmabuf(static_cast<char*>(addr) + 10, sizeof msg, &efd, &off),
              Status::kOk);
    EXPECT_EQ(off, page_ + 10);
    char back[sizeof msg];
    ASSERT_EQ(pread(efd, back, sizeof back, static_cast<off_t>(off)),
              static_cast<ssize_t>(sizeof back));
    EXPECT_STREQ(back, msg);
    close(efd);

    EXPECT_EQ(reg_->unmap(addr), Status::kOk);
    EXPECT_EQ(reg_->detect(addr, 1), MemType::kHost);
    EXPECT_EQ(reg_->unmap(addr), Status::kInvalidParam);
}

TEST_F(Dmabuf, UnalignedOffsetIsMappedAtTheRightByte) {
    int fd = mappable_exporter(2 * page_, 0);
    void* addr = nullptr;
    ASSERT_EQ(reg_->map_dmabuf(fd, 100, 50, &addr), Status::kOk);
    unsigned char b = 0;
    ASSERT_EQ(reg_->copy_to_host(MemType::kDmabuf, &b, addr, 1), Status::kOk);
    EXPECT_EQ(b, 100);
    EXPECT_EQ(reg_->copy_to_host(MemType::kDmabuf, &b, static_cast<char*>(addr) + 50, 1),
              Status::kInvalidParam);
    EXPECT_EQ(reg_->unmap(addr), Status::kOk);
    close(fd);
}

TEST_F(Dmabuf, ExporterWithoutMmapIsNotCpuAccessibleAndCopiesAreUnsupported) {
    // Two fake exporters that refuse mmap: a pipe, and a file opened write-only.
    int pipefd[2];
    ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    char path[] = "/tmp/swy-dmabuf-XXXXXX";
    int tmp = mkstemp(path);
    ASSERT_GE(tmp, 0);
    ASSERT_EQ(ftruncate(tmp, static_cast<off_t>(page_)), 0);
    int wronly = open(path, O_WRONLY | O_CLOEXEC);
    ASSERT_GE(wronly, 0);
    unlink(path);
    close(tmp);
    for (int fd : {pipefd[0], wronly}) {
        SCOPED_TRACE(fd == wronly ? "O_WRONLY file" : "pipe");
        void* addr = nullptr;
        ASSERT_EQ(reg_->map_dmabuf(fd, 0, page_, &addr), Status::kOk);
        MemRange r;
        ASSERT_EQ(reg_->detect(addr, page_, &r), MemType::kDmabuf);
        EXPECT_FALSE(r.cpu_accessible);
        char b[16];
        EXPECT_EQ(reg_->copy_to_host(MemType::kDmabuf, b, addr, sizeof b), Status::kUnsupported);
        EXPECT_EQ(reg_->copy_from_host(MemType::kDmabuf, addr, b, sizeof b), Status::kUnsupported);
        int efd = -1;
        uint64_t off = 1;
        EXPECT_EQ(reg_->export_dmabuf(addr, page_, &efd, &off), Status::kOk)
            << "export still works";
        EXPECT_EQ(off, 0u);
        close(efd);
        EXPECT_EQ(reg_->unmap(addr), Status::kOk);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    close(wronly);
}

TEST_F(Dmabuf, NoMmapRangeFaultsOnCpuAccess) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    int pipefd[2];
    ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    void* addr = nullptr;
    ASSERT_EQ(reg_->map_dmabuf(pipefd[0], 0, page_, &addr), Status::kOk);
    EXPECT_DEATH(
        {
            volatile char c = *static_cast<volatile char*>(addr);
            (void)c;
        },
        "");
    EXPECT_EQ(reg_->unmap(addr), Status::kOk);
    close(pipefd[0]);
    close(pipefd[1]);
}

TEST_F(Dmabuf, BadArgumentsAreRefused) {
    void* addr = nullptr;
    EXPECT_EQ(reg_->map_dmabuf(-1, 0, page_, &addr), Status::kInvalidParam);
    EXPECT_EQ(reg_->map_dmabuf(12345, 0, page_, &addr), Status::kInvalidParam) << "closed fd";
    int fd = mappable_exporter(page_, 0);
    EXPECT_EQ(reg_->map_dmabuf(fd, 0, 0, &addr), Status::kInvalidParam);
    close(fd);
    int x = 0;
    EXPECT_EQ(reg_->unmap(&x), Status::kInvalidParam);
    int efd;
    uint64_t off;
    EXPECT_EQ(reg_->export_dmabuf(&x, sizeof x, &efd, &off), Status::kUnsupported) << "host memory";
}

TEST(DmabufRegistry, NotLoadedMeansUnsupported) {
    common::Config config;
    std::unique_ptr<MemTypeRegistry> reg;
    ASSERT_EQ(MemTypeRegistry::create({"host"}, config, &reg, nullptr), Status::kOk);
    void* addr = nullptr;
    EXPECT_EQ(reg->map_dmabuf(0, 0, 4096, &addr), Status::kUnsupported);
}
