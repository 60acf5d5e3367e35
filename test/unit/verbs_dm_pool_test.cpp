// Device-memory PIO window of the verbs transport, driven through a fake device: rxe (and
// most hosts) have no device memory, so this is where the pool's logic is specified.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transports/verbs/dm_pool.h"
#include "verbs_fake_dm.h"

using swy::Status;
using swy::tl::verbs::DmDevice;
using swy::tl::verbs::DmPool;
using swy::tl::verbs::testing::FakeDm;
using swy::tl::verbs::testing::FakeDmState;

namespace {

std::unique_ptr<DmPool> make(FakeDmState* s, size_t slot, uint32_t slots, uint32_t reserved) {
    std::unique_ptr<DmPool> pool;
    std::string why;
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(s), slot, slots, reserved, &pool, &why),
              Status::kOk)
        << why;
    return pool;
}

}  // namespace

TEST(VerbsDmPool, DeviceWithoutMemoryIsUnsupportedWithAReason) {
    FakeDmState s;  // max 0, as rxe reports
    std::unique_ptr<DmPool> pool;
    std::string why;
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&s), 256, 8, 2, &pool, &why),
              Status::kUnsupported);
    EXPECT_EQ(pool, nullptr);
    EXPECT_NE(why.find("no device memory"), std::string::npos) << why;
    EXPECT_EQ(s.allocated, 0u);
}

TEST(VerbsDmPool, AllocatesOneRegionOfWholeSlotsClampedToTheDevice) {
    FakeDmState s;
    s.max = 1000;  // room for 3 slots of 256 B, not the 8 asked
    auto pool = make(&s, 256, 8, 1);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(pool->slots(), 3u);
    EXPECT_EQ(s.allocated, 768u);
    pool.reset();
    EXPECT_EQ(s.releases, 1);
}

TEST(VerbsDmPool, ReservedSlotsGoOnlyToLowLatencyEndpoints) {
    FakeDmState s;
    s.max = 4096;
    auto pool = make(&s, 256, 4, 2);
    EXPECT_EQ(pool->acquire(false), 0);
    EXPECT_EQ(pool->acquire(false), 1);
    EXPECT_EQ(pool->acquire(false), -1);  // the other two are reserved
    EXPECT_EQ(pool->acquire(true), 2);
    EXPECT_EQ(pool->acquire(true), 3);
    EXPECT_EQ(pool->acquire(true), -1);  // full
    EXPECT_EQ(pool->free_slots(), 0u);
    EXPECT_TRUE(pool->release(1));
    EXPECT_FALSE(pool->release(1));  // twice: ignored
    EXPECT_FALSE(pool->release(7));  // never existed
    EXPECT_EQ(pool->acquire(true), 1);
}

TEST(VerbsDmPool, WritesStayInsideTheirSlot) {
    FakeDmState s;
    s.max = 4096;
    auto pool = make(&s, 64, 4, 0);
    const int a = pool->acquire(false);
    const int b = pool->acquire(false);
    ASSERT_EQ(a, 0);
    ASSERT_EQ(b, 1);
    uint8_t bytes[64];
    std::memset(bytes, 0xAB, sizeof(bytes));
    EXPECT_EQ(pool->write(b, 0, bytes, 64), Status::kOk);
    EXPECT_EQ(s.memory[64], 0xAB);
    EXPECT_EQ(s.memory[127], 0xAB);
    EXPECT_EQ(s.memory[63], 0);                                      // slot a untouched
    EXPECT_EQ(s.memory[128], 0);                                     // slot 2 untouched
    EXPECT_EQ(pool->write(b, 1, bytes, 64), Status::kInvalidParam);  // one byte past the slot
    EXPECT_EQ(pool->write(b, 65, bytes, 0), Status::kInvalidParam);
    EXPECT_EQ(pool->write(2, 0, bytes, 1), Status::kInvalidParam);  // slot not held
    EXPECT_EQ(pool->write(-1, 0, bytes, 1), Status::kInvalidParam);
}

TEST(VerbsDmPool, AllocationFailureIsReported) {
    FakeDmState s;
    s.max = 4096;
    s.fail_allocate = Status::kNoMemory;
    std::unique_ptr<DmPool> pool;
    std::string why;
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&s), 256, 4, 0, &pool, &why),
              Status::kNoMemory);
    EXPECT_EQ(s.releases, 0);  // nothing was allocated, nothing is released
}

TEST(VerbsDmPool, RejectsNonsenseGeometry) {
    FakeDmState s;
    s.max = 4096;
    std::unique_ptr<DmPool> pool;
    std::string why;
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&s), 0, 4, 0, &pool, &why),
              Status::kInvalidParam);
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&s), 64, 4, 5, &pool, &why),
              Status::kInvalidParam);
    s.max = 32;  // less than one slot
    EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&s), 64, 4, 0, &pool, &why),
              Status::kUnsupported);
}
