// The context's table of memory mapped for remote access (swy_mem_map / unmap / query), and
// the key table peers check keys against.
//
// The key table is a memfd segment of fixed slots, one per live mapping. Same-host peers map
// it read-only through /proc/<owner pid>/fd/<n> (the way the shm transport opens a peer's
// receive segment), so an initiator can check a key -- secret, range, rights -- before every
// direct access without the owner running anything. A slot is published seqlock-style: the
// owner writes base, length, access and segment fd, then stores the secret (release); unmap
// stores 0 into the secret first. A reader loads the secret (acquire), the fields, then the
// secret again; the fields are the mapping's only if both loads equal the key's secret.
// Secrets are 64 random bits per mapping and never 0, so a slot reused for a new mapping never
// matches an old key.
//
// Memory allocated with SWY_MEM_MAP_ALLOCATE lives in its own memfd segment: one header page
// (magic and a cookie equal to the mapping's secret, so a peer that opens an fd number the
// owner has since reused for something else notices), then the page-rounded data, which the
// owner maps at the address it hands out and peers map on first use.
#pragma once

#include <switchyard/rma.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace swy::rma {

/// One slot of the key table. Every field is an atomic so that peers and other threads may
/// read it while the owner rewrites the slot (see the file comment for the protocol).
struct KeySlot {
    std::atomic<uint64_t> secret;  ///< 0: free
    std::atomic<uint64_t> base;
    std::atomic<uint64_t> length;
    std::atomic<uint32_t> access;
    std::atomic<int32_t> segment_fd;  ///< memfd of an allocated mapping in the owner; -1: none
};
static_assert(sizeof(KeySlot) == 32);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

/// First bytes of the key table segment: what a peer checks before it trusts the slots.
struct KeyTableHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t slots;     ///< number of KeySlot after the header
    int32_t owner_pid;  ///< the process whose fd this is (a peer compares the verified pid)
    uint32_t reserved;
    uint64_t table_id;  ///< random per table (keys carry it: a peer caches tables by it)
    uint8_t pad[32];
};
static_assert(sizeof(KeyTableHeader) == 64);

inline constexpr uint64_t kKeyTableMagic = 0x5357594b45595442ull;  // "SWYKEYTB"
inline constexpr uint32_t kKeyTableVersion = 1;
/// Mappings one context may hold at once (slot count of the key table).
inline constexpr uint32_t kKeyTableSlots = 8192;
inline constexpr size_t kKeyTableBytes = sizeof(KeyTableHeader) + kKeyTableSlots * sizeof(KeySlot);

/// Header page of an allocated segment.
struct SegmentCookie {
    uint64_t magic;
    std::atomic<uint64_t> cookie;  ///< the mapping's secret; 0 after unmap
    uint64_t length;               ///< data bytes after the header page (page-rounded)
};
inline constexpr uint64_t kSegmentCookieMagic = 0x53575953454747ull;  // "SWYSEGG"

/// The slot's fields as one consistent snapshot.
struct SlotView {
    uint64_t base = 0;
    uint64_t length = 0;
    uint32_t access = 0;
    int32_t segment_fd = -1;
};

/// Read @p slot as a mapping named by @p secret (non-zero): true and *out filled if the slot
/// holds that mapping now; false if it is free or holds another one. Lock-free; safe on a
/// table mapped from another process.
bool read_slot(const KeySlot& slot, uint64_t secret, SlotView* out);

/// True if [address, address + length) lies inside @p view and @p access is granted. Length 0
/// is inside when address is within [base, base + length].
bool slot_grants(const SlotView& view, uint64_t address, uint64_t length, uint32_t access);

/// The system page size (cached).
size_t page_size();

/// One mapping (what a swy_mem_h points to).
struct Mapping {
    uint64_t magic = 0;  ///< kMappingMagic while alive: a bogus or unmapped handle is refused
    uint32_t slot = 0;
    uint64_t secret = 0;
    uint8_t* address = nullptr;  ///< what the user sees
    size_t length = 0;
    uint32_t access = 0;
    swy_memtype_t memtype = SWY_MEMTYPE_HOST;
    bool allocated = false;
    // Allocated only:
    common::UniqueFd memfd;
    SegmentCookie* header = nullptr;  ///< header page (mapped on its own)
    size_t mapped_length = 0;         ///< data bytes mapped at address (page-rounded)
};
inline constexpr uint64_t kMappingMagic = 0x5357594d41505047ull;  // "SWYMAPPG"

/// The context's mappings. Thread safety: every method from any thread (a mutex serialises
/// map and unmap; lookups of slots are lock-free).
class MemTable {
public:
    MemTable() = default;
    MemTable(const MemTable&) = delete;
    MemTable& operator=(const MemTable&) = delete;
    /// Unmaps whatever the application left mapped.
    ~MemTable();

    /// swy_mem_map: parameters already read (@p flags, @p access validated by the caller).
    /// kNoResource: FIXED address taken, or the key table is full; kIoError: a memfd or mmap
    /// failed (@p why says which).
    Status map(void* address, size_t length, uint32_t flags, uint32_t access, swy_memtype_t memtype,
               Mapping** out, std::string* why);
    /// swy_mem_unmap: the secret is cleared first, so no key works from this point on.
    /// kInvalidParam: not a live mapping of this table.
    Status unmap(Mapping* m);

    /// The owner-side check behind validate_access (rma.h).
    Status validate(uint32_t slot, uint64_t secret, uint64_t address, size_t length,
                    uint32_t access, uint8_t** local) const;

    /// The key table: created on the first map(); -1 / null before.
    int table_fd() const { return table_fd_.get(); }
    uint64_t table_id() const { return table_id_; }
    const KeySlot* slots() const { return slots_.load(std::memory_order_acquire); }

private:
    Status ensure_table(std::string* why);
    Status allocate(void* address, size_t length, uint32_t flags, Mapping* m, std::string* why);

    mutable std::mutex lock_;
    common::UniqueFd table_fd_;
    uint8_t* table_ = nullptr;              ///< kKeyTableBytes, read-write here
    std::atomic<KeySlot*> slots_{nullptr};  ///< published last: lock-free readers load it
    uint64_t table_id_ = 0;
    std::vector<uint32_t> free_slots_;
    std::vector<Mapping*> live_;  ///< by slot (null: free); owned
};

/// A random non-zero 64-bit value (getrandom).
uint64_t random_nonzero64();

}  // namespace swy::rma
