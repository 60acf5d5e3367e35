// Readying a ring's memory before its first message (issue 17). On its first pass over a
// fresh ring, each message found its cache lines in no cache (the kernel had just zeroed the
// pages, or never mapped them): the first 4096 8-byte messages of every PIO lane (one pass of
// a 256 KiB ring of 64-byte records) took 0.28-0.38 us one way against 0.10 after, and each
// page cost a fault on each side on top (126 for one ring). That was the slow first size of
// every OSU run over pml swy. Mapping the pages and reading every line once when the ring is
// opened, on both sides, makes the first pass run at the speed of the rest.
#pragma once

#include <cstddef>

namespace swy::tl::shm {

/// How the caller will use the pages it asks to have ready.
enum class PrefaultAccess { kRead, kWrite };

/// Lines read into the cache by prefault() at most: a larger ring would only evict its own
/// start before the first message arrives.
inline constexpr size_t kPrefaultWarmBytes = 1u << 20;

/**
 * Make every page of [@p start, @p start + @p bytes) of a shared mapping present in this
 * process's page tables (madvise MADV_POPULATE_READ/WRITE; on kernels without them, one read
 * per page), then read each cache line of the first kPrefaultWarmBytes once. Contents are not
 * changed: safe on memory a peer is using. Best effort: whatever fails here happens later,
 * on first use, as before.
 */
void prefault(void* start, size_t bytes, PrefaultAccess access);

}  // namespace swy::tl::shm
