#include "memtypes/range_cache.h"

#include <mutex>

namespace swy::mem {
namespace {

std::atomic<uint64_t> g_next_cache_id{1};

// One slot per thread, shared by all caches (the owner id says whose it is). The default
// (general-dynamic) TLS model on purpose: initial-exec marks the library STATIC_TLS, and a
// dlopen() through Open MPI's pml component then fails where the static TLS surplus is
// already used up (ASan builds). The __tls_get_addr call is paid only by lookups, and those
// run only while a device memory plugin is loaded.
struct LastHit {
    uint64_t owner;
    uint64_t generation;
    MemRange range;
};
constinit thread_local LastHit t_last_hit{};

}  // namespace

RangeCache::RangeCache() : id_(g_next_cache_id.fetch_add(1, std::memory_order_relaxed)) {}

bool RangeCache::lookup(uintptr_t ptr, size_t length, MemRange* out) const {
    if (length == 0) length = 1;
    LastHit& slot = t_last_hit;
    // Acquire pairs with the release in erase(): after an invalidation that happened-before
    // this call, the generation differs and the slot is not used.
    if (slot.owner == id_ && slot.generation == generation_.load(std::memory_order_acquire) &&
        slot.range.contains(ptr, length)) [[likely]] {
        *out = slot.range;
        return true;
    }
    return lookup_map(ptr, length, out);
}

bool RangeCache::lookup_map(uintptr_t ptr, size_t length, MemRange* out) const {
    std::shared_lock guard(lock_);
    auto it = ranges_.upper_bound(ptr);
    if (it == ranges_.begin()) return false;
    --it;
    if (!it->second.contains(ptr, length)) return false;
    *out = it->second;
    // Read under the lock: erase() bumps it under the exclusive lock, so this generation is
    // the one the found range belongs to.
    t_last_hit = LastHit{id_, generation_.load(std::memory_order_relaxed), it->second};
    return true;
}

size_t RangeCache::drop_overlapping(uintptr_t base, size_t length) {
    if (length == 0) length = 1;
    const uintptr_t end = base + length;
    size_t dropped = 0;
    auto it = ranges_.upper_bound(base);
    if (it != ranges_.begin()) {
        auto prev = std::prev(it);
        if (prev->second.base + prev->second.length > base) it = prev;
    }
    while (it != ranges_.end() && it->first < end) {
        it = ranges_.erase(it);
        ++dropped;
    }
    return dropped;
}

void RangeCache::insert(const MemRange& range) {
    std::unique_lock guard(lock_);
    if (drop_overlapping(range.base, range.length) != 0) {
        generation_.fetch_add(1, std::memory_order_release);
    }
    ranges_[range.base] = range;
}

bool RangeCache::insert_if_unchanged(const MemRange& range, uint64_t generation) {
    std::unique_lock guard(lock_);
    if (generation_.load(std::memory_order_relaxed) != generation) return false;
    if (drop_overlapping(range.base, range.length) != 0) {
        generation_.fetch_add(1, std::memory_order_release);
    }
    ranges_[range.base] = range;
    return true;
}

bool RangeCache::erase(uintptr_t base) {
    std::unique_lock guard(lock_);
    generation_.fetch_add(1, std::memory_order_release);
    return ranges_.erase(base) != 0;
}

size_t RangeCache::invalidate(uintptr_t ptr, size_t length) {
    std::unique_lock guard(lock_);
    generation_.fetch_add(1, std::memory_order_release);
    return drop_overlapping(ptr, length);
}

size_t RangeCache::size() const {
    std::shared_lock guard(lock_);
    return ranges_.size();
}

}  // namespace swy::mem
