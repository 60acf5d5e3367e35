// RangeCache: the interval map in front of memory-type detection.
#include "memtypes/range_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

using namespace swy::mem;

namespace {
MemRange range(uintptr_t base, size_t length, MemType type = MemType::kSimdev) {
    return MemRange{type, false, 0, base, length};
}
}  // namespace

TEST(RangeCache, HitInsideAndAtBothEdgesMissOneByteOutside) {
    RangeCache cache;
    cache.insert(range(0x10000, 0x1000));
    MemRange r;
    EXPECT_TRUE(cache.lookup(0x10000, 1, &r));
    EXPECT_EQ(r.base, 0x10000u);
    EXPECT_EQ(r.length, 0x1000u);
    EXPECT_TRUE(cache.lookup(0x10fff, 1, &r));
    EXPECT_TRUE(cache.lookup(0x10000, 0x1000, &r));
    EXPECT_TRUE(cache.lookup(0x10800, 0, &r)) << "length 0 counts as 1";
    EXPECT_FALSE(cache.lookup(0xffff, 1, &r));
    EXPECT_FALSE(cache.lookup(0x11000, 1, &r));
    EXPECT_FALSE(cache.lookup(0x10fff, 2, &r)) << "runs past the end";
    EXPECT_FALSE(cache.lookup(0xffff, 2, &r)) << "starts before the range";
}

TEST(RangeCache, EraseInvalidatesThePerThreadSlot) {
    RangeCache cache;
    cache.insert(range(0x20000, 0x1000));
    MemRange r;
    ASSERT_TRUE(cache.lookup(0x20010, 8, &r));  // fills this thread's slot
    ASSERT_TRUE(cache.lookup(0x20010, 8, &r));  // served by the slot
    const uint64_t g = cache.generation();
    EXPECT_TRUE(cache.erase(0x20000));
    EXPECT_GT(cache.generation(), g);
    EXPECT_FALSE(cache.lookup(0x20010, 8, &r));
    EXPECT_FALSE(cache.erase(0x20000));
    EXPECT_EQ(cache.size(), 0u);
}

TEST(RangeCache, InsertDropsOverlappingStaleRanges) {
    RangeCache cache;
    cache.insert(range(0x30000, 0x2000, MemType::kCuda));
    cache.insert(range(0x33000, 0x1000, MemType::kCuda));
    MemRange r;
    ASSERT_TRUE(cache.lookup(0x30100, 1, &r));
    cache.insert(range(0x31000, 0x3000, MemType::kDmabuf));  // overlaps both
    EXPECT_EQ(cache.size(), 1u);
    ASSERT_TRUE(cache.lookup(0x31000, 1, &r));
    EXPECT_EQ(r.type, MemType::kDmabuf);
    EXPECT_FALSE(cache.lookup(0x30100, 1, &r)) << "slot must not serve the dropped range";
}

TEST(RangeCache, InsertIfUnchangedRefusesAfterAnInvalidation) {
    RangeCache cache;
    const uint64_t g = cache.generation();
    cache.erase(0x1234);  // e.g. a concurrent release
    EXPECT_FALSE(cache.insert_if_unchanged(range(0x40000, 0x1000), g));
    EXPECT_TRUE(cache.insert_if_unchanged(range(0x40000, 0x1000), cache.generation()));
    EXPECT_EQ(cache.size(), 1u);
}

TEST(RangeCache, InvalidateRemovesEverythingOverlapping) {
    RangeCache cache;
    cache.insert(range(0x10000, 0x1000));
    cache.insert(range(0x12000, 0x1000));
    cache.insert(range(0x14000, 0x1000));
    EXPECT_EQ(cache.invalidate(0x10800, 0x2000), 2u);
    MemRange r;
    EXPECT_TRUE(cache.lookup(0x14000, 1, &r));
    EXPECT_FALSE(cache.lookup(0x12000, 1, &r));
}

TEST(RangeCache, TwoCachesDoNotShareTheSlot) {
    RangeCache a, b;
    a.insert(range(0x50000, 0x1000));
    MemRange r;
    ASSERT_TRUE(a.lookup(0x50000, 1, &r));
    EXPECT_FALSE(b.lookup(0x50000, 1, &r));
}

TEST(RangeCache, RandomChurnNeverReturnsAStaleRange) {
    RangeCache cache;
    std::map<uintptr_t, size_t> model;  // live ranges
    std::mt19937_64 rng(42);
    for (int i = 0; i < 20000; ++i) {
        const uintptr_t slot = 0x100000 + (rng() % 256) * 0x1000;
        if (rng() % 2 == 0) {
            // Overlapping inserts replace what they overlap, like the cache does.
            const size_t len = 0x1000 * (1 + rng() % 3);
            for (auto it = model.begin(); it != model.end();) {
                const bool overlap = it->first < slot + len && slot < it->first + it->second;
                it = overlap ? model.erase(it) : std::next(it);
            }
            model[slot] = len;
            cache.insert(range(slot, len));
        } else {
            model.erase(slot);
            cache.erase(slot);
        }
        for (int k = 0; k < 4; ++k) {
            const uintptr_t p = 0x100000 + rng() % (260 * 0x1000);
            MemRange r;
            const bool hit = cache.lookup(p, 1, &r);
            auto it = model.upper_bound(p);
            const bool expect =
                it != model.begin() && p < std::prev(it)->first + std::prev(it)->second;
            ASSERT_EQ(hit, expect) << "iteration " << i << " p=" << std::hex << p;
            if (hit) {
                EXPECT_EQ(r.base, std::prev(it)->first);
            }
        }
    }
}

TEST(RangeCache, ConcurrentReadersSeeEraseOnceItReturned) {
    RangeCache cache;
    cache.insert(range(0x60000, 0x1000));
    std::atomic<bool> erased{false};
    std::atomic<bool> stale{false};
    std::vector<std::thread> readers;
    for (int t = 0; t < 2; ++t) {
        readers.emplace_back([&] {
            MemRange r;
            for (int i = 0; i < 200000; ++i) {
                const bool was_erased = erased.load(std::memory_order_acquire);
                const bool hit = cache.lookup(0x60008, 8, &r);
                if (was_erased && hit) stale = true;
            }
        });
    }
    cache.erase(0x60000);
    erased.store(true, std::memory_order_release);
    for (auto& t : readers)
        t.join();
    EXPECT_FALSE(stale.load());
}
