#include "transports/verbs/dm_cells.h"

#include <cstring>

namespace swy::tl::verbs {

DmCells::DmCells(DmPool* pool, int slot, size_t cell_size, uint32_t cells)
    : pool_(pool), slot_(slot), cell_size_(cell_size), cells_(cells), staging_(cell_size) {}

DmCells::~DmCells() { pool_->release(slot_); }

Status DmCells::create(DmPool* pool, bool low_latency_first, size_t cell_size,
                       std::unique_ptr<DmCells>* out, std::string* why) {
    if (pool == nullptr || cell_size == 0 || cell_size % kCellAlign != 0 ||
        cell_size > pool->slot_size()) {
        *why = "device-memory cells must be a non-zero multiple of " + std::to_string(kCellAlign) +
               " B and fit a slot";
        return Status::kInvalidParam;
    }
    const int slot = pool->acquire(low_latency_first);
    if (slot < 0) {
        *why = pool->free_slots() == 0
                   ? "every device-memory slot is taken"
                   : "the free device-memory slots are reserved for SWY_EP_FLAG_PIO_FIRST";
        return Status::kNoResource;
    }
    const auto cells = static_cast<uint32_t>(pool->slot_size() / cell_size);
    out->reset(new DmCells(pool, slot, cell_size, cells));
    return Status::kOk;
}

bool DmCells::acquire(Cell* out) {
    if (in_flight_ >= cells_) return false;
    out->index = (oldest_ + in_flight_) % cells_;
    ++in_flight_;
    const uint32_t free = cells_ - in_flight_;
    out->signal = free == 0 || free == cells_ / 2;
    return true;
}

bool DmCells::release(uint32_t index) {
    if (in_flight_ == 0 || index != oldest_) return false;
    oldest_ = (oldest_ + 1) % cells_;
    --in_flight_;
    return true;
}

bool DmCells::cancel(uint32_t index) {
    if (in_flight_ == 0 || index != (oldest_ + in_flight_ - 1) % cells_) return false;
    --in_flight_;
    return true;
}

bool DmCells::in_flight(uint32_t index) const {
    // Cells in flight are oldest_, oldest_ + 1, ... (in_flight_ of them, mod cells_).
    return index < cells_ && (index + cells_ - oldest_) % cells_ < in_flight_;
}

Status DmCells::store(uint32_t index, const void* hdr, size_t hdr_len, const void* payload,
                      size_t length) {
    if (!in_flight(index) || hdr_len > cell_size_ || length > cell_size_ - hdr_len) {
        return Status::kInvalidParam;
    }
    const size_t total = hdr_len + length;
    // One store of whole 4-byte units: the bytes past the message stay inside the cell.
    const size_t padded = (total + 3) & ~size_t{3};
    uint8_t* p = staging_.data();
    if (hdr_len != 0) std::memcpy(p, hdr, hdr_len);
    if (length != 0) std::memcpy(p + hdr_len, payload, length);
    if (padded != total) std::memset(p + total, 0, padded - total);
    if (padded == 0) return Status::kOk;
    return pool_->write(slot_, static_cast<size_t>(index) * cell_size_, p, padded);
}

}  // namespace swy::tl::verbs
