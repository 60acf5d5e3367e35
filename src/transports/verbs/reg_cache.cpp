// Registration cache with page-frame validation (reg_cache.h).
#include "transports/verbs/reg_cache.h"

#include <algorithm>
#include <utility>

#include "transports/zcopy.h"

namespace swy::tl::verbs {

namespace {

/// Remote write needs local write (verbs rule), so an entry registered for remote write also
/// serves local-write requests.
unsigned normalize(unsigned access) {
    return (access & kZcopyRemoteWrite) != 0 ? access | kZcopyLocalWrite : access;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Handle
// ------------------------------------------------------------------------------------------

RegCache::Handle& RegCache::Handle::operator=(Handle&& other) noexcept {
    if (this != &other) {
        reset();
        cache_ = std::exchange(other.cache_, nullptr);
        entry_ = std::exchange(other.entry_, nullptr);
    }
    return *this;
}

void RegCache::Handle::reset() {
    if (entry_ != nullptr) cache_->release(entry_);
    cache_ = nullptr;
    entry_ = nullptr;
}

uint32_t RegCache::Handle::lkey() const { return entry_->range.lkey; }
uint32_t RegCache::Handle::rkey() const { return entry_->range.rkey; }
bool RegCache::Handle::cached() const { return entry_->kind != Kind::kUncached; }
uintptr_t RegCache::Handle::registered_start() const { return entry_->start; }
size_t RegCache::Handle::registered_length() const { return entry_->length; }

// ------------------------------------------------------------------------------------------
// Cache
// ------------------------------------------------------------------------------------------

RegCache::RegCache(const RegCacheLimits& limits, std::unique_ptr<Registrar> registrar,
                   std::unique_ptr<PageIdentity> identity)
    : limits_(limits), registrar_(std::move(registrar)), identity_(std::move(identity)) {
    if (identity_ != nullptr) page_ = identity_->page_size();
}

RegCache::~RegCache() {
    for (Entry& e : entries_)
        registrar_->deregister(e.range);
}

Status RegCache::acquire(const void* address, size_t length, unsigned access, Handle* out,
                         std::string* why) {
    out->reset();
    const auto addr = reinterpret_cast<uintptr_t>(address);
    length = std::max<size_t>(length, 1);
    if (addr > UINTPTR_MAX - length) {
        *why = "registration: the range wraps around the address space";
        return Status::kInvalidParam;
    }
    access = normalize(access);
    Entry* e = nullptr;
    Status s = Status::kOk;
    const uintptr_t start = addr & ~(uintptr_t{page_} - 1);
    const uintptr_t last = addr + length - 1;  // no overflow: checked above
    const bool alignable = last <= UINTPTR_MAX - page_;
    if (!active() || !alignable) {
        s = add(addr, length, access, Kind::kUncached, &e, why);
    } else {
        const uintptr_t end = (last | (uintptr_t{page_} - 1)) + 1;
        e = lookup(start, end, access);
        if (e != nullptr) {
            ++stats_.hits;
            if (e->refs == 0) lru_.erase(e->lru_pos);  // in use: not evictable any more
        } else {
            ++stats_.misses;
            const size_t bytes = end - start;
            if (bytes <= limits_.max_bytes && make_room(bytes)) {
                s = add(start, bytes, access, Kind::kCached, &e, why);
            } else {
                // Every entry is in use (or the range alone exceeds the bound): per transfer.
                s = add(addr, length, access, Kind::kUncached, &e, why);
            }
        }
    }
    if (s != Status::kOk) return s;
    ++e->refs;
    out->cache_ = this;
    out->entry_ = e;
    return Status::kOk;
}

RegCache::Entry* RegCache::lookup(uintptr_t start, uintptr_t end, unsigned access) {
    // Candidates start at or before @p start and no further back than the longest entry.
    auto it = index_.upper_bound(start);
    while (it != index_.begin()) {
        const auto cur = std::prev(it);
        Entry* e = cur->second;
        if (start - e->start > longest_) break;
        if (e->start + e->length >= end && (e->access & access) == access) {
            if (pages_unchanged(*e, start, end)) return e;
            ++stats_.stale;
            retire(e);  // erases cur only: `it` stays valid and prev(it) is the next candidate
            continue;
        }
        it = cur;
    }
    return nullptr;
}

bool RegCache::pages_unchanged(const Entry& e, uintptr_t start, uintptr_t end) {
    const size_t pages = (end - start) / page_;
    if (scratch_.size() < pages) scratch_.resize(pages);
    if (!identity_->frames(start, pages, scratch_.data())) return false;
    // Recorded frames are never kNoFrame (add() does not cache such entries), so a page that
    // is not present now never matches.
    return std::equal(scratch_.begin(), scratch_.begin() + static_cast<ptrdiff_t>(pages),
                      e.frames.begin() + static_cast<ptrdiff_t>((start - e.start) / page_));
}

bool RegCache::make_room(size_t bytes) {
    while (stats_.entries + 1 > limits_.max_entries ||
           stats_.pinned_bytes + bytes > limits_.max_bytes) {
        if (lru_.empty()) return false;
        ++stats_.evictions;
        retire(lru_.front());
    }
    return true;
}

Status RegCache::add(uintptr_t start, size_t length, unsigned access, Kind kind, Entry** out,
                     std::string* why) {
    RegisteredRange range;
    Status s = registrar_->register_range(start, length, access, &range, why);
    if (s == Status::kNoMemory && !lru_.empty()) {
        // Probably the pinning limit (RLIMIT_MEMLOCK): give back what no transfer uses, retry.
        flush();
        s = registrar_->register_range(start, length, access, &range, why);
    }
    if (s != Status::kOk) return s;
    entries_.emplace_back();
    Entry* e = &entries_.back();
    e->self = std::prev(entries_.end());
    e->start = start;
    e->length = length;
    e->access = access;
    e->range = range;
    e->kind = kind;
    if (kind == Kind::kCached) {
        // Read the frames only now: registering may have faulted pages in (first touch) or
        // migrated them before pinning. A page we cannot identify makes the entry per-transfer.
        e->frames.resize(length / page_);
        const bool known = identity_->frames(start, e->frames.size(), e->frames.data()) &&
                           std::find(e->frames.begin(), e->frames.end(), PageIdentity::kNoFrame) ==
                               e->frames.end();
        if (known) {
            e->index_pos = index_.emplace(start, e);
            longest_ = std::max(longest_, length);
            ++stats_.entries;
            stats_.pinned_bytes += length;
        } else {
            e->kind = Kind::kUncached;
            e->frames.clear();
        }
    }
    if (e->kind == Kind::kUncached) ++stats_.uncached;
    *out = e;
    return Status::kOk;
}

void RegCache::retire(Entry* e) {
    // Out of the index at once; deregistered when the last transfer using it is done.
    index_.erase(e->index_pos);
    if (e->refs == 0) {
        lru_.erase(e->lru_pos);
        destroy(e);
    } else {
        e->kind = Kind::kStale;
    }
}

void RegCache::release(Entry* e) {
    if (--e->refs != 0) return;
    if (e->kind == Kind::kCached) {
        e->lru_pos = lru_.insert(lru_.end(), e);
    } else {
        destroy(e);
    }
}

void RegCache::destroy(Entry* e) {
    if (e->kind != Kind::kUncached) {
        --stats_.entries;
        stats_.pinned_bytes -= e->length;
    }
    registrar_->deregister(e->range);
    entries_.erase(e->self);
}

void RegCache::flush() {
    while (!lru_.empty()) {
        ++stats_.evictions;
        retire(lru_.front());
    }
}

}  // namespace swy::tl::verbs
