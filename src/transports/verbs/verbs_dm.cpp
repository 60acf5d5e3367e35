// DmDevice on ibv_alloc_dm: the adapter memory behind the verbs device-memory PIO window.
#include <cerrno>
#include <cstring>

#include "transports/verbs/verbs_device.h"

namespace swy::tl::verbs {
namespace {

class IbvDm final : public DmDevice {
public:
    IbvDm(ibv_context* context, size_t max) : context_(context), max_(max) {}
    size_t max_size() const override { return max_; }
    Status allocate(size_t length, std::string* why) override {
        ibv_alloc_dm_attr attr{};
        attr.length = length;
        dm_ = ibv_alloc_dm(context_, &attr);
        if (dm_ == nullptr) {
            *why = std::string("ibv_alloc_dm: ") + std::strerror(errno);
            return errno == ENOMEM ? Status::kNoMemory : Status::kUnsupported;
        }
        return Status::kOk;
    }
    Status write(size_t offset, const void* data, size_t length) override {
        return ibv_memcpy_to_dm(dm_, offset, data, length) == 0 ? Status::kOk : Status::kIoError;
    }
    void release() override {
        if (dm_ != nullptr) ibv_free_dm(dm_);
        dm_ = nullptr;
    }

private:
    ibv_context* context_;
    size_t max_;
    ibv_dm* dm_ = nullptr;
};

}  // namespace

std::unique_ptr<DmDevice> make_dm_device(ibv_context* context, size_t max_size) {
    return std::make_unique<IbvDm>(context, max_size);
}

}  // namespace swy::tl::verbs
