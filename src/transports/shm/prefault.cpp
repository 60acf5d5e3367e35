#include "transports/shm/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "transports/shm/segment_layout.h"

namespace swy::tl::shm {
namespace {

// Linux 5.14's values, spelled here for C libraries whose headers predate them.
constexpr int kMadvPopulateRead = 22;
constexpr int kMadvPopulateWrite = 23;

// One read per @p stride bytes of [first, end): what maps a page, or brings a line in. The
// reads race with a peer writing records (a thread of this process in loopback tests) and
// their values are thrown away: not instrumented for ThreadSanitizer.
__attribute__((no_sanitize("thread"))) void touch(uintptr_t first, uintptr_t end,
                                                  uintptr_t stride) {
    unsigned char sink = 0;
    for (uintptr_t p = first; p < end; p += stride)
        sink ^= *reinterpret_cast<const volatile unsigned char*>(p);
    asm volatile("" : : "r"(sink));  // the reads are the point: keep them
}

}  // namespace

void prefault(void* start, size_t bytes, PrefaultAccess access) {
    if (bytes == 0) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(start);
    const uintptr_t first = begin & ~(page - 1);
    const uintptr_t end = begin + bytes;
    // The kernel rounds the length up to whole pages: the last one holds ring bytes, so it is
    // inside the file (no SIGBUS) and inside the mapping.
    const int advice = access == PrefaultAccess::kWrite ? kMadvPopulateWrite : kMadvPopulateRead;
    if (madvise(reinterpret_cast<void*>(first), end - first, advice) != 0) {
        // Older kernel (EINVAL): a read per page maps it. A shared writable mapping of a memfd
        // takes no write-protect fault later, so reading is enough for a sender too.
        touch(first, end, page);
    }
    // Mapped pages still miss every cache on first use (the kernel zeroed them with stores
    // that bypass it): bring the lines in now, not one message at a time.
    touch(begin & ~uintptr_t{kCacheLine - 1}, begin + std::min(bytes, kPrefaultWarmBytes),
          kCacheLine);
}

}  // namespace swy::tl::shm
