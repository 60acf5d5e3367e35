// Range cache: remembers the non-host ranges that detection found, so that asking a plugin
// (a lock, a map search, or a driver call for CUDA) happens once per allocation, not once per
// message.
//
// An interval map (ordered by base; ranges never overlap) behind a shared_mutex, fronted by a
// per-thread "last hit" slot. The slot is valid while the cache's generation counter is
// unchanged; every erase (and every insert that displaces an older range) bumps the counter,
// so a thread never trusts a slot filled before an invalidation that it could have observed.
// A hit on the slot costs one relaxed-enough atomic load and two compares; no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>

#include "memtypes/memtype.h"

namespace swy::mem {

class RangeCache {
public:
    RangeCache();
    RangeCache(const RangeCache&) = delete;
    RangeCache& operator=(const RangeCache&) = delete;

    /// Remember @p range. Ranges already cached that overlap it are dropped first (the memory
    /// was evidently freed and reused without us being told). Thread-safe.
    void insert(const MemRange& range);

    /// Like insert(), but only if generation() still equals @p generation, i.e. nothing was
    /// invalidated since the caller started asking the plugins. Returns whether it inserted.
    /// This closes the race "detect asked the plugin, another thread freed the range, detect
    /// then cached the stale answer".
    bool insert_if_unchanged(const MemRange& range, uint64_t generation);

    /// The cached range that contains all of [ptr, ptr+length) (length 0 counts as 1).
    /// Returns false on a miss. Thread-safe; lock-free when this thread's last hit matches.
    bool lookup(uintptr_t ptr, size_t length, MemRange* out) const;

    /// Forget the range starting at @p base. Always bumps the generation (even when nothing
    /// was cached there), which the registry's release relies on. Returns whether a range
    /// was removed. Thread-safe.
    bool erase(uintptr_t base);

    /// Forget every range that overlaps [ptr, ptr+length); for memory freed behind our back
    /// (e.g. cudaFree by the application). Returns how many were removed.
    size_t invalidate(uintptr_t ptr, size_t length);

    /// Current generation (increases on every invalidation).
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    size_t size() const;

private:
    bool lookup_map(uintptr_t ptr, size_t length, MemRange* out) const;
    // Caller holds lock_ exclusively. Removes ranges overlapping [base, base+length).
    size_t drop_overlapping(uintptr_t base, size_t length);

    const uint64_t id_;  // distinguishes caches in the per-thread slot (never reused)
    std::atomic<uint64_t> generation_{1};
    mutable std::shared_mutex lock_;
    std::map<uintptr_t, MemRange> ranges_;  // key: base
};

}  // namespace swy::mem
