// Memory-registration cache of the verbs transport, correct by construction: every hit is
// validated against the physical pages (docs/verbs.md, "Registration").
//
// A registration pins the page frames that back its range when it is made; they cannot be
// freed, reused, migrated or swapped while it exists. So if the frames mapped at the range now
// are exactly the frames recorded when it was registered, the registration still describes the
// buffer; a buffer freed and a new one mapped at the same address necessarily has other
// frames (the old ones are still pinned) and is a miss. The cache records the frame numbers
// of each entry right after registering (registration may fault pages in, or migrate them out
// of movable zones) and compares them on every lookup; a mismatch retires the entry.
//
// Entries are page-aligned ranges with access rights; a lookup hits an entry that contains
// the requested range with at least the requested rights. An entry is reference-counted while
// transfers use it and is never evicted or deregistered then; unused entries sit in an LRU
// list, evicted to keep the cache within an entry count and a number of pinned bytes. When
// every entry is in use and the bound is reached, the request is registered outside the cache
// (per transfer, deregistered on release) rather than failed. Without a PageIdentity (PFNs not
// visible: no CAP_SYS_ADMIN, or SWY_VERBS_RCACHE=off) the cache is disabled and every request
// is such a per-transfer registration.
//
// The device and the page tables sit behind two small interfaces (Registrar, PageIdentity) so
// the logic is unit-tested without either (verbs_reg_cache_test.cpp). No libibverbs here.
//
// Threading: not thread-safe; the verbs interface (and so the worker) serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/verbs/page_identity.h"

namespace swy::tl::verbs {

/// An opaque registration made by a Registrar: its keys and whatever the registrar needs to
/// undo it.
struct RegisteredRange {
    void* handle = nullptr;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};

/// Registers memory with the device (ibv_reg_mr in verbs_registrar.cpp; fakes in tests).
class Registrar {
public:
    virtual ~Registrar() = default;
    /// Register [address, address + length) (length >= 1) with @p access (tl::ZcopyAccess bits).
    /// Errors: kNoMemory (pinning limit or memory), kIoError (the device refused); @p why says
    /// which.
    virtual Status register_range(uintptr_t address, size_t length, unsigned access,
                                  RegisteredRange* out, std::string* why) = 0;
    /// Undo register_range(); @p range is not used again.
    virtual void deregister(const RegisteredRange& range) = 0;
};

/// Bounds of the cache (SWY_VERBS_RCACHE_MAX, SWY_VERBS_RCACHE_ENTRIES).
struct RegCacheLimits {
    size_t max_bytes = size_t{256} << 20;  ///< bytes pinned by cached entries, at most
    size_t max_entries = 128;              ///< cached entries, at most
};

/// Counters (tests, swy-info). A lookup is a hit or a miss; a miss is also counted as stale
/// when an entry contained the range but its pages had changed.
struct RegCacheStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t stale = 0;       ///< entries retired because their pages changed
    uint64_t evictions = 0;   ///< unused entries deregistered (limits, flush, pinning limit)
    uint64_t uncached = 0;    ///< registrations made per transfer, outside the cache
    size_t entries = 0;       ///< registrations the cache holds (found by lookups or stale)
    size_t pinned_bytes = 0;  ///< bytes those registrations cover
};

class RegCache {
private:
    struct Entry;

public:
    /// One use of a registration, for one transfer: keys valid for the requested range while
    /// the handle lives. Destroying it drops the use (an unused cached entry stays registered
    /// until evicted or found stale; an uncached one is deregistered at once). Move-only; it
    /// must not outlive its cache.
    class Handle {
    public:
        Handle() = default;
        Handle(Handle&& other) noexcept { *this = std::move(other); }
        Handle& operator=(Handle&& other) noexcept;
        ~Handle() { reset(); }
        Handle(const Handle&) = delete;
        Handle& operator=(const Handle&) = delete;

        /// Drop the use now (as the destructor does).
        void reset();
        bool valid() const { return entry_ != nullptr; }
        uint32_t lkey() const;
        uint32_t rkey() const;
        /// Whether the registration is a cached one (false: per transfer).
        bool cached() const;
        /// Start and length of the registered range (page-aligned when cached): the keys are
        /// valid for all of it.
        uintptr_t registered_start() const;
        size_t registered_length() const;

    private:
        friend class RegCache;
        RegCache* cache_ = nullptr;
        Entry* entry_ = nullptr;
    };

    /// @p identity null: disabled (every acquire() registers per transfer).
    RegCache(const RegCacheLimits& limits, std::unique_ptr<Registrar> registrar,
             std::unique_ptr<PageIdentity> identity);
    /// Deregisters every registration (handles must be gone by now).
    ~RegCache();
    RegCache(const RegCache&) = delete;
    RegCache& operator=(const RegCache&) = delete;

    /// A registration covering [address, address + length) (length 0 is taken as 1) with at
    /// least @p access (tl::ZcopyAccess bits; remote write implies local write): a validated
    /// cached entry, a new cached entry, or a per-transfer registration.
    /// Errors: kInvalidParam (the range wraps around the address space), and the registrar's
    /// (kNoMemory, kIoError; @p why says why). On error @p out is left empty.
    Status acquire(const void* address, size_t length, unsigned access, Handle* out,
                   std::string* why);
    /// Deregister every cached entry that no transfer uses.
    void flush();

    /// Whether lookups happen (a PageIdentity was given).
    bool active() const { return identity_ != nullptr; }
    const RegCacheStats& stats() const { return stats_; }
    const RegCacheLimits& limits() const { return limits_; }

private:
    enum class Kind : uint8_t { kCached, kStale, kUncached };
    struct Entry {
        uintptr_t start = 0;
        size_t length = 0;
        unsigned access = 0;
        Kind kind = Kind::kUncached;
        uint32_t refs = 0;
        RegisteredRange range;
        std::vector<uint64_t> frames;  // one per page, recorded right after registering
        std::list<Entry>::iterator self;
        std::multimap<uintptr_t, Entry*>::iterator index_pos;  // kCached only
        std::list<Entry*>::iterator lru_pos;                   // kCached with refs == 0
    };

    Entry* lookup(uintptr_t start, uintptr_t end, unsigned access);
    bool pages_unchanged(const Entry& e, uintptr_t start, uintptr_t end);
    bool make_room(size_t bytes);
    Status add(uintptr_t start, size_t length, unsigned access, Kind kind, Entry** out,
               std::string* why);
    void retire(Entry* e);
    void release(Entry* e);
    void destroy(Entry* e);

    RegCacheLimits limits_;
    std::unique_ptr<Registrar> registrar_;
    std::unique_ptr<PageIdentity> identity_;
    size_t page_ = 4096;
    std::list<Entry> entries_;                // every live registration; owns them
    std::multimap<uintptr_t, Entry*> index_;  // cached entries by start
    std::list<Entry*> lru_;                   // unused cached entries, least recent first
    size_t longest_ = 0;                      // longest entry ever indexed (bounds lookups)
    std::vector<uint64_t> scratch_;           // frames read on a lookup
    RegCacheStats stats_;
};

}  // namespace swy::tl::verbs
