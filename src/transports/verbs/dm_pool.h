// Device memory (ibv_alloc_dm) as a PIO window: one region allocated on the adapter at start-up
// and cut into fixed slots, one per endpoint that gets a device-memory PIO lane. Slots are
// handed out first come first served, except the last `reserved` ones, which only endpoints
// that ask for low latency first get (the same policy as the shm PIO window; see
// ARCHITECTURE.md, "Mapped adapter memory is a limited resource").
//
// The logic is separate from libibverbs behind DmDevice so it is unit-tested with a fake
// device (test/unit/verbs_dm_pool_test.cpp); verbs_dm.cpp adapts ibv_alloc_dm to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace swy::tl::verbs {

/// The few device-memory operations the pool needs. Two implementations exist besides the
/// unit tests' fake (verbs_dm.cpp): the adapter's memory (ibv_alloc_dm + ibv_reg_dm_mr) and,
/// for testing the send path on devices without it (rxe), ordinary registered host memory
/// (SWY_VERBS_DM_EMULATE).
class DmDevice {
public:
    virtual ~DmDevice() = default;
    /// Largest region the device can allocate (0: it has no device memory).
    virtual size_t max_size() const = 0;
    /// Allocate @p length bytes and register them as the source of SENDs;
    /// kUnsupported / kNoMemory / kIoError with @p why on failure.
    virtual Status allocate(size_t length, std::string* why) = 0;
    /// Copy into the allocated region at @p offset (the caller checked the bounds; offset and
    /// length are multiples of 4, which adapters require of device-memory stores).
    virtual Status write(size_t offset, const void* data, size_t length) = 0;
    /// Release the region (called once, by the pool's destructor, if allocate succeeded).
    virtual void release() = 0;
    /// Local key of the region's memory registration (valid after allocate).
    virtual uint32_t lkey() const = 0;
    /// The address a scatter/gather entry uses for byte @p offset of the region: the offset
    /// itself for a zero-based device-memory MR, base + offset for emulated host memory.
    virtual uint64_t sge_address(size_t offset) const = 0;
    /// True when the region is host memory standing in for device memory (a testing aid).
    virtual bool emulated() const { return false; }
};

class DmPool {
public:
    /// Allocate @p slots slots of @p slot_size bytes (fewer if the device has less: as many as
    /// fit). Errors: kUnsupported (the device has no device memory: @p why says so, e.g.
    /// "no device memory (max_dm_size 0)"), kInvalidParam (zero sizes, reserved > slots),
    /// kNoMemory / the device's error if the allocation fails.
    static Status create(std::unique_ptr<DmDevice> device, size_t slot_size, uint32_t slots,
                         uint32_t reserved, std::unique_ptr<DmPool>* out, std::string* why);
    ~DmPool();
    DmPool(const DmPool&) = delete;
    DmPool& operator=(const DmPool&) = delete;

    /// A slot for one endpoint, or -1 when none is left for this kind of request.
    /// @param low_latency_first  the endpoint asked for PIO first: may take reserved slots
    int acquire(bool low_latency_first);
    /// Give a slot back; releasing a slot that is not held is ignored (returns false).
    bool release(int slot);
    /// Store @p length bytes at @p offset of @p slot. kInvalidParam if the slot is not held
    /// or the range leaves the slot: a store never reaches another endpoint's slot.
    Status write(int slot, size_t offset, const void* data, size_t length);

    /// Where byte @p offset of @p slot is for a SEND's scatter/gather entry (no checks: the
    /// caller stays inside a slot it holds, as write() enforces), and the region's key.
    uint64_t sge_address(int slot, size_t offset) const {
        return device_->sge_address(static_cast<size_t>(slot) * slot_size_ + offset);
    }
    uint32_t lkey() const { return device_->lkey(); }
    bool emulated() const { return device_->emulated(); }

    uint32_t slots() const { return static_cast<uint32_t>(held_.size()); }
    uint32_t free_slots() const;
    uint32_t reserved() const { return reserved_; }
    size_t slot_size() const { return slot_size_; }

private:
    DmPool(std::unique_ptr<DmDevice> device, size_t slot_size, uint32_t slots, uint32_t reserved);
    std::unique_ptr<DmDevice> device_;
    size_t slot_size_;
    uint32_t reserved_;
    std::vector<bool> held_;
    bool allocated_ = false;
};

}  // namespace swy::tl::verbs
