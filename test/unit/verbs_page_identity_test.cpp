// The /proc/self/pagemap reader the registration cache validates hits with. Needs PFNs to be
// visible (CAP_SYS_ADMIN: root in CI and in the VM); elsewhere the tests skip with the reason
// the cache itself would give.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "transports/verbs/page_identity.h"

using swy::tl::verbs::PageIdentity;
using swy::tl::verbs::PagemapIdentity;

namespace {

#define OPEN_OR_SKIP(id)                    \
    std::string why_;                       \
    auto id = PagemapIdentity::open(&why_); \
    if (id == nullptr) GTEST_SKIP() << "page frames not visible: " << why_

uint8_t* map_pages(size_t pages, size_t page) {
    void* p =
        mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

TEST(VerbsPageIdentity, TouchedPagesHaveDistinctFramesUntouchedOnesNone) {
    OPEN_OR_SKIP(id);
    const size_t page = id->page_size();
    EXPECT_EQ(page, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    uint8_t* p = map_pages(4, page);
    ASSERT_NE(p, nullptr);
    p[0] = 1;
    p[2 * page] = 1;  // pages 1 and 3 never touched
    uint64_t f[4] = {9, 9, 9, 9};
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), 4, f));
    EXPECT_NE(f[0], PageIdentity::kNoFrame);
    EXPECT_NE(f[2], PageIdentity::kNoFrame);
    EXPECT_NE(f[0], f[2]);
    EXPECT_EQ(f[1], PageIdentity::kNoFrame);
    EXPECT_EQ(f[3], PageIdentity::kNoFrame);
    munmap(p, 4 * page);
}

TEST(VerbsPageIdentity, DroppedPagesReadAsNotPresentAndComeBackAsFreshFrames) {
    OPEN_OR_SKIP(id);
    const size_t page = id->page_size();
    uint8_t* p = map_pages(2, page);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, 2 * page);
    uint64_t before[2], dropped[2], after[2];
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), 2, before));
    // Without a pin the kernel may hand the same frames back, so this checks presence only;
    // the VM test checks that pinned pages come back as other frames (through the cache).
    ASSERT_EQ(madvise(p, 2 * page, MADV_DONTNEED), 0);
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), 2, dropped));
    EXPECT_EQ(dropped[0], PageIdentity::kNoFrame);
    EXPECT_EQ(dropped[1], PageIdentity::kNoFrame);
    std::memset(p, 2, 2 * page);
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), 2, after));
    EXPECT_NE(after[0], PageIdentity::kNoFrame);
    EXPECT_NE(after[1], PageIdentity::kNoFrame);
    munmap(p, 2 * page);
}

TEST(VerbsPageIdentity, FramesArePhysicalTheSamePagesMappedTwiceReadTheSame) {
    OPEN_OR_SKIP(id);
    const size_t page = id->page_size();
    const int fd = memfd_create("swy-page-identity", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(3 * page)), 0);
    void* a = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void* b = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(a, MAP_FAILED);
    ASSERT_NE(b, MAP_FAILED);
    std::memset(a, 7, 3 * page);
    std::memset(b, 7, 3 * page);  // fault b's page table entries in too
    uint64_t fa[3], fb[3];
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(a), 3, fa));
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(b), 3, fb));
    for (int i = 0; i < 3; ++i) {
        EXPECT_NE(fa[i], PageIdentity::kNoFrame);
        EXPECT_EQ(fa[i], fb[i]) << "page " << i;
    }
    EXPECT_EQ(std::set<uint64_t>(fa, fa + 3).size(), 3u);
    munmap(a, 3 * page);
    munmap(b, 3 * page);
    close(fd);
}

TEST(VerbsPageIdentity, ALargeRangeIsReadInOneCallAndAnUnmappedOneIsNotPresent) {
    OPEN_OR_SKIP(id);
    const size_t page = id->page_size();
    const size_t pages = 4096;  // 16 MiB with 4 KiB pages: 32 KiB of pagemap
    uint8_t* p = map_pages(pages, page);
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < pages; ++i)
        p[i * page] = 1;
    std::vector<uint64_t> f(pages);
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), pages, f.data()));
    for (size_t i = 0; i < pages; ++i)
        ASSERT_NE(f[i], PageIdentity::kNoFrame) << "page " << i;
    munmap(p, pages * page);
    ASSERT_TRUE(id->frames(reinterpret_cast<uintptr_t>(p), pages, f.data()));
    for (size_t i = 0; i < pages; ++i)
        ASSERT_EQ(f[i], PageIdentity::kNoFrame) << "page " << i;
}
