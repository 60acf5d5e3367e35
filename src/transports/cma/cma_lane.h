// The zero-copy lane of CMA (process_vm_readv/writev): a ZcopyLane whose remote keys are the
// peer's verified pid plus an address. The pid is fixed when the lane is made, from what the
// transport verified (shm: the peer's segment opened through /proc/PID/fd names that pid and
// uid); nothing a peer sends can aim a copy at another process (docs/security.md). Operations
// copy in the call and return kOk; nothing is registered, nothing is allocated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/cma/cma.h"
#include "transports/zcopy.h"

namespace swy::tl::cma {

class CmaLane final : public ZcopyLane {
public:
    /// Largest range one call copies: a call holds the process in the kernel, so a large
    /// transfer is cut into calls of this size and other work runs between them.
    static constexpr size_t kMaxZcopy = size_t{4} << 20;

    /// A lane that reaches nobody (every operation kUnsupported) until set().
    CmaLane() = default;
    /// Reach process @p verified_pid (> 0; 0: nobody) in @p mode. Only a transport calls this,
    /// with the pid it verified itself.
    void set(CmaMode mode, int verified_pid) {
        mode_ = mode;
        pid_ = verified_pid;
        proven_ = false;  // another process, or another mode: prove it again
    }
    /// The process this lane reaches (0: none).
    int pid() const { return pid_; }

    uint32_t caps() const override { return pid_ > 0 ? cap::kGetZcopy | cap::kPutZcopy : 0; }
    size_t max_zcopy() const override { return kMaxZcopy; }
    /// process_vm_readv from the verified pid; @p remote.key is ignored. kOk, or the errors of
    /// cma::read (kUnsupported also when the lane reaches nobody). Never kInProgress.
    Status get_zcopy(void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                     size_t length, const ZcopyCompletion& completion) override;
    /// process_vm_writev into the verified pid; as get_zcopy.
    Status put_zcopy(const void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                     size_t length, const ZcopyCompletion& completion) override;
    /// A read or write with the current pid succeeded.
    bool proven() const override { return proven_; }

private:
    CmaMode mode_ = CmaMode::kOff;
    int pid_ = 0;
    bool proven_ = false;
};

}  // namespace swy::tl::cma
