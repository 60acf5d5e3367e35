// The verbs registration cache (reg_cache.h) driven through a fake device and fake page
// tables: which lookups hit, which registrations are made and undone, and that a range whose
// pages changed is never served from the cache.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transports/verbs/reg_cache.h"
#include "transports/zcopy.h"

using swy::Status;
using swy::tl::kZcopyLocal;
using swy::tl::kZcopyLocalWrite;
using swy::tl::kZcopyRemoteRead;
using swy::tl::kZcopyRemoteWrite;
using swy::tl::verbs::PageIdentity;
using swy::tl::verbs::RegCache;
using swy::tl::verbs::RegCacheLimits;
using swy::tl::verbs::RegisteredRange;
using swy::tl::verbs::Registrar;

namespace {

constexpr size_t kPage = 4096;
constexpr uintptr_t kBase = 0x7f0000100000;  // never dereferenced: the fakes only compare

/// Page tables: a frame per page address; pages never mapped read as not present.
struct FakePages {
    std::map<uintptr_t, uint64_t> frame;
    uint64_t next = 1000;
    int reads = 0;
    bool fail = false;
    /// Map fresh frames at @p pages pages from @p address (a new mapping, or first touch).
    void map(uintptr_t address, size_t pages) {
        for (size_t i = 0; i < pages; ++i)
            frame[address + i * kPage] = next++;
    }
    /// Drop the pages (munmap, madvise(DONTNEED)): not present until mapped again.
    void drop(uintptr_t address, size_t pages) {
        for (size_t i = 0; i < pages; ++i)
            frame.erase(address + i * kPage);
    }
};

class FakeIdentity final : public PageIdentity {
public:
    explicit FakeIdentity(FakePages* p) : p_(p) {}
    size_t page_size() const override { return kPage; }
    bool frames(uintptr_t page_address, size_t pages, uint64_t* out) override {
        EXPECT_EQ(page_address % kPage, 0u) << "frames asked for an unaligned address";
        ++p_->reads;
        if (p_->fail) return false;
        for (size_t i = 0; i < pages; ++i) {
            auto it = p_->frame.find(page_address + i * kPage);
            out[i] = it == p_->frame.end() ? kNoFrame : it->second;
        }
        return true;
    }

private:
    FakePages* p_;
};

/// The device: every live registration, by key.
struct FakeDevice {
    struct Mr {
        uintptr_t address;
        size_t length;
        unsigned access;
    };
    std::map<uint32_t, Mr> live;
    uint32_t next_key = 1;
    int registrations = 0;
    int deregistrations = 0;
    Status fail_next = Status::kOk;
    size_t pin_limit = SIZE_MAX;  // kNoMemory when live bytes would exceed it (RLIMIT_MEMLOCK)
    size_t live_bytes() const {
        size_t n = 0;
        for (const auto& [k, m] : live)
            n += m.length;
        return n;
    }
    bool registered(uint32_t key) const { return live.count(key) != 0; }
};

class FakeRegistrar final : public Registrar {
public:
    explicit FakeRegistrar(FakeDevice* d) : d_(d) {}
    Status register_range(uintptr_t address, size_t length, unsigned access, RegisteredRange* out,
                          std::string* why) override {
        EXPECT_GE(length, 1u);
        if (d_->fail_next != Status::kOk) {
            *why = "fake: refused";
            return std::exchange(d_->fail_next, Status::kOk);
        }
        if (d_->live_bytes() + length > d_->pin_limit) {
            *why = "fake: over the pinning limit";
            return Status::kNoMemory;
        }
        ++d_->registrations;
        const uint32_t key = d_->next_key++;
        d_->live[key] = {address, length, access};
        out->handle = reinterpret_cast<void*>(uintptr_t{key});
        out->lkey = key;
        out->rkey = key + 0x10000;
        return Status::kOk;
    }
    void deregister(const RegisteredRange& range) override {
        const auto key = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(range.handle));
        EXPECT_EQ(d_->live.erase(key), 1u) << "deregistered twice or never registered: " << key;
        ++d_->deregistrations;
    }

private:
    FakeDevice* d_;
};

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

struct Fixture {
    FakePages pages;
    FakeDevice dev;
    std::unique_ptr<RegCache> cache;

    explicit Fixture(RegCacheLimits limits = {}, bool enabled = true) {
        cache =
            std::make_unique<RegCache>(limits, std::make_unique<FakeRegistrar>(&dev),
                                       enabled ? std::make_unique<FakeIdentity>(&pages) : nullptr);
        pages.map(kBase, 64);  // 256 KiB of touched memory
    }
    RegCache::Handle get(uintptr_t address, size_t length, unsigned access = kZcopyRemoteRead) {
        RegCache::Handle h;
        std::string why;
        EXPECT_EQ(cache->acquire(at(address), length, access, &h, &why), Status::kOk) << why;
        return h;
    }
};

}  // namespace

TEST(VerbsRegCache, SecondUseOfABufferHitsWithTheSameKeysAndNoRegistration) {
    Fixture f;
    uint32_t key = 0;
    {
        RegCache::Handle h = f.get(kBase + 100, 3 * kPage);
        ASSERT_TRUE(h.valid());
        EXPECT_TRUE(h.cached());
        // Page-aligned: the partial first and last pages are included.
        EXPECT_EQ(h.registered_start(), kBase);
        EXPECT_EQ(h.registered_length(), 4 * kPage);
        key = h.lkey();
    }
    EXPECT_TRUE(f.dev.registered(key)) << "an unused cached entry stays registered";
    RegCache::Handle h = f.get(kBase + 100, 3 * kPage);
    EXPECT_EQ(h.lkey(), key);
    EXPECT_EQ(h.rkey(), key + 0x10000);
    EXPECT_EQ(f.dev.registrations, 1);
    EXPECT_EQ(f.cache->stats().hits, 1u);
    EXPECT_EQ(f.cache->stats().misses, 1u);
    EXPECT_EQ(f.cache->stats().entries, 1u);
    EXPECT_EQ(f.cache->stats().pinned_bytes, 4 * kPage);
}

TEST(VerbsRegCache, RangeInsideAnEntryHitsAndOneByteBeyondMisses) {
    Fixture f;
    const uint32_t key = f.get(kBase, 4 * kPage).lkey();
    EXPECT_EQ(f.get(kBase + kPage, 2 * kPage).lkey(), key);
    EXPECT_EQ(f.get(kBase + 4 * kPage - 1, 1).lkey(), key);  // last byte of the entry
    EXPECT_NE(f.get(kBase + 4 * kPage - 1, 2).lkey(), key);  // one byte past it
    EXPECT_EQ(f.cache->stats().hits, 2u);
    EXPECT_EQ(f.cache->stats().misses, 2u);
}

TEST(VerbsRegCache, RemappedRangeIsDetectedStaleAndNeverReturned) {
    Fixture f;
    const uint32_t old_key = f.get(kBase, 8 * kPage).lkey();
    // munmap + mmap at the same address: the same virtual range, other frames.
    f.pages.drop(kBase, 8);
    f.pages.map(kBase, 8);
    RegCache::Handle h = f.get(kBase, 8 * kPage);
    EXPECT_NE(h.lkey(), old_key);
    EXPECT_FALSE(f.dev.registered(old_key)) << "the stale registration pins the old pages";
    EXPECT_EQ(f.cache->stats().stale, 1u);
    EXPECT_EQ(f.cache->stats().hits, 0u);
    EXPECT_EQ(f.cache->stats().entries, 1u);
    // The fresh entry validates against the new pages.
    EXPECT_EQ(f.get(kBase, 8 * kPage).lkey(), h.lkey());
    EXPECT_EQ(f.cache->stats().hits, 1u);
}

TEST(VerbsRegCache, OneChangedPageOrOneMissingPageMakesTheEntryStale) {
    for (bool drop_only : {false, true}) {
        SCOPED_TRACE(drop_only ? "page not present (madvise DONTNEED)" : "one page remapped");
        Fixture f;
        const uint32_t old_key = f.get(kBase, 8 * kPage).lkey();
        f.pages.drop(kBase + 5 * kPage, 1);
        if (!drop_only) f.pages.map(kBase + 5 * kPage, 1);
        EXPECT_NE(f.get(kBase, 8 * kPage).lkey(), old_key);
        EXPECT_EQ(f.cache->stats().stale, 1u);
    }
}

TEST(VerbsRegCache, OnlyThePagesOfTheRequestAreCompared) {
    Fixture f;
    const uint32_t key = f.get(kBase, 8 * kPage).lkey();
    f.pages.drop(kBase + 7 * kPage, 1);
    f.pages.map(kBase + 7 * kPage, 1);
    // Pages 0..6 are still the registered ones: the keys are right for them.
    EXPECT_EQ(f.get(kBase, 7 * kPage).lkey(), key);
    EXPECT_EQ(f.cache->stats().stale, 0u);
    EXPECT_NE(f.get(kBase + 6 * kPage, 2 * kPage).lkey(), key);
    EXPECT_EQ(f.cache->stats().stale, 1u);
}

TEST(VerbsRegCache, StaleEntryInUseIsDeregisteredOnlyAfterItsLastUse) {
    Fixture f;
    RegCache::Handle first = f.get(kBase, 2 * kPage);
    const uint32_t old_key = first.lkey();
    f.pages.drop(kBase, 2);
    f.pages.map(kBase, 2);
    RegCache::Handle second = f.get(kBase, 2 * kPage);
    EXPECT_NE(second.lkey(), old_key);
    EXPECT_TRUE(f.dev.registered(old_key)) << "a transfer still uses it";
    EXPECT_EQ(f.cache->stats().entries, 2u);
    EXPECT_EQ(f.cache->stats().pinned_bytes, 4 * kPage);
    first.reset();
    EXPECT_FALSE(f.dev.registered(old_key));
    EXPECT_EQ(f.cache->stats().entries, 1u);
    EXPECT_EQ(f.cache->stats().pinned_bytes, 2 * kPage);
    // It is not found again either.
    EXPECT_EQ(f.get(kBase, 2 * kPage).lkey(), second.lkey());
}

TEST(VerbsRegCache, EntriesInUseAreNeverEvictedAndTheOverflowIsRegisteredPerTransfer) {
    Fixture f({.max_bytes = SIZE_MAX, .max_entries = 2});
    RegCache::Handle a = f.get(kBase, kPage);
    RegCache::Handle b = f.get(kBase + kPage, kPage);
    uint32_t extra_key = 0;
    {
        RegCache::Handle c = f.get(kBase + 2 * kPage + 8, 16);
        EXPECT_FALSE(c.cached());
        // Per transfer: exactly the requested bytes, as without a cache.
        EXPECT_EQ(f.dev.live.at(c.lkey()).address, kBase + 2 * kPage + 8);
        EXPECT_EQ(f.dev.live.at(c.lkey()).length, 16u);
        extra_key = c.lkey();
        EXPECT_TRUE(f.dev.registered(a.lkey()));
        EXPECT_TRUE(f.dev.registered(b.lkey()));
    }
    EXPECT_FALSE(f.dev.registered(extra_key)) << "a per-transfer registration ends with it";
    EXPECT_EQ(f.cache->stats().uncached, 1u);
    EXPECT_EQ(f.cache->stats().evictions, 0u);
    EXPECT_EQ(f.cache->stats().entries, 2u);
}

TEST(VerbsRegCache, EntryCountBoundEvictsTheLeastRecentlyUsed) {
    Fixture f({.max_bytes = SIZE_MAX, .max_entries = 2});
    const uint32_t a = f.get(kBase, kPage).lkey();
    const uint32_t b = f.get(kBase + kPage, kPage).lkey();
    EXPECT_EQ(f.get(kBase, kPage).lkey(), a);  // a is now the most recent
    const uint32_t c = f.get(kBase + 2 * kPage, kPage).lkey();
    EXPECT_TRUE(f.dev.registered(a));
    EXPECT_FALSE(f.dev.registered(b));
    EXPECT_TRUE(f.dev.registered(c));
    EXPECT_EQ(f.cache->stats().evictions, 1u);
    EXPECT_EQ(f.cache->stats().entries, 2u);
    EXPECT_EQ(f.get(kBase + 2 * kPage, kPage).lkey(), c);
    EXPECT_EQ(f.get(kBase, kPage).lkey(), a);
}

TEST(VerbsRegCache, PinnedByteBoundAtNMinusOneNAndNPlusOnePages) {
    // n = 4 pages: an entry of 4 pages is cached, one of 5 pages is registered per transfer.
    Fixture f({.max_bytes = 4 * kPage, .max_entries = 100});
    EXPECT_TRUE(f.get(kBase, 3 * kPage).cached());
    EXPECT_TRUE(f.get(kBase + 8 * kPage, kPage).cached());  // 3 + 1 = n: both stay
    EXPECT_EQ(f.cache->stats().pinned_bytes, 4 * kPage);
    EXPECT_EQ(f.cache->stats().evictions, 0u);
    EXPECT_TRUE(f.get(kBase + 16 * kPage, 4 * kPage).cached());  // n: evicts both
    EXPECT_EQ(f.cache->stats().evictions, 2u);
    EXPECT_EQ(f.cache->stats().pinned_bytes, 4 * kPage);
    EXPECT_FALSE(f.get(kBase + 24 * kPage, 5 * kPage).cached());  // n + 1: never fits
    EXPECT_EQ(f.cache->stats().evictions, 2u) << "nothing evicted for a range that cannot fit";
    EXPECT_EQ(f.dev.live_bytes(), 4 * kPage);
}

TEST(VerbsRegCache, ByteBoundEvictsOnlyWhatIsNeeded) {
    Fixture f({.max_bytes = 4 * kPage, .max_entries = 100});
    const uint32_t a = f.get(kBase, 2 * kPage).lkey();
    const uint32_t b = f.get(kBase + 8 * kPage, kPage).lkey();
    const uint32_t c = f.get(kBase + 16 * kPage, 2 * kPage).lkey();  // 2 + 1 + 2 > 4: a goes
    EXPECT_FALSE(f.dev.registered(a));
    EXPECT_TRUE(f.dev.registered(b));
    EXPECT_TRUE(f.dev.registered(c));
    EXPECT_EQ(f.cache->stats().pinned_bytes, 3 * kPage);
}

TEST(VerbsRegCache, DisabledCacheRegistersEveryTransferExactly) {
    Fixture f({}, /*enabled=*/false);
    EXPECT_FALSE(f.cache->active());
    uint32_t k1 = 0;
    {
        RegCache::Handle h = f.get(kBase + 100, 5000);
        EXPECT_FALSE(h.cached());
        EXPECT_EQ(f.dev.live.at(h.lkey()).address, kBase + 100);
        EXPECT_EQ(f.dev.live.at(h.lkey()).length, 5000u);
        k1 = h.lkey();
    }
    EXPECT_TRUE(f.dev.live.empty());
    EXPECT_NE(f.get(kBase + 100, 5000).lkey(), k1);
    EXPECT_EQ(f.dev.registrations, 2);
    EXPECT_EQ(f.cache->stats().hits, 0u);
    EXPECT_EQ(f.cache->stats().misses, 0u);
    EXPECT_EQ(f.cache->stats().uncached, 2u);
    EXPECT_EQ(f.pages.reads, 0) << "no pagemap reads when disabled";
}

TEST(VerbsRegCache, LookupSpanningTwoEntriesRegistersItsOwnRange) {
    Fixture f;
    const uint32_t a = f.get(kBase, 2 * kPage).lkey();
    const uint32_t b = f.get(kBase + 2 * kPage, 2 * kPage).lkey();
    RegCache::Handle span = f.get(kBase + kPage, 2 * kPage);  // last page of a, first of b
    EXPECT_NE(span.lkey(), a);
    EXPECT_NE(span.lkey(), b);
    EXPECT_EQ(span.registered_start(), kBase + kPage);
    EXPECT_EQ(span.registered_length(), 2 * kPage);
    EXPECT_EQ(f.cache->stats().misses, 3u);
    // All three stay usable for what they contain.
    EXPECT_EQ(f.get(kBase + kPage, 2 * kPage).lkey(), span.lkey());
    EXPECT_EQ(f.get(kBase, 2 * kPage).lkey(), a);
    EXPECT_EQ(f.get(kBase + 3 * kPage, kPage).lkey(), b);
    EXPECT_EQ(f.cache->stats().hits, 3u);
}

TEST(VerbsRegCache, AnEntryServesOnlyRequestsWithinItsAccessRights) {
    Fixture f;
    const uint32_t ro = f.get(kBase, kPage, kZcopyRemoteRead).lkey();
    const uint32_t rw = f.get(kBase, kPage, kZcopyRemoteWrite).lkey();
    EXPECT_NE(ro, rw);
    EXPECT_EQ(f.dev.live.at(rw).access, unsigned{kZcopyRemoteWrite | kZcopyLocalWrite});
    // Remote write implies local write: the second entry serves a READ target too.
    EXPECT_EQ(f.get(kBase, kPage, kZcopyLocalWrite).lkey(), rw);
    const uint32_t local = f.get(kBase, kPage, kZcopyLocal).lkey();
    EXPECT_TRUE(local == ro || local == rw);
    EXPECT_EQ(f.dev.registrations, 2);
}

TEST(VerbsRegCache, PagesThatCannotBeIdentifiedAreRegisteredPerTransfer) {
    Fixture f;
    f.pages.fail = true;  // pagemap unreadable right after registering
    RegCache::Handle h = f.get(kBase, kPage);
    EXPECT_FALSE(h.cached());
    EXPECT_EQ(f.cache->stats().entries, 0u);
    h.reset();
    EXPECT_TRUE(f.dev.live.empty());
    // A page still not present after registration (say, a mapping the kernel pins without
    // populating) is the same.
    f.pages.fail = false;
    f.pages.drop(kBase, 1);
    EXPECT_FALSE(f.get(kBase, kPage).cached());
}

TEST(VerbsRegCache, UnreadablePagesOnALookupRetireTheEntry) {
    Fixture f;
    const uint32_t key = f.get(kBase, kPage).lkey();
    f.pages.fail = true;
    RegCache::Handle h = f.get(kBase, kPage);
    EXPECT_NE(h.lkey(), key);
    EXPECT_FALSE(h.cached());
    EXPECT_EQ(f.cache->stats().stale, 1u);
}

TEST(VerbsRegCache, PinningLimitGivesBackUnusedEntriesAndRetries) {
    Fixture f;
    f.dev.pin_limit = 4 * kPage;
    f.get(kBase, 3 * kPage);
    RegCache::Handle h = f.get(kBase + 8 * kPage, 2 * kPage);  // 3 + 2 > 4: kNoMemory, retried
    EXPECT_TRUE(h.valid());
    EXPECT_EQ(f.cache->stats().evictions, 1u);
    EXPECT_EQ(f.dev.live_bytes(), 2 * kPage);
}

TEST(VerbsRegCache, BadRangesAndDeviceErrorsAreReportedNotCached) {
    Fixture f;
    RegCache::Handle h;
    std::string why;
    EXPECT_EQ(f.cache->acquire(at(UINTPTR_MAX - 10), 20, kZcopyLocal, &h, &why),
              Status::kInvalidParam);
    EXPECT_FALSE(h.valid());
    EXPECT_FALSE(why.empty());
    f.dev.fail_next = Status::kIoError;
    EXPECT_EQ(f.cache->acquire(at(kBase), kPage, kZcopyLocal, &h, &why), Status::kIoError);
    EXPECT_FALSE(h.valid());
    EXPECT_EQ(f.cache->stats().entries, 0u);
    EXPECT_EQ(f.cache->stats().uncached, 0u) << "a failed registration is not counted";
    // Zero bytes still get a key (one byte, one page).
    EXPECT_EQ(f.get(kBase, 0).registered_length(), kPage);
}

TEST(VerbsRegCache, FlushAndDestructionDeregisterEverything) {
    Fixture f;
    RegCache::Handle in_use = f.get(kBase, kPage);
    f.get(kBase + kPage, kPage);
    f.cache->flush();
    EXPECT_EQ(f.dev.live.size(), 1u) << "flush keeps what a transfer uses";
    in_use.reset();
    f.cache.reset();
    EXPECT_TRUE(f.dev.live.empty());
}
