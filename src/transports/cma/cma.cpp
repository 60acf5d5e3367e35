#include "transports/cma/cma.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/config.h"

namespace swy::tl::cma {

bool parse_cma_mode(const std::string& text, CmaMode* out) {
    if (text == "auto" || text.empty()) {
        *out = CmaMode::kAuto;
    } else if (text == "y" || text == "yes" || text == "on" || text == "1") {
        *out = CmaMode::kForce;
    } else if (text == "n" || text == "no" || text == "off" || text == "0") {
        *out = CmaMode::kOff;
    } else if (text == "simulate-eperm") {
        *out = CmaMode::kSimulateEperm;
    } else {
        return false;
    }
    return true;
}

Status configured_mode(const common::Config& config, bool enabled_by_tls, CmaMode* out,
                       std::string* why) {
    if (!parse_cma_mode(config.get_string("CMA"), out)) {
        *why = "SWY_CMA must be auto, y, n or simulate-eperm";
        return Status::kInvalidParam;
    }
    if (!enabled_by_tls) *out = CmaMode::kOff;
    return Status::kOk;
}

namespace {

Status status_from_errno(int err) {
    switch (err) {
        case ESRCH: return Status::kConnectionReset;
        case EPERM: return Status::kUnsupported;
        case ENOMEM: return Status::kNoMemory;
        default: return Status::kIoError;
    }
}

template <bool kWrite>
Status transfer(CmaMode mode, pid_t pid, uint8_t* local, uint64_t remote, size_t length) {
    if (mode == CmaMode::kOff || mode == CmaMode::kSimulateEperm) return Status::kUnsupported;
    size_t done = 0;
    while (done < length) {
        iovec l{local + done, length - done};
        iovec r{reinterpret_cast<void*>(remote + done), length - done};
        ssize_t n = kWrite ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                           : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return status_from_errno(errno);
        }
        if (n == 0) return Status::kIoError;
        done += static_cast<size_t>(n);
    }
    return Status::kOk;
}

}  // namespace

Status probe(CmaMode mode, pid_t pid, uint64_t remote_address, const void* expected, size_t length,
             std::string* why) {
    if (mode == CmaMode::kOff) {
        *why = "disabled by SWY_CMA=n";
        return Status::kUnsupported;
    }
    if (mode == CmaMode::kSimulateEperm) {
        *why = "process_vm_readv: Operation not permitted (simulated by SWY_CMA=simulate-eperm)";
        return Status::kUnsupported;
    }
    std::vector<uint8_t> buf(length);
    iovec l{buf.data(), length};
    iovec r{reinterpret_cast<void*>(remote_address), length};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
        *why = std::string("process_vm_readv: ") + std::strerror(errno) +
               (errno == EPERM ? " (ptrace policy: Yama ptrace_scope or a container)" : "");
        return Status::kUnsupported;
    }
    if (static_cast<size_t>(n) != length || std::memcmp(buf.data(), expected, length) != 0) {
        *why = "process_vm_readv read unexpected data (address mismatch)";
        return Status::kUnsupported;
    }
    return Status::kOk;
}

Status read(CmaMode mode, pid_t pid, void* local, uint64_t remote, size_t length) {
    return transfer<false>(mode, pid, static_cast<uint8_t*>(local), remote, length);
}

Status write(CmaMode mode, pid_t pid, uint64_t remote, const void* local, size_t length) {
    return transfer<true>(mode, pid, const_cast<uint8_t*>(static_cast<const uint8_t*>(local)),
                          remote, length);
}

}  // namespace swy::tl::cma
