// DmDevice on libibverbs: the adapter's memory (ibv_alloc_dm, registered zero-based with
// ibv_reg_dm_mr, written with ibv_memcpy_to_dm) behind the verbs device-memory PIO window, and
// its test stand-in, ordinary registered host memory (SWY_VERBS_DM_EMULATE), which lets the
// whole send path run on devices without device memory (rxe) except the store itself.
#include <cerrno>
#include <cstring>

#include "transports/verbs/verbs_device.h"

namespace swy::tl::verbs {
namespace {

class IbvDm final : public DmDevice {
public:
    IbvDm(ibv_context* context, ibv_pd* pd, size_t max) : context_(context), pd_(pd), max_(max) {}
    size_t max_size() const override { return max_; }
    Status allocate(size_t length, std::string* why) override {
        ibv_alloc_dm_attr attr{};
        attr.length = length;
        dm_ = ibv_alloc_dm(context_, &attr);
        if (dm_ == nullptr) {
            *why = std::string("ibv_alloc_dm: ") + std::strerror(errno);
            return errno == ENOMEM ? Status::kNoMemory : Status::kUnsupported;
        }
        // Zero-based: an SGE names a byte of the region by its offset.
        mr_ = ibv_reg_dm_mr(pd_, dm_, 0, length, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
        if (mr_ == nullptr) {
            *why = std::string("ibv_reg_dm_mr: ") + std::strerror(errno);
            ibv_free_dm(dm_);
            dm_ = nullptr;
            return Status::kIoError;
        }
        return Status::kOk;
    }
    Status write(size_t offset, const void* data, size_t length) override {
        return ibv_memcpy_to_dm(dm_, offset, data, length) == 0 ? Status::kOk : Status::kIoError;
    }
    void release() override {
        if (mr_ != nullptr) ibv_dereg_mr(mr_);
        if (dm_ != nullptr) ibv_free_dm(dm_);
        mr_ = nullptr;
        dm_ = nullptr;
    }
    uint32_t lkey() const override { return mr_->lkey; }
    uint64_t sge_address(size_t offset) const override { return offset; }

private:
    ibv_context* context_;
    ibv_pd* pd_;
    size_t max_;
    ibv_dm* dm_ = nullptr;
    ibv_mr* mr_ = nullptr;
};

/// Host memory registered like any buffer: the SEND path is the same, only the store is a
/// memcpy instead of ibv_memcpy_to_dm (and the SGE carries a virtual address).
class EmulatedDm final : public DmDevice {
public:
    EmulatedDm(ibv_pd* pd, size_t max) : pd_(pd), max_(max) {}
    size_t max_size() const override { return max_; }
    Status allocate(size_t length, std::string* why) override {
        memory_.reset(new (std::nothrow) uint8_t[length]());
        if (!memory_) {
            *why = "emulated device memory: out of memory";
            return Status::kNoMemory;
        }
        mr_ = ibv_reg_mr(pd_, memory_.get(), length, IBV_ACCESS_LOCAL_WRITE);
        if (mr_ == nullptr) {
            *why = std::string("emulated device memory: ibv_reg_mr: ") + std::strerror(errno);
            memory_.reset();
            return Status::kIoError;
        }
        return Status::kOk;
    }
    Status write(size_t offset, const void* data, size_t length) override {
        std::memcpy(memory_.get() + offset, data, length);
        return Status::kOk;
    }
    void release() override {
        if (mr_ != nullptr) ibv_dereg_mr(mr_);
        mr_ = nullptr;
        memory_.reset();
    }
    uint32_t lkey() const override { return mr_->lkey; }
    uint64_t sge_address(size_t offset) const override {
        return reinterpret_cast<uint64_t>(memory_.get() + offset);
    }
    bool emulated() const override { return true; }

private:
    ibv_pd* pd_;
    size_t max_;
    std::unique_ptr<uint8_t[]> memory_;
    ibv_mr* mr_ = nullptr;
};

}  // namespace

std::unique_ptr<DmDevice> make_dm_device(ibv_context* context, ibv_pd* pd, size_t max_size) {
    return std::make_unique<IbvDm>(context, pd, max_size);
}

std::unique_ptr<DmDevice> make_emulated_dm_device(ibv_pd* pd, size_t max_size) {
    return std::make_unique<EmulatedDm>(pd, max_size);
}

}  // namespace swy::tl::verbs
