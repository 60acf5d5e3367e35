// swy_mem_map / unmap / query parameters, the key table behind them, and validate_access (the
// owner's check every message-path operation goes through).
#include <gtest/gtest.h>
#include <switchyard/rma.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "protocols/rma/mem_table.h"
#include "protocols/rma/rkey.h"
#include "protocols/rma/rma.h"
#include "test_context.h"

namespace swy::rma {
namespace {

class RmaMemTable : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = test::make_context({{"TLS", "self"}});
        ASSERT_NE(ctx_, nullptr);
    }
    void TearDown() override {
        if (ctx_ != nullptr) swy_context_destroy(ctx_);
    }
    core::Context* context() { return reinterpret_cast<core::Context*>(ctx_); }

    static swy_mem_map_params_t allocate(size_t length, uint32_t access = kAccessAll) {
        swy_mem_map_params_t p{};
        p.field_mask =
            SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS | SWY_MEM_MAP_FIELD_ACCESS;
        p.length = length;
        p.flags = SWY_MEM_MAP_ALLOCATE;
        p.access = access;
        return p;
    }
    static swy_mem_map_params_t reg(void* address, size_t length) {
        swy_mem_map_params_t p{};
        p.field_mask = SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH;
        p.address = address;
        p.length = length;
        return p;
    }

    swy_context_h ctx_ = nullptr;
};

TEST_F(RmaMemTable, AllocateGivesZeroedPageAlignedSharedMemory) {
    for (size_t length : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{1} << 20}) {
        swy_mem_map_params_t p = allocate(length);
        swy_mem_h m = nullptr;
        ASSERT_EQ(swy_mem_map(ctx_, &p, &m), SWY_OK) << length;
        swy_mem_attr_t a{};
        a.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_LENGTH |
                       SWY_MEM_ATTR_FIELD_MEMTYPE | SWY_MEM_ATTR_FIELD_ACCESS |
                       SWY_MEM_ATTR_FIELD_SHARED;
        ASSERT_EQ(swy_mem_query(m, &a), SWY_OK);
        ASSERT_NE(a.address, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(a.address) % page_size(), 0u);
        EXPECT_EQ(a.length, length);
        EXPECT_EQ(a.memtype, SWY_MEMTYPE_HOST);
        EXPECT_EQ(a.access, kAccessAll);
        EXPECT_EQ(a.shared, 1);
        auto* bytes = static_cast<unsigned char*>(a.address);
        std::vector<unsigned char> zero(length, 0);
        EXPECT_EQ(std::memcmp(bytes, zero.data(), length), 0);
        std::memset(bytes, 0xA5, length);  // writable over the whole length
        EXPECT_EQ(swy_mem_unmap(ctx_, m), SWY_OK);
    }
}

TEST_F(RmaMemTable, QueryFillsOnlyTheRequestedFields) {
    std::vector<unsigned char> buf(100);
    swy_mem_map_params_t p = reg(buf.data(), buf.size());
    swy_mem_h m = nullptr;
    ASSERT_EQ(swy_mem_map(ctx_, &p, &m), SWY_OK);
    swy_mem_attr_t a{};
    a.field_mask = SWY_MEM_ATTR_FIELD_LENGTH;
    a.address = reinterpret_cast<void*>(0x1234);
    a.access = 77;
    a.shared = 5;
    ASSERT_EQ(swy_mem_query(m, &a), SWY_OK);
    EXPECT_EQ(a.length, 100u);
    EXPECT_EQ(a.address, reinterpret_cast<void*>(0x1234)) << "not requested: untouched";
    EXPECT_EQ(a.access, 77u);
    EXPECT_EQ(a.shared, 5);
    a.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_SHARED;
    ASSERT_EQ(swy_mem_query(m, &a), SWY_OK);
    EXPECT_EQ(a.address, buf.data()) << "registered in place";
    EXPECT_EQ(a.shared, 0);
    a.field_mask = 1u << 20;
    EXPECT_EQ(swy_mem_query(m, &a), SWY_ERR_INVALID_PARAM) << "unknown attr bit";
    EXPECT_EQ(swy_mem_query(m, nullptr), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_mem_query(nullptr, &a), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_mem_unmap(ctx_, m), SWY_OK);
}

TEST_F(RmaMemTable, MapRefusesBadParameters) {
    std::vector<unsigned char> buf(64);
    swy_mem_h m = nullptr;
    swy_mem_map_params_t p = allocate(4096);
    EXPECT_EQ(swy_mem_map(nullptr, &p, &m), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_mem_map(ctx_, nullptr, &m), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_mem_map(ctx_, &p, nullptr), SWY_ERR_INVALID_PARAM);
    p.field_mask |= 1u << 30;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "unknown field bit";
    p = allocate(0);
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "length 0";
    p = allocate(4096);
    p.field_mask &= ~uint64_t{SWY_MEM_MAP_FIELD_LENGTH};
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "length not set";
    p = allocate(4096);
    p.flags |= 1u << 7;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "unknown flag";
    p = allocate(4096, kAccessAll | (1u << 5));
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "unknown access bit";
    p = reg(nullptr, 64);
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "no address, no ALLOCATE";
    p = reg(buf.data(), 64);
    p.field_mask |= SWY_MEM_MAP_FIELD_FLAGS;
    p.flags = SWY_MEM_MAP_FIXED;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "FIXED without ALLOCATE";
    p = allocate(4096);
    p.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
    p.flags |= SWY_MEM_MAP_FIXED;
    p.address = buf.data() + 1;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_INVALID_PARAM) << "FIXED, unaligned";
    p = allocate(4096);
    p.field_mask |= SWY_MEM_MAP_FIELD_MEMTYPE;
    p.memtype = SWY_MEMTYPE_SIMDEV;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_UNSUPPORTED) << "ALLOCATE is host only";
    p = reg(buf.data(), 64);
    p.field_mask |= SWY_MEM_MAP_FIELD_MEMTYPE;
    p.memtype = SWY_MEMTYPE_SIMDEV;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m), SWY_ERR_UNSUPPORTED) << "device memory not yet";
    EXPECT_EQ(swy_mem_unmap(ctx_, nullptr), SWY_ERR_INVALID_PARAM);
    int not_a_mapping = 0;
    EXPECT_EQ(swy_mem_unmap(ctx_, reinterpret_cast<swy_mem_h>(&not_a_mapping)),
              SWY_ERR_INVALID_PARAM);
}

TEST_F(RmaMemTable, FixedAllocatesAtTheAddressOrRefusesATakenOne) {
    const size_t len = 3 * page_size();
    swy_mem_map_params_t p = allocate(len);
    p.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
    p.flags |= SWY_MEM_MAP_FIXED;
    swy_mem_h m = nullptr;
    void* hole = nullptr;
    swy_status_t st = SWY_ERR_NO_RESOURCE;
    // A free range: reserve it, then give it back. A mapping of the library's own (its memfd
    // header) or of the sanitizer's runtime may land in that just-freed range before the
    // call: then it really is taken, and another range is tried.
    for (int attempt = 0; attempt < 10 && st == SWY_ERR_NO_RESOURCE; ++attempt) {
        hole = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(hole, MAP_FAILED);
        ASSERT_EQ(munmap(hole, len), 0);
        p.address = hole;
        st = swy_mem_map(ctx_, &p, &m);
    }
    ASSERT_EQ(st, SWY_OK);
    swy_mem_attr_t a{};
    a.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS;
    ASSERT_EQ(swy_mem_query(m, &a), SWY_OK);
    EXPECT_EQ(a.address, hole);
    // The same range again is taken now.
    swy_mem_h m2 = nullptr;
    EXPECT_EQ(swy_mem_map(ctx_, &p, &m2), SWY_ERR_NO_RESOURCE);
    EXPECT_EQ(swy_mem_unmap(ctx_, m), SWY_OK);
}

TEST_F(RmaMemTable, ValidateAccessGrantsExactlyTheRangeAndRights) {
    std::vector<unsigned char> buf(1000);
    swy_mem_map_params_t p = reg(buf.data(), buf.size());
    p.field_mask |= SWY_MEM_MAP_FIELD_ACCESS;
    p.access = kAccessRead | kAccessAtomic;
    swy_mem_h h = nullptr;
    ASSERT_EQ(swy_mem_map(ctx_, &p, &h), SWY_OK);
    const KeyFields k = key_of(context(), *reinterpret_cast<Mapping*>(h));
    const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
    uint8_t* local = nullptr;
    core::Context* c = context();
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base, 1000, kAccessRead, &local),
              Status::kOk);
    EXPECT_EQ(local, buf.data());
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base + 992, 8, kAccessAtomic, &local),
              Status::kOk);
    EXPECT_EQ(local, buf.data() + 992);
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base + 1000, 0, kAccessRead, &local),
              Status::kOk)
        << "empty range at the end";
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base + 1, 1000, kAccessRead, &local),
              Status::kAccessDenied)
        << "one byte past the end";
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base - 1, 1, kAccessRead, &local),
              Status::kAccessDenied)
        << "one byte before";
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base, ~uint64_t{0}, kAccessRead, &local),
              Status::kAccessDenied)
        << "length that wraps";
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base, 8, kAccessWrite, &local),
              Status::kAccessDenied)
        << "no write right";
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret ^ 1, base, 8, kAccessRead, &local),
              Status::kAccessDenied)
        << "forged secret";
    EXPECT_EQ(validate_access(c, k.id.slot + 1, k.id.secret, base, 8, kAccessRead, &local),
              Status::kAccessDenied)
        << "another slot";
    EXPECT_EQ(validate_access(c, kKeyTableSlots, k.id.secret, base, 8, kAccessRead, &local),
              Status::kAccessDenied)
        << "slot outside the table";
    ASSERT_EQ(swy_mem_unmap(ctx_, h), SWY_OK);
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base, 8, kAccessRead, &local),
              Status::kAccessDenied)
        << "stale after unmap";
    // The slot is reused by the next mapping with a new secret: the old key stays dead.
    ASSERT_EQ(swy_mem_map(ctx_, &p, &h), SWY_OK);
    const KeyFields k2 = key_of(context(), *reinterpret_cast<Mapping*>(h));
    EXPECT_EQ(k2.id.slot, k.id.slot);
    EXPECT_NE(k2.id.secret, k.id.secret);
    EXPECT_EQ(validate_access(c, k.id.slot, k.id.secret, base, 8, kAccessRead, &local),
              Status::kAccessDenied);
    EXPECT_EQ(validate_access(c, k2.id.slot, k2.id.secret, base, 8, kAccessRead, &local),
              Status::kOk);
    EXPECT_EQ(swy_mem_unmap(ctx_, h), SWY_OK);
}

TEST_F(RmaMemTable, ValidateOnAContextWithoutMappingsDenies) {
    uint8_t* local = nullptr;
    EXPECT_EQ(validate_access(context(), 0, 1, 4096, 8, kAccessRead, &local),
              Status::kAccessDenied);
}

TEST_F(RmaMemTable, ReadSlotSeesPublishedFieldsOnlyUnderTheirSecret) {
    std::vector<unsigned char> buf(64);
    swy_mem_map_params_t p = reg(buf.data(), buf.size());
    swy_mem_h h = nullptr;
    ASSERT_EQ(swy_mem_map(ctx_, &p, &h), SWY_OK);
    auto* m = reinterpret_cast<Mapping*>(h);
    const KeySlot& slot = context()->mem_table().slots()[m->slot];
    SlotView v;
    ASSERT_TRUE(read_slot(slot, m->secret, &v));
    EXPECT_EQ(v.base, reinterpret_cast<uint64_t>(buf.data()));
    EXPECT_EQ(v.length, 64u);
    EXPECT_EQ(v.access, kAccessAll);
    EXPECT_EQ(v.segment_fd, -1);
    EXPECT_FALSE(read_slot(slot, m->secret + 1, &v));
    EXPECT_FALSE(read_slot(slot, 0, &v)) << "0 is the free marker, never a secret";
    const uint64_t secret = m->secret;
    ASSERT_EQ(swy_mem_unmap(ctx_, h), SWY_OK);
    EXPECT_FALSE(read_slot(slot, secret, &v));
}

TEST_F(RmaMemTable, MapAndUnmapFromManyThreadsWhileOthersValidate) {
    // Four threads map and unmap; two validate the live keys they publish. A key validates
    // while its mapping lives and never after unmap (the secret is cleared first).
    constexpr int kMappers = 4, kRounds = 300;
    std::atomic<uint64_t> published[kMappers][3] = {};  // slot, secret, base (0: none)
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    core::Context* c = context();
    std::vector<std::thread> threads;
    for (int t = 0; t < kMappers; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                swy_mem_map_params_t p = allocate(4096 * (1 + i % 3));
                swy_mem_h h = nullptr;
                if (swy_mem_map(ctx_, &p, &h) != SWY_OK) {
                    ++errors;
                    return;
                }
                const KeyFields k = key_of(c, *reinterpret_cast<Mapping*>(h));
                uint8_t* local = nullptr;
                if (validate_access(c, k.id.slot, k.id.secret, k.id.base, 8, kAccessWrite,
                                    &local) != Status::kOk) {
                    ++errors;
                }
                published[t][0].store(k.id.slot);
                published[t][2].store(k.id.base);
                published[t][1].store(k.id.secret, std::memory_order_release);
                published[t][1].store(0, std::memory_order_release);
                if (swy_mem_unmap(ctx_, h) != SWY_OK) ++errors;
                if (validate_access(c, k.id.slot, k.id.secret, k.id.base, 8, kAccessWrite,
                                    &local) != Status::kAccessDenied) {
                    ++errors;
                }
            }
        });
    }
    std::vector<std::thread> readers;
    for (int r = 0; r < 2; ++r) {
        readers.emplace_back([&] {
            while (!stop.load()) {
                for (int t = 0; t < kMappers; ++t) {
                    const uint64_t secret = published[t][1].load(std::memory_order_acquire);
                    if (secret == 0) continue;
                    uint8_t* local = nullptr;
                    // Live or just unmapped: either answer is fine, but never another range.
                    const Status s =
                        validate_access(c, static_cast<uint32_t>(published[t][0].load()), secret,
                                        published[t][2].load(), 8, kAccessRead, &local);
                    if (s != Status::kOk && s != Status::kAccessDenied) ++errors;
                }
            }
        });
    }
    for (auto& th : threads)
        th.join();
    stop.store(true);
    for (auto& th : readers)
        th.join();
    EXPECT_EQ(errors.load(), 0);
}

TEST(RmaAtomicMode, OnlyCpuIsAccepted) {
    for (const char* mode : {"cpu", "nic", ""}) {
        swy_config_h cfg = nullptr;
        ASSERT_EQ(swy_config_read(&cfg), SWY_OK);
        ASSERT_EQ(swy_config_set(cfg, "TLS", "self"), SWY_OK);
        ASSERT_EQ(swy_config_set(cfg, "ATOMIC_MODE", mode), SWY_OK);
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        swy_context_h ctx = nullptr;
        const swy_status_t st = swy_context_create(&cp, &ctx);
        swy_config_release(cfg);
        if (std::string(mode) == "cpu") {
            EXPECT_EQ(st, SWY_OK);
            swy_context_destroy(ctx);
        } else {
            EXPECT_EQ(st, SWY_ERR_INVALID_PARAM) << mode;
        }
    }
}

}  // namespace
}  // namespace swy::rma
