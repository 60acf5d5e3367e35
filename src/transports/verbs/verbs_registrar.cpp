// Registrar on ibv_reg_mr (verbs_registrar.h).
#include "transports/verbs/verbs_registrar.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "transports/zcopy.h"

namespace swy::tl::verbs {
namespace {

class IbvRegistrar final : public Registrar {
public:
    explicit IbvRegistrar(ibv_pd* pd) : pd_(pd) {}
    Status register_range(uintptr_t address, size_t length, unsigned access, RegisteredRange* out,
                          std::string* why) override {
        int flags = 0;
        if ((access & kZcopyLocalWrite) != 0) flags |= IBV_ACCESS_LOCAL_WRITE;
        if ((access & kZcopyRemoteRead) != 0) flags |= IBV_ACCESS_REMOTE_READ;
        // Remote write requires local write (verbs rule).
        if ((access & kZcopyRemoteWrite) != 0) {
            flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
        }
        ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(address), length, flags);
        if (mr == nullptr) {
            const int err = errno;
            *why = std::string("ibv_reg_mr: ") + std::strerror(err);
            return err == ENOMEM ? Status::kNoMemory : Status::kIoError;
        }
        out->handle = mr;
        out->lkey = mr->lkey;
        out->rkey = mr->rkey;
        return Status::kOk;
    }
    void deregister(const RegisteredRange& range) override {
        ibv_dereg_mr(static_cast<ibv_mr*>(range.handle));
    }

private:
    ibv_pd* pd_;
};

}  // namespace

std::unique_ptr<Registrar> make_verbs_registrar(ibv_pd* pd) {
    return std::make_unique<IbvRegistrar>(pd);
}

}  // namespace swy::tl::verbs
