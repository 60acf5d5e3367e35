// simdev plugin: memory the CPU cannot touch, copies through the plugin's private alias.
#include "memtypes/simdev/simdev_plugin.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

using namespace swy;
using namespace swy::mem;

namespace {

class Simdev : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(create_simdev_plugin(options_, &p_, nullptr), Status::kOk); }
    void TearDown() override { p_.destroy(p_.state); }
    void* alloc(size_t n) {
        void* ptr = nullptr;
        EXPECT_EQ(p_.allocate(p_.state, n, &ptr), Status::kOk);
        return ptr;
    }
    SimdevOptions options_;
    MemTypePlugin p_{};
};

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>(i * 7 + seed);
    return v;
}

}  // namespace

TEST_F(Simdev, CpuAccessToDeviceMemoryCrashes) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    void* d = alloc(4096);
    EXPECT_DEATH(
        {
            volatile char c = *static_cast<volatile char*>(d);
            (void)c;
        },
        "");
    EXPECT_DEATH(*static_cast<volatile char*>(d) = 1, "");
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
}

TEST_F(Simdev, CopiesRoundTripBytesExactly) {
    const size_t n = 3 * 4096 + 123;
    void* d = alloc(n);
    const auto in = pattern(n, 3);
    std::vector<unsigned char> out(n, 0);
    ASSERT_EQ(p_.copy_from_host(p_.state, d, in.data(), n), Status::kOk);
    ASSERT_EQ(p_.copy_to_host(p_.state, out.data(), d, n), Status::kOk);
    EXPECT_EQ(in, out);
    // A piece in the middle, at an odd offset.
    std::vector<unsigned char> piece(1000, 0);
    ASSERT_EQ(p_.copy_to_host(p_.state, piece.data(), static_cast<char*>(d) + 4097, 1000),
              Status::kOk);
    EXPECT_EQ(std::memcmp(piece.data(), in.data() + 4097, 1000), 0);
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
}

TEST_F(Simdev, CopiesOutsideAnAllocationAreRefused) {
    void* d = alloc(100);
    char buf[200];
    EXPECT_EQ(p_.copy_to_host(p_.state, buf, d, 101), Status::kInvalidParam);
    EXPECT_EQ(p_.copy_from_host(p_.state, static_cast<char*>(d) + 50, buf, 51),
              Status::kInvalidParam);
    EXPECT_EQ(p_.copy_to_host(p_.state, buf, buf, 1), Status::kInvalidParam) << "host pointer";
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
}

TEST_F(Simdev, DetectKnowsItsAllocationsExactly) {
    void* d = alloc(8192);
    MemRange r;
    EXPECT_EQ(p_.detect(p_.state, static_cast<char*>(d) + 8191, 1, &r), Status::kOk);
    EXPECT_EQ(r.type, MemType::kSimdev);
    EXPECT_EQ(r.base, reinterpret_cast<uintptr_t>(d));
    EXPECT_EQ(r.length, 8192u);
    int x;
    EXPECT_EQ(p_.detect(p_.state, &x, sizeof x, &r), Status::kNotFound);
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
    EXPECT_EQ(p_.detect(p_.state, d, 1, &r), Status::kNotFound);
}

TEST_F(Simdev, AsyncCopiesCompleteInTestInOrder) {
    void* d = alloc(4096);
    const auto in = pattern(4096, 9);
    std::vector<unsigned char> out(4096, 0);
    uint64_t t1 = 0, t2 = 0;
    ASSERT_EQ(p_.copy_from_host_async(p_.state, d, in.data(), 4096, &t1), Status::kInProgress);
    ASSERT_EQ(p_.copy_to_host_async(p_.state, out.data(), d, 4096, &t2), Status::kInProgress);
    EXPECT_NE(t1, 0u);
    EXPECT_GT(t2, t1);
    EXPECT_EQ(out[1], 0) << "nothing happens before test()";
    Status s;
    while ((s = p_.test(p_.state, t2)) == Status::kInProgress) {}
    ASSERT_EQ(s, Status::kOk);
    EXPECT_EQ(p_.test(p_.state, t1), Status::kOk) << "earlier copies complete first";
    EXPECT_EQ(in, out);
    EXPECT_EQ(p_.test(p_.state, t2 + 100), Status::kInvalidParam);
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
}

TEST_F(Simdev, ReleaseFinishesPendingCopies) {
    void* d = alloc(4096);
    const auto in = pattern(4096, 1);
    std::vector<unsigned char> out(4096, 0);
    uint64_t t = 0;
    ASSERT_EQ(p_.copy_from_host_async(p_.state, d, in.data(), 4096, &t), Status::kInProgress);
    ASSERT_EQ(p_.copy_to_host_async(p_.state, out.data(), d, 4096, &t), Status::kInProgress);
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
    EXPECT_EQ(in, out);
    EXPECT_EQ(p_.test(p_.state, t), Status::kOk);
}

TEST_F(Simdev, ExportGivesTheBackingFdAndOffset) {
    void* d = alloc(8192);
    const auto in = pattern(8192, 5);
    ASSERT_EQ(p_.copy_from_host(p_.state, d, in.data(), in.size()), Status::kOk);
    int fd = -1;
    uint64_t off = 0;
    ASSERT_EQ(p_.export_dmabuf(p_.state, static_cast<char*>(d) + 4096, 100, &fd, &off),
              Status::kOk);
    EXPECT_EQ(off, 4096u);
    unsigned char b[100];
    ASSERT_EQ(pread(fd, b, sizeof b, static_cast<off_t>(off)), 100);
    EXPECT_EQ(std::memcmp(b, in.data() + 4096, 100), 0);
    close(fd);
    EXPECT_EQ(p_.release(p_.state, d), Status::kOk);
}

TEST(SimdevThrottle, CopiesTakeAsLongAsBandwidthAndLatencySay) {
    SimdevOptions o;
    o.throttle = true;
    o.bandwidth_Bps = 1e9;  // 1 MB takes 1 ms
    o.latency_s = 100e-6;
    MemTypePlugin p{};
    ASSERT_EQ(create_simdev_plugin(o, &p, nullptr), Status::kOk);
    MemTypeAttr a;
    p.query(p.state, &a);
    EXPECT_FALSE(a.cpu_accessible);
    EXPECT_DOUBLE_EQ(a.copy_bw_Bps, 1e9);
    void* d = nullptr;
    ASSERT_EQ(p.allocate(p.state, 1 << 20, &d), Status::kOk);
    std::vector<char> buf(1 << 20, 1);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(p.copy_from_host(p.state, d, buf.data(), buf.size()), Status::kOk);
    const auto dt = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(dt, std::chrono::microseconds(1048 + 100));
    // Async: not done until its due time.
    uint64_t t = 0;
    ASSERT_EQ(p.copy_to_host_async(p.state, buf.data(), d, buf.size(), &t), Status::kInProgress);
    EXPECT_EQ(p.test(p.state, t), Status::kInProgress);
    const auto t1 = std::chrono::steady_clock::now();
    while (p.test(p.state, t) == Status::kInProgress) {}
    EXPECT_GE(std::chrono::steady_clock::now() - t1, std::chrono::microseconds(500));
    EXPECT_EQ(p.release(p.state, d), Status::kOk);
    p.destroy(p.state);
}

TEST(SimdevOptions, RejectsNonPositiveBandwidth) {
    SimdevOptions o;
    o.bandwidth_Bps = -1;
    MemTypePlugin p{};
    std::string why;
    EXPECT_EQ(create_simdev_plugin(o, &p, &why), Status::kInvalidParam);
    EXPECT_FALSE(why.empty());
}
