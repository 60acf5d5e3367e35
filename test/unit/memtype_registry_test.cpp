// MemTypeRegistry: plugin selection, detection policy and cache coherence under churn.
#include "memtypes/registry.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <switchyard/memtype.h>
#include <switchyard/switchyard.h>

using namespace swy;
using namespace swy::mem;

namespace {

std::unique_ptr<MemTypeRegistry> make(std::vector<std::string> names) {
    common::Config config;
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    EXPECT_EQ(MemTypeRegistry::create(names, config, &reg, &why), Status::kOk) << why;
    return reg;
}

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
const char* at(const void* p, size_t off) { return static_cast<const char*>(p) + off; }
const char* before(const void* p) { return reinterpret_cast<const char*>(addr(p) - 1); }

}  // namespace

TEST(MemTypeRegistry, HostOnlyDetectsEverythingAsHostWithoutLookup) {
    auto reg = make({"host"});
    ASSERT_TRUE(reg);
    EXPECT_FALSE(reg->device_plugins_loaded());
    int x = 0;
    MemRange r;
    EXPECT_EQ(reg->detect(&x, sizeof x, &r), MemType::kHost);
    EXPECT_EQ(r.type, MemType::kHost);
    EXPECT_TRUE(r.cpu_accessible);
    EXPECT_EQ(reg->detect(nullptr, 0), MemType::kHost);
    EXPECT_EQ(reg->cache().size(), 0u);
    EXPECT_TRUE(reg->attr(MemType::kHost).cpu_accessible);
    EXPECT_FALSE(reg->attr(MemType::kSimdev).cpu_accessible) << "not loaded";
}

TEST(MemTypeRegistry, EmptyListMeansHost) {
    auto reg = make({});
    ASSERT_TRUE(reg);
    EXPECT_TRUE(reg->loaded(MemType::kHost));
    EXPECT_FALSE(reg->device_plugins_loaded());
}

TEST(MemTypeRegistry, UnknownNameIsRejectedWithAMessage) {
    common::Config config;
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    EXPECT_EQ(MemTypeRegistry::create({"host", "rocm"}, config, &reg, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("'rocm'"), std::string::npos) << why;
    EXPECT_NE(why.find("SWY_MEMTYPES"), std::string::npos) << why;
    EXPECT_FALSE(reg);
}

TEST(MemTypeRegistry, BadSimdevBandwidthIsRejected) {
    common::Config config;
    ASSERT_EQ(config.set("SIMDEV_BW", "0"), Status::kOk);
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    EXPECT_EQ(MemTypeRegistry::create({"simdev"}, config, &reg, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("SWY_SIMDEV_BW"), std::string::npos) << why;
}

TEST(MemTypeRegistry, SimdevAttributesComeFromConfig) {
    common::Config config;
    ASSERT_EQ(config.set("SIMDEV_BW", "1e9"), Status::kOk);
    ASSERT_EQ(config.set("SIMDEV_LATENCY", "5us"), Status::kOk);
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    ASSERT_EQ(MemTypeRegistry::create({"simdev"}, config, &reg, &why), Status::kOk) << why;
    const MemTypeAttr a = reg->attr(MemType::kSimdev);
    EXPECT_FALSE(a.cpu_accessible);
    EXPECT_TRUE(a.dmabuf_capable);
    EXPECT_DOUBLE_EQ(a.copy_bw_Bps, 1e9);
    EXPECT_NEAR(a.copy_latency_s, 5e-6, 1e-12);
}

TEST(MemTypeRegistry, WithSimdevAHostPointerIsHost) {
    auto reg = make({"host", "simdev"});
    ASSERT_TRUE(reg->device_plugins_loaded());
    std::vector<char> buf(100);
    int on_stack = 0;
    EXPECT_EQ(reg->detect(buf.data(), buf.size()), MemType::kHost) << "simdev is definitive";
    EXPECT_EQ(reg->detect(&on_stack, sizeof on_stack), MemType::kHost);
    EXPECT_EQ(reg->cache().size(), 0u) << "host ranges are never cached";
}

TEST(MemTypeRegistry, DetectsInsideAtBothEdgesAndNotOneByteOutside) {
    auto reg = make({"simdev"});
    const size_t len = 2 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kSimdev, len, &p), Status::kOk);
    MemRange r;
    EXPECT_EQ(reg->detect(p, 1, &r), MemType::kSimdev);
    EXPECT_EQ(r.base, addr(p));
    EXPECT_EQ(r.length, len);
    EXPECT_FALSE(r.cpu_accessible);
    EXPECT_EQ(reg->detect(at(p, len - 1), 1), MemType::kSimdev);
    EXPECT_EQ(reg->detect(p, len), MemType::kSimdev);
    EXPECT_EQ(reg->detect(at(p, 100), 200, &r), MemType::kSimdev);
    EXPECT_EQ(r.base, addr(p)) << "the whole allocation, not the queried piece";
    // One byte outside, on each side: not this allocation.
    MemType t = reg->detect(before(p), 1, &r);
    EXPECT_TRUE(t != MemType::kSimdev || r.base != addr(p));
    t = reg->detect(at(p, len), 1, &r);
    EXPECT_TRUE(t != MemType::kSimdev || r.base != addr(p));
    // Straddling an edge: never host.
    EXPECT_EQ(reg->detect(before(p), 2), MemType::kUnknown);
    EXPECT_EQ(reg->detect(at(p, len - 1), 2), MemType::kUnknown);
    EXPECT_EQ(reg->release(p), Status::kOk);
}

TEST(MemTypeRegistry, PagePaddingOfAnOddSizedAllocationIsNotHost) {
    auto reg = make({"simdev"});
    void* p = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kSimdev, 1000, &p), Status::kOk);
    EXPECT_EQ(reg->detect(at(p, 999), 1), MemType::kSimdev);
    EXPECT_EQ(reg->detect(at(p, 1000), 1), MemType::kUnknown);
    EXPECT_EQ(reg->release(p), Status::kOk);
}

TEST(MemTypeRegistry, ReleaseInvalidatesTheCacheAndReusedAddressIsHost) {
    auto reg = make({"simdev"});
    const size_t len = 4 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kSimdev, len, &p), Status::kOk);
    ASSERT_EQ(reg->detect(p, 8), MemType::kSimdev);
    ASSERT_EQ(reg->detect(p, 8), MemType::kSimdev);  // per-thread slot
    EXPECT_EQ(reg->cache().size(), 1u);
    ASSERT_EQ(reg->release(p), Status::kOk);
    EXPECT_EQ(reg->cache().size(), 0u);
    // Put ordinary host memory at the very same address.
    void* q = mmap(p, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    ASSERT_EQ(q, p);
    EXPECT_EQ(reg->detect(q, 8), MemType::kHost);
    munmap(q, len);
}

TEST(MemTypeRegistry, FreedThenReallocatedAddressGetsItsNewType) {
    auto reg = make({"simdev", "dmabuf"});
    const size_t len = 4 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(len)), 0);
    bool reused = false;
    for (int attempt = 0; attempt < 8 && !reused; ++attempt) {
        void* p = nullptr;
        ASSERT_EQ(reg->allocate(MemType::kSimdev, len, &p), Status::kOk);
        ASSERT_EQ(reg->detect(p, len), MemType::kSimdev);
        ASSERT_EQ(reg->release(p), Status::kOk);
        void* m = nullptr;
        ASSERT_EQ(reg->map_dmabuf(fd, 0, len, &m), Status::kOk);
        MemRange r;
        EXPECT_EQ(reg->detect(m, len, &r), MemType::kDmabuf);
        EXPECT_TRUE(r.cpu_accessible);
        reused = m == p;
        ASSERT_EQ(reg->unmap(m), Status::kOk);
        EXPECT_EQ(reg->detect(m, 1), MemType::kHost);
    }
    close(fd);
    if (!reused) GTEST_SKIP() << "the kernel never reused the address; covered by the churn test";
}

TEST(MemTypeRegistry, ReleaseRefusesForeignAndInteriorPointers) {
    auto reg = make({"simdev"});
    void* p = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kSimdev, 8192, &p), Status::kOk);
    EXPECT_EQ(reg->release(const_cast<char*>(at(p, 16))), Status::kInvalidParam);
    int x = 0;
    EXPECT_EQ(reg->release(&x), Status::kInvalidParam);
    EXPECT_EQ(reg->release(p), Status::kOk);
    EXPECT_EQ(reg->release(p), Status::kInvalidParam) << "double free";
    void* h = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kHost, 100, &h), Status::kOk);
    EXPECT_EQ(reg->detect(h, 100), MemType::kHost);
    EXPECT_EQ(reg->release(h), Status::kOk);
    EXPECT_EQ(reg->allocate(MemType::kDmabuf, 100, &h), Status::kUnsupported);
    EXPECT_EQ(reg->allocate(MemType::kCuda, 100, &h), Status::kUnsupported) << "not loaded";
    EXPECT_EQ(reg->allocate(MemType::kSimdev, 0, &h), Status::kInvalidParam);
}

TEST(MemTypeRegistry, RandomAllocFreeChurnNeverReturnsAStaleType) {
    auto reg = make({"simdev", "dmabuf"});
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(8 * page)), 0);
    struct Live {
        MemType type;
        size_t length;
    };
    std::map<uintptr_t, Live> live;
    std::vector<uintptr_t> freed;
    std::mt19937_64 rng(7);
    auto expected = [&](uintptr_t p) {
        auto it = live.upper_bound(p);
        if (it == live.begin()) return MemType::kHost;
        --it;
        return p - it->first < it->second.length ? it->second.type : MemType::kHost;
    };
    auto free_one = [&](std::map<uintptr_t, Live>::iterator it) {
        void* p = reinterpret_cast<void*>(it->first);
        ASSERT_EQ(it->second.type == MemType::kDmabuf ? reg->unmap(p) : reg->release(p),
                  Status::kOk);
        freed.push_back(it->first);
        live.erase(it);
    };
    for (int i = 0; i < 3000; ++i) {
        const unsigned op = rng() % 8;
        if (op < 4 || live.empty()) {
            const size_t len = page * (1 + rng() % 8);
            void* p = nullptr;
            MemType t = MemType::kSimdev;
            if (op == 0) {
                t = MemType::kHost;
                ASSERT_EQ(reg->allocate(t, len, &p), Status::kOk);
            } else if (op == 1) {
                t = MemType::kDmabuf;
                ASSERT_EQ(reg->map_dmabuf(fd, 0, len, &p), Status::kOk);
            } else {
                ASSERT_EQ(reg->allocate(t, len, &p), Status::kOk);
            }
            live[addr(p)] = Live{t, len};
        } else {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            free_one(it);
        }
        if (live.size() > 200) free_one(live.begin());
        // Look up live buffers at random offsets and edges, and freed addresses.
        for (int k = 0; k < 4 && !live.empty(); ++k) {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            const size_t off = k == 0   ? 0
                               : k == 1 ? it->second.length - 1
                                        : rng() % it->second.length;
            MemRange r;
            ASSERT_EQ(reg->detect(reinterpret_cast<void*>(it->first + off), 1, &r), it->second.type)
                << "iteration " << i;
            if (it->second.type != MemType::kHost) {
                EXPECT_EQ(r.base, it->first);
            }
        }
        if (!freed.empty()) {
            const uintptr_t f = freed[rng() % freed.size()];
            const MemType want = expected(f);
            // A freed address is either reused (then its new type) or plain host; never stale.
            const MemType got = reg->detect(reinterpret_cast<void*>(f), 1);
            EXPECT_EQ(got, want) << "iteration " << i << ": " << memtype_name(got);
        }
    }
    while (!live.empty())
        free_one(live.begin());
    close(fd);
    EXPECT_EQ(reg->cache().size(), 0u);
}

TEST(MemTypeRegistry, ConcurrentAllocDetectFreeFromSeveralThreads) {
    auto reg = make({"simdev"});
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t));
            for (int i = 0; i < 300; ++i) {
                void* p = nullptr;
                const size_t len = 4096 * (1 + rng() % 4);
                if (reg->allocate(MemType::kSimdev, len, &p) != Status::kOk) {
                    ++wrong;
                    continue;
                }
                for (int k = 0; k < 8; ++k) {
                    MemRange r;
                    if (reg->detect(at(p, rng() % len), 1, &r) != MemType::kSimdev ||
                        r.base != addr(p)) {
                        ++wrong;
                    }
                }
                if (reg->release(p) != Status::kOk) ++wrong;
            }
        });
    }
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(reg->cache().size(), 0u);
}

TEST(MemTypeRegistry, CopyAnyDirectionAndAsyncTokens) {
    auto reg = make({"simdev"});
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(reg->allocate(MemType::kSimdev, 300000, &a), Status::kOk);
    ASSERT_EQ(reg->allocate(MemType::kSimdev, 300000, &b), Status::kOk);
    std::vector<unsigned char> in(300000), out(300000);
    for (size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<unsigned char>(i * 131 + 7);
    ASSERT_EQ(reg->copy(a, MemType::kUnknown, in.data(), MemType::kUnknown, in.size()),
              Status::kOk);
    ASSERT_EQ(reg->copy(b, MemType::kSimdev, a, MemType::kSimdev, in.size()), Status::kOk)
        << "device to device through the bounce buffer";
    ASSERT_EQ(reg->copy(out.data(), MemType::kHost, b, MemType::kUnknown, out.size()), Status::kOk);
    EXPECT_EQ(in, out);

    std::fill(out.begin(), out.end(), 0);
    uint64_t token = 0;
    Status s = reg->copy_to_host_async(MemType::kSimdev, out.data(), at(a, 10), 1000, &token);
    ASSERT_EQ(s, Status::kInProgress);
    EXPECT_EQ(token >> 56, static_cast<uint64_t>(MemType::kSimdev));
    while ((s = reg->test(token)) == Status::kInProgress) {}
    ASSERT_EQ(s, Status::kOk);
    EXPECT_EQ(std::memcmp(out.data(), in.data() + 10, 1000), 0);
    EXPECT_EQ(reg->test(0), Status::kOk);
    EXPECT_EQ(reg->test(uint64_t{7} << 56), Status::kInvalidParam);
    // Host async completes at once.
    EXPECT_EQ(reg->copy_to_host_async(MemType::kHost, out.data(), in.data(), 10, &token),
              Status::kOk);
    EXPECT_EQ(token, 0u);
    // Out of range.
    EXPECT_EQ(reg->copy_to_host(MemType::kSimdev, out.data(), at(a, 299999), 2),
              Status::kInvalidParam);
    EXPECT_EQ(reg->release(a), Status::kOk);
    EXPECT_EQ(reg->release(b), Status::kOk);
}

TEST(MemTypeRegistry, CudaWithoutDriverIsAWarningNotAnError) {
    auto reg = make({"host", "cuda"});
    ASSERT_TRUE(reg);
    if (!reg->loaded(MemType::kCuda)) {
        EXPECT_FALSE(reg->device_plugins_loaded());
        EXPECT_FALSE(reg->cuda_unavailable_reason().empty());
        int x = 0;
        EXPECT_EQ(reg->detect(&x, sizeof x), MemType::kHost);
    }
}

// Through the public C API, as applications use it.
TEST(MemTypeCApi, AllocDetectCopyFree) {
    swy_config_h config = nullptr;
    ASSERT_EQ(swy_config_read(&config), SWY_OK);
    ASSERT_EQ(swy_config_set(config, "MEMTYPES", "host,simdev"), SWY_OK);
    swy_context_params_t params{};
    params.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    params.config = config;
    swy_context_h ctx = nullptr;
    ASSERT_EQ(swy_context_create(&params, &ctx), SWY_OK);
    swy_config_release(config);

    void* dev = nullptr;
    ASSERT_EQ(swy_mem_alloc(ctx, SWY_MEMTYPE_SIMDEV, 4096, &dev), SWY_OK);
    swy_memtype_t t = SWY_MEMTYPE_UNKNOWN;
    ASSERT_EQ(swy_mem_detect(ctx, dev, 4096, &t), SWY_OK);
    EXPECT_EQ(t, SWY_MEMTYPE_SIMDEV);
    char host[64] = "hello, device";
    char back[64] = {};
    ASSERT_EQ(swy_mem_copy(ctx, dev, SWY_MEMTYPE_UNKNOWN, host, SWY_MEMTYPE_HOST, sizeof host),
              SWY_OK);
    ASSERT_EQ(swy_mem_copy(ctx, back, SWY_MEMTYPE_HOST, dev, SWY_MEMTYPE_SIMDEV, sizeof back),
              SWY_OK);
    EXPECT_STREQ(back, host);
    ASSERT_EQ(swy_mem_detect(ctx, host, sizeof host, &t), SWY_OK);
    EXPECT_EQ(t, SWY_MEMTYPE_HOST);
    EXPECT_EQ(swy_mem_free(ctx, dev), SWY_OK);
    EXPECT_EQ(swy_mem_free(ctx, dev), SWY_ERR_INVALID_PARAM);
    void* m = nullptr;
    EXPECT_EQ(swy_mem_map_dmabuf(ctx, 0, 0, 4096, &m), SWY_ERR_UNSUPPORTED) << "dmabuf not enabled";
    EXPECT_EQ(swy_mem_alloc(ctx, SWY_MEMTYPE_UNKNOWN, 10, &m), SWY_ERR_INVALID_PARAM);
    swy_context_destroy(ctx);
}

TEST(MemTypeCApi, UnknownMemtypeFailsContextCreation) {
    swy_config_h config = nullptr;
    ASSERT_EQ(swy_config_read(&config), SWY_OK);
    ASSERT_EQ(swy_config_set(config, "MEMTYPES", "host,gpu"), SWY_OK);
    swy_context_params_t params{};
    params.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    params.config = config;
    swy_context_h ctx = nullptr;
    EXPECT_EQ(swy_context_create(&params, &ctx), SWY_ERR_INVALID_PARAM);
    swy_config_release(config);
}

TEST(MemTypeRegistry, PluginOfAnotherAbiVersionIsRefusedNamingBothVersions) {
    MemTypePlugin table{};
    table.abi_version = kPluginAbiVersion + 1;
    table.name = "future";
    table.type = MemType::kSimdev;
    std::string why;
    EXPECT_FALSE(MemTypeRegistry::abi_compatible(table, &why));
    EXPECT_NE(why.find("'future'"), std::string::npos) << why;
    EXPECT_NE(why.find("version " + std::to_string(kPluginAbiVersion + 1)), std::string::npos)
        << why;
    EXPECT_NE(why.find("speaks version " + std::to_string(kPluginAbiVersion)), std::string::npos)
        << why;
}

TEST(MemTypeRegistry, PluginWithoutAnAbiVersionIsRefused) {
    MemTypePlugin table{};  // abi_version 0: a table nobody filled in
    table.name = "blank";
    std::string why;
    EXPECT_FALSE(MemTypeRegistry::abi_compatible(table, &why));
    EXPECT_NE(why.find("version 0"), std::string::npos) << why;
}

TEST(MemTypeRegistry, EveryBuiltInPluginSpeaksTheCurrentAbi) {
    auto reg = make({"host", "simdev"});
    ASSERT_TRUE(reg);
    for (MemType t : {MemType::kHost, MemType::kSimdev}) {
        const MemTypePlugin* p = reg->plugin(t);
        ASSERT_NE(p, nullptr);
        std::string why;
        EXPECT_TRUE(MemTypeRegistry::abi_compatible(*p, &why)) << why;
    }
}
