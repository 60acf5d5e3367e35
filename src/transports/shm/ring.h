// Lock-free rings of fixed-size cells in shared memory (the receive FIFO of the shm transport).
//
// Layout: the cells' headers are packed, one kSlotBytes slot per position holding the
// sequence word, the header and up to kInlineBytes of payload; the payload cells
// (cell_size bytes each) follow all the slots and hold only larger messages, and nothing
// else: a cell of cell_size bytes carries a message of cell_size bytes (issue 17: the
// default 8 KiB + 64 B cell carries an 8 KiB MPI message and its protocol header). Consecutive
// small messages (RTS, ATS, 8-byte sends) so take consecutive cache lines of a few pages
// instead of a new page each: with 8 KiB cells every message touched a fresh page of the
// receiver's segment, and a sender going round 2 MiB of each peer's FIFO paid a page-table
// miss per message (~10 us measured per claim on this virtualised host, with 8 ranks on
// 2 cores: more than the whole of ob1's 64 KiB all-to-all step; the dedicated PIO rings are
// packed for the same reason).
//
// Every cell starts with a sequence word (Vyukov's bounded queue): for ring position `pos`,
// the cell is free for the producer when seq == pos, and full for the consumer when
// seq == pos + 1; the consumer hands it back with seq = pos + ncells. This needs no shared
// tail: a producer learns that the ring is full from the cell itself, so a full ring is a
// clean "no resource", never a spin, and the consumer's release stays in its own cache line
// until a producer really needs that cell.
//
// Two producer flavours share one consumer:
//  - claim_shared: senders claim a position with a CAS on the shared head (the common FIFO
//    every sender can use);
//  - claim_private: one sender owns the ring and keeps its head privately.
// The dedicated PIO rings are not RingViews: they are byte rings of packed records with
// credit-based producers (segment_layout.h, PioSlot).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace swy::tl::shm {

/// Header at the start of every cell. The payload follows immediately.
struct CellHeader {
    std::atomic<uint64_t> seq;
    uint8_t am_id;
    uint8_t flags;
    uint16_t sender;  ///< sender slot in the receiver's segment
    uint32_t length;  ///< payload bytes in this cell
};
static_assert(sizeof(CellHeader) == 16);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline constexpr size_t kCacheLine = 64;

/// A view of a ring: cells live in shared memory, the view in each process.
class RingView {
public:
    /// Bytes of one packed header slot (header + inline payload): two cache lines.
    static constexpr uint32_t kSlotBytes = 2 * kCacheLine;
    /// Payload bytes that travel in the slot itself; larger ones go to the payload cell.
    static constexpr uint32_t kInlineBytes = kSlotBytes - sizeof(CellHeader);

    /// Bytes of memory a ring of @p ncells cells of @p cell_size bytes spans (slots, then
    /// payload cells).
    static constexpr uint64_t region_bytes(uint32_t ncells, uint32_t cell_size) {
        return uint64_t{ncells} * (kSlotBytes + cell_size);
    }

    RingView() = default;
    /// @p region: region_bytes(ncells, cell_size) bytes, cache-line aligned.
    RingView(uint8_t* region, uint32_t ncells, uint32_t cell_size)
        : slots_(region),
          cells_(region + size_t{ncells} * kSlotBytes),
          mask_(ncells - 1),
          cell_size_(cell_size) {}

    /// Mark every cell free. Only the owner calls this, before anyone maps the segment.
    void initialise() {
        for (uint32_t i = 0; i <= mask_; ++i) {
            new (cell(i)) CellHeader{};
            cell(i)->seq.store(i, std::memory_order_relaxed);
        }
    }

    /// The header of position @p pos (its packed slot).
    CellHeader* cell(uint64_t pos) const {
        return reinterpret_cast<CellHeader*>(slots_ + (pos & mask_) * size_t{kSlotBytes});
    }
    /// Where the @p length payload bytes of position @p pos live: right after the header in
    /// the slot up to kInlineBytes, else in the position's payload cell. Producer and
    /// consumer both choose by the length, which the consumer must have checked against
    /// payload_capacity() first.
    uint8_t* payload(uint64_t pos, size_t length) const {
        if (length <= kInlineBytes) return reinterpret_cast<uint8_t*>(cell(pos) + 1);
        return cells_ + (pos & mask_) * size_t{cell_size_};
    }
    uint32_t cell_size() const { return cell_size_; }
    uint32_t capacity() const { return mask_ + 1; }
    /// The largest message a position carries: its header lives in the slot, so the whole
    /// payload cell is the message's.
    size_t payload_capacity() const { return cell_size_; }
    bool valid() const { return slots_ != nullptr; }

    // ---- producers ----

    /// Multi-producer claim: CAS on the shared @p head. nullptr when the ring is full.
    /// @p claiming (the sender's word in the receiver's segment) names the position this
    /// producer tries before it tries it, and keeps naming it until its next claim: the
    /// receiver can then tell whose claimed-but-unpublished cell blocks the ring. The release
    /// CAS orders that store before the claim for whoever sees the head moved (one plain
    /// store more per message; the lock-prefixed CAS already orders it on x86).
    CellHeader* claim_shared(std::atomic<uint64_t>& head, uint64_t* pos_out,
                             std::atomic<uint64_t>& claiming) const {
        uint64_t pos = head.load(std::memory_order_relaxed);
        for (;;) {
            CellHeader* c = cell(pos);
            const uint64_t seq = c->seq.load(std::memory_order_acquire);
            const int64_t diff = static_cast<int64_t>(seq - pos);
            if (diff == 0) {
                claiming.store(pos, std::memory_order_relaxed);
                if (head.compare_exchange_weak(pos, pos + 1, std::memory_order_release,
                                               std::memory_order_relaxed)) {
                    *pos_out = pos;
                    return c;
                }
            } else if (diff < 0) {
                // Full. A failed CAS may have left the word naming a cell someone else
                // claimed: clear it, so it cannot pass for that cell's owner.
                claiming.store(UINT64_MAX, std::memory_order_relaxed);  // kNoClaim
                return nullptr;  // the consumer has not released this cell yet: full
            } else {
                pos = head.load(std::memory_order_relaxed);
            }
        }
    }

    /// claim_shared without an owner word: for the ring alone (unit tests, benchmarks).
    CellHeader* claim_shared(std::atomic<uint64_t>& head, uint64_t* pos_out) const {
        std::atomic<uint64_t> unowned{UINT64_MAX};
        return claim_shared(head, pos_out, unowned);
    }

    /// Single-producer claim at the caller's private head. nullptr when full.
    CellHeader* claim_private(uint64_t head) const {
        CellHeader* c = cell(head);
        return c->seq.load(std::memory_order_acquire) == head ? c : nullptr;
    }

    /// Make a claimed cell visible to the consumer. seq_cst so that the producer's following
    /// load of the receiver's "armed" flag cannot be reordered before it (wake-up protocol).
    static void publish(CellHeader* c, uint64_t pos) {
        c->seq.store(pos + 1, std::memory_order_seq_cst);
    }

    // ---- consumer ----

    /// The cell at @p tail if it holds a message, else nullptr.
    CellHeader* peek(uint64_t tail) const {
        CellHeader* c = cell(tail);
        return c->seq.load(std::memory_order_acquire) == tail + 1 ? c : nullptr;
    }

    /// Hand the cell at @p tail back to producers.
    void release(CellHeader* c, uint64_t tail) const {
        c->seq.store(tail + capacity(), std::memory_order_release);
    }

private:
    uint8_t* slots_ = nullptr;
    uint8_t* cells_ = nullptr;
    uint32_t mask_ = 0;
    uint32_t cell_size_ = 0;
};

}  // namespace swy::tl::shm
