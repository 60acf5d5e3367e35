// The direct paths of one-sided operations: the initiator's CPU moves the data itself and the
// owner runs nothing.
//   - kLocal:  the owner is this process and this context (the self lane): the key is checked
//              against our own table, then the address is used as it is.
//   - kMapped: memory the owner allocated with swy_mem_map, reached over a lane whose peer
//              pid the transport verified (shm): its segment is mapped here on first use, puts
//              and gets are copies, atomics CPU atomics on the mapped word.
//   - kTable:  memory the owner registered in place, same host: contiguous put/get go through
//              the lane's CMA (ZcopyLane put_zcopy/get_zcopy); everything else to the engine.
// Before EVERY operation the slot of the owner's key table (mapped read-only, once per peer)
// is read: a stale key (owner unmapped), a forged one or one outside its range fails with
// kAccessDenied and touches nothing.
//
// The pid used to open /proc/<pid>/fd/<n> is the lane's verified pid
// (tl::Endpoint::verified_pid), never a number from the key: a key can only ever lead to the
// memory of the process on the other end of the endpoint it was unpacked on.
#pragma once

#include <switchyard/rma.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "protocols/rma/mem_table.h"
#include "protocols/rma/peer_tables.h"
#include "protocols/rma/rkey.h"

namespace swy::dt {
class DataView;
}

namespace swy::rma {

/// Which direct path a key has.
enum class DirectKind : uint8_t { kLocal, kMapped, kTable };

/// The direct path of one unpacked key.
class DirectPath {
public:
    DirectPath() = default;
    DirectPath(const DirectPath&) = delete;
    DirectPath& operator=(const DirectPath&) = delete;
    ~DirectPath();

    /// The direct path for @p key unpacked on @p ep, or null when there is none (network lane,
    /// no verified pid, the owner's table cannot be mapped).
    static std::unique_ptr<DirectPath> create(core::Endpoint* ep, const KeyFields& key);

    DirectKind kind() const { return kind_; }

    /// Whether this path carries a put/get of @p view (contiguous or not): kLocal and kMapped
    /// always; kTable only contiguous data over a lane with CMA.
    bool moves(const dt::DataView& view) const;
    /// Whether this path carries atomics (kLocal, kMapped).
    bool atomics() const { return kind_ != DirectKind::kTable; }

    /// Check the key against the owner's table now: kOk, or kAccessDenied (stale, forged,
    /// outside the range, without the right). Done by every operation below.
    Status check(uint64_t address, uint64_t length, uint32_t access) const;

    /// Write the bytes of @p view to @p address. Precondition: moves(view).
    Status put(uint64_t address, dt::DataView& view);
    /// Read into @p view from @p address. Precondition: moves(view).
    Status get(uint64_t address, dt::DataView& view);
    /// CPU atomic @p op on the @p size-byte word at @p address; *old receives its previous
    /// value. Precondition: atomics(), size 4 or 8, aligned.
    Status atomic(uint64_t address, swy_atomic_op_t op, size_t size, uint64_t operand,
                  uint64_t compare, uint64_t* old);
    /// The local address of @p address (kLocal, kMapped); kUnreachable for kTable.
    Status pointer(uint64_t address, void** out);

private:
    /// The local address of [address, address + length) after check(); maps the segment on
    /// first use (kMapped).
    Status resolve(uint64_t address, uint64_t length, uint32_t access, uint8_t** out);
    /// check() that also returns the owner's slot.
    Status check_slot(uint64_t address, uint64_t length, uint32_t access, SlotView* out) const;
    /// Map the owner's segment of the mapping @p view describes (checks its cookie).
    Status map_segment(const SlotView& view);
    /// kTable: contiguous bytes of @p view to (@p write) or from @p address through the lane's
    /// CMA, in chunks of its max_zcopy, after the key check.
    Status cma_move(uint64_t address, dt::DataView& view, bool write);

    DirectKind kind_ = DirectKind::kLocal;
    core::Endpoint* ep_ = nullptr;
    KeyFields key_;
    core::Context* context_ = nullptr;  ///< kLocal: our own context
    std::shared_ptr<PeerTable> table_;  ///< kMapped, kTable
    int pid_ = 0;                       ///< the lane's verified pid
    uint8_t* segment_ = nullptr;        ///< kMapped: the whole segment (header page + data)
    size_t segment_bytes_ = 0;
    /// The owner's slot as last read whole (kMapped, kTable). The owner writes a slot only
    /// while its secret is cleared, and secrets are random per mapping, so while the slot
    /// still holds this key's secret these fields are still the slot's: later operations load
    /// the secret alone (one acquire load) instead of re-reading the slot.
    mutable SlotView cached_{};
    mutable bool cached_valid_ = false;
};

/// Apply @p op to the word at @p p with CPU atomics (sequentially consistent); @return the
/// previous value. @p size 4 or 8.
uint64_t cpu_atomic(void* p, swy_atomic_op_t op, size_t size, uint64_t operand, uint64_t compare);

}  // namespace swy::rma
