// One endpoint's device-memory PIO window: a DmPool slot cut into cells, one message each, so
// several messages can be in flight. A message larger than the inline limit and no larger than
// a cell is stored into a cell (header + payload, one ibv_memcpy_to_dm) and sent by a SEND
// whose scatter/gather entry points into the device-memory MR.
//
// A cell is reused only after its SEND completed: until then the adapter may still read it.
// Sends retire in order (RC completes in order, and one signalled completion retires every WR
// before it), so cells are taken and given back in the same order: a ring. Selective
// signalling must not strand cells: when a take leaves half of the cells, or none, free, that
// SEND must be signalled, so whenever every cell is taken a completion that frees them is on
// its way (and, at half, the other half is refilled while it comes).
//
// No libibverbs here: unit-tested with a fake DmDevice (test/unit/verbs_dm_cells_test.cpp).
// Not thread-safe (the worker serialises the interface).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/verbs/dm_pool.h"

namespace swy::tl::verbs {

class DmCells {
public:
    /// Cells of one message each: a multiple of 4 bytes (adapter stores are 4-byte units).
    static constexpr size_t kCellAlign = 64;

    /// Take a slot of @p pool for one endpoint and cut it into cells of @p cell_size bytes.
    /// kNoResource: no slot left for this kind of request (@p low_latency_first: the endpoint
    /// asked for PIO first and may take reserved slots); kInvalidParam: @p cell_size is 0, not
    /// a multiple of kCellAlign, or larger than a slot. The pool must outlive the cells.
    static Status create(DmPool* pool, bool low_latency_first, size_t cell_size,
                         std::unique_ptr<DmCells>* out, std::string* why);
    /// Gives the slot back to the pool. Call only once no SEND reads a cell any more (the QP is
    /// destroyed or every SEND retired).
    ~DmCells();
    DmCells(const DmCells&) = delete;
    DmCells& operator=(const DmCells&) = delete;

    /// A taken cell: its index, and whether its SEND must be signalled (see the file comment).
    struct Cell {
        uint32_t index = 0;
        bool signal = false;
    };
    /// Take the next cell; false when every cell is in flight (nothing is taken).
    bool acquire(Cell* out);
    /// Give back the oldest cell in flight, which must be @p index (sends retire in order).
    /// False, and nothing changes, for any other index or when none is in flight.
    bool release(uint32_t index);
    /// Undo the newest acquire(), whose SEND was never posted (a failed store or post).
    /// False, and nothing changes, unless @p index is the newest cell in flight.
    bool cancel(uint32_t index);
    /// Store header and payload into taken cell @p index, padded to 4 bytes inside the cell.
    /// kInvalidParam when hdr_len + length exceeds the cell or the cell is not in flight;
    /// the device's error otherwise. Nothing is sent.
    Status store(uint32_t index, const void* hdr, size_t hdr_len, const void* payload,
                 size_t length);
    /// Scatter/gather address of cell @p index and the key of the device-memory MR.
    uint64_t sge_address(uint32_t index) const {
        return pool_->sge_address(slot_, static_cast<size_t>(index) * cell_size_);
    }
    uint32_t lkey() const { return pool_->lkey(); }

    int slot() const { return slot_; }
    uint32_t cells() const { return cells_; }
    size_t cell_size() const { return cell_size_; }
    uint32_t in_flight() const { return in_flight_; }

private:
    DmCells(DmPool* pool, int slot, size_t cell_size, uint32_t cells);
    bool in_flight(uint32_t index) const;

    DmPool* pool_;
    int slot_;
    size_t cell_size_;
    uint32_t cells_;
    uint32_t oldest_ = 0;           // index of the oldest cell in flight (the next to come back)
    uint32_t in_flight_ = 0;        // cells taken and not yet given back
    std::vector<uint8_t> staging_;  // header + payload assembled for one 4-byte-unit store
};

}  // namespace swy::tl::verbs
