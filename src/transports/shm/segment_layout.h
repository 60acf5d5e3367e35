// Layout of a worker's shared receive segment (one memfd per worker, mapped by its senders).
//
//   [SegmentHeader][sender slot table][PIO slot table][shared FIFO cells][PIO ring cells]
//
// All cross-process references are offsets from the segment base; every field a peer reads
// is validated against the mapping's size before use (a corrupt or hostile segment must not
// make us read outside it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/shm/ring.h"

namespace swy::tl::shm {

inline constexpr uint64_t kSegmentMagic = 0x5357595348'4d3031ull;  // "SWYSHM01"
// 5: FIFO headers packed (ring.h); 6: a cell size is the largest message of a FIFO cell or
// PIO record (no header room), a PIO ring holds pio_credits of the largest records.
inline constexpr uint32_t kSegmentVersion = 6;
/// Sender slots a segment offers unless SWY_SHM_MAX_SENDERS says otherwise. A slot is one
/// cache line of the segment, committed only once a sender claims it (the table is not
/// initialised: zero bytes are a free slot).
inline constexpr uint32_t kDefaultMaxSenders = 16384;
/// CellHeader::sender is 16 bits wide.
inline constexpr uint32_t kSenderIndexLimit = 65536;
/// SenderSlot::claiming of a sender that holds no claimed FIFO cell it has not published.
inline constexpr uint64_t kNoClaim = UINT64_MAX;

/// State of a sender slot or PIO slot.
enum SlotState : uint32_t { kSlotFree = 0, kSlotClaimed = 1, kSlotActive = 2, kSlotClosed = 3 };

/// One sender's registration in the receiver's segment, claimed by the sender with a CAS.
/// The receiver reads it the first time a cell names this slot, to learn who is talking.
struct alignas(kCacheLine) SenderSlot {
    std::atomic<uint32_t> state;
    int32_t pid;        ///< sender process
    int32_t memfd;      ///< sender's own segment fd number (for the reverse mapping)
    uint32_t pio_slot;  ///< dedicated ring index, or kNoPioSlot
    uint64_t uid;       ///< sender worker's unique id
    uint64_t segment_size;
    int32_t wake_fd;  ///< sender's wake-up pipe (for the reverse lane)
    /// Set by the receiver (to a Status) when it cannot open its reply lane to this sender
    /// (the sender's own table is full): the sender fails its lane with it instead of
    /// waiting for replies that cannot come.
    std::atomic<int32_t> refused;
    /// The shared-FIFO position this sender last tried to claim, stored before its CAS on
    /// the head and left there until its next claim (kNoClaim: none). A cell that stays
    /// claimed but unpublished belongs to the sender whose word names its position: if that
    /// process is dead, the receiver skips the cell instead of waiting for it forever.
    std::atomic<uint64_t> claiming;
};
static_assert(sizeof(SenderSlot) == kCacheLine);
static_assert(kSlotFree == 0, "an untouched (zero) sender slot must read as free");
inline constexpr uint32_t kNoPioSlot = UINT32_MAX;

/// One dedicated PIO ring of the receive window: a byte ring of variable-size records.
///
/// A record is a CellHeader and its payload, rounded up to a cache line, written at the
/// producer's byte position; its `seq` word holds (position XOR key) and is stored last, so a
/// record is present exactly when seq matches. Records are packed: an 8-byte message takes
/// one line and consecutive messages are consecutive lines, which the hardware prefetcher
/// streams (fixed 4 KiB cells put every message on a new page). A record that would cross
/// the end is preceded by a skip record. The single producer counts free bytes against
/// `consumed`, which the receiver publishes on a line of its own every quarter ring; the
/// receiver never writes into the records, and a send is stores only.
/// The per-ring random key makes stale bytes of an earlier lap (or of an earlier owner)
/// unable to pass for a record unless they equal position XOR key.
struct alignas(kCacheLine) PioSlot {
    std::atomic<uint32_t> state;
    uint32_t sender_slot;
    uint64_t key;  ///< chosen by the sender when it claims the ring, never 0
    alignas(kCacheLine) std::atomic<uint64_t> consumed;
};
inline constexpr uint8_t kPioSkipAm = 0xFE;  ///< record that pads to the end of the ring

/// Bytes a record of @p payload bytes occupies in a PIO ring.
inline constexpr uint64_t pio_record_bytes(uint64_t payload) {
    return (sizeof(CellHeader) + payload + kCacheLine - 1) & ~uint64_t{kCacheLine - 1};
}

/// Where the next record of a PIO ring of @p ring_bytes starts, after one of @p record bytes
/// at @p offset. Records and the ring are whole cache lines, and a record never crosses the
/// ring's end (a skip record pads it), so one that ends there wraps the offset to 0. Sender
/// and receiver keep this offset as they go, instead of a division per record.
inline constexpr uint64_t pio_offset_after(uint64_t offset, uint64_t record, uint64_t ring_bytes) {
    return offset + record == ring_bytes ? 0 : offset + record;
}

struct alignas(kCacheLine) SegmentHeader {
    uint64_t magic;
    uint32_t version;
    int32_t owner_pid;
    uint64_t owner_uid;
    uint64_t total_size;
    uint32_t fifo_cells;
    uint32_t fifo_cell_size;
    uint32_t pio_slots;
    uint32_t pio_credits;
    uint32_t pio_cell_size;
    uint32_t max_senders;  ///< slots in the sender table
    uint64_t sender_table_offset;
    uint64_t pio_table_offset;
    uint64_t fifo_offset;
    uint64_t pio_rings_offset;
    /// Address of 8 bytes in the owner holding owner_uid: a peer reads them with
    /// process_vm_readv to learn whether CMA reaches the owner (kept here, not in the worker
    /// address, so that no pointer of ours is given to anyone who cannot map the segment).
    uint64_t cma_probe_address;
    /// Set by the owner before it blocks, cleared when it wakes; the first sender that
    /// takes it (exchange to 0) writes one byte to the owner's wake-up pipe.
    alignas(kCacheLine) std::atomic<uint32_t> armed;
    /// 1 if senders must publish with a full fence before reading `armed` (the owner cannot
    /// force their stores out with membarrier before it sleeps).
    uint32_t publish_fence;
    /// Shared FIFO head (multi-producer position counter), alone on its cache line.
    alignas(kCacheLine) std::atomic<uint64_t> fifo_head;
    /// Where senders start looking for a free slot (the one after the last claimed), and one
    /// past the highest slot ever claimed (what the receiver scans): on a line of their own,
    /// written only when an endpoint is created.
    alignas(kCacheLine) std::atomic<uint32_t> sender_hint;
    std::atomic<uint32_t> sender_high;
};

/// Sizes of a segment, computed from the configuration (owner) or read from the header (peer).
struct SegmentGeometry {
    uint32_t fifo_cells;
    uint32_t fifo_cell_size;
    uint32_t pio_slots;
    uint32_t pio_credits;
    uint32_t pio_cell_size;
    uint32_t max_senders = kDefaultMaxSenders;

    uint64_t sender_table_offset() const { return sizeof(SegmentHeader); }
    uint64_t pio_table_offset() const {
        return sender_table_offset() + uint64_t{max_senders} * sizeof(SenderSlot);
    }
    uint64_t fifo_offset() const {
        uint64_t end = pio_table_offset() + uint64_t{pio_slots} * sizeof(PioSlot);
        return (end + 4095) & ~uint64_t{4095};
    }
    uint64_t pio_rings_offset() const {
        return fifo_offset() + RingView::region_bytes(fifo_cells, fifo_cell_size);
    }
    /// A PIO ring holds pio_credits of its largest records (pio_cell_size bytes of message
    /// each, behind their CellHeader).
    uint64_t pio_ring_bytes() const {
        return uint64_t{pio_credits} * pio_record_bytes(pio_cell_size);
    }
    uint64_t total_size() const {
        uint64_t end = pio_rings_offset() + uint64_t{pio_slots} * pio_ring_bytes();
        return (end + 4095) & ~uint64_t{4095};
    }
};

}  // namespace swy::tl::shm
