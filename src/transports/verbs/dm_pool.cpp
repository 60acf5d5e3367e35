#include "transports/verbs/dm_pool.h"

#include <algorithm>

namespace swy::tl::verbs {

DmPool::DmPool(std::unique_ptr<DmDevice> device, size_t slot_size, uint32_t slots,
               uint32_t reserved)
    : device_(std::move(device)), slot_size_(slot_size), reserved_(reserved), held_(slots, false) {}

DmPool::~DmPool() {
    if (allocated_) device_->release();
}

Status DmPool::create(std::unique_ptr<DmDevice> device, size_t slot_size, uint32_t slots,
                      uint32_t reserved, std::unique_ptr<DmPool>* out, std::string* why) {
    if (device == nullptr || slot_size == 0 || slots == 0 || reserved > slots) {
        *why = "device memory pool: slot size and count must be non-zero, reserved <= slots";
        return Status::kInvalidParam;
    }
    const size_t max = device->max_size();
    if (max == 0) {
        *why = "no device memory (max_dm_size 0)";
        return Status::kUnsupported;
    }
    // As many whole slots as the device holds, up to what was asked.
    const auto fit = static_cast<uint32_t>(std::min<size_t>(slots, max / slot_size));
    if (fit == 0) {
        *why = "device memory smaller than one slot (" + std::to_string(max) + " B)";
        return Status::kUnsupported;
    }
    std::unique_ptr<DmPool> pool(
        new DmPool(std::move(device), slot_size, fit, std::min(reserved, fit)));
    Status s = pool->device_->allocate(slot_size * fit, why);
    if (s != Status::kOk) return s;
    pool->allocated_ = true;
    *out = std::move(pool);
    return Status::kOk;
}

uint32_t DmPool::free_slots() const {
    return static_cast<uint32_t>(std::count(held_.begin(), held_.end(), false));
}

int DmPool::acquire(bool low_latency_first) {
    const uint32_t free = free_slots();
    if (free == 0 || (!low_latency_first && free <= reserved_)) return -1;
    for (size_t i = 0; i < held_.size(); ++i) {
        if (!held_[i]) {
            held_[i] = true;
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool DmPool::release(int slot) {
    if (slot < 0 || static_cast<size_t>(slot) >= held_.size() || !held_[slot]) return false;
    held_[slot] = false;
    return true;
}

Status DmPool::write(int slot, size_t offset, const void* data, size_t length) {
    if (slot < 0 || static_cast<size_t>(slot) >= held_.size() || !held_[slot] ||
        offset > slot_size_ || length > slot_size_ - offset) {
        return Status::kInvalidParam;
    }
    return device_->write(static_cast<size_t>(slot) * slot_size_ + offset, data, length);
}

}  // namespace swy::tl::verbs
