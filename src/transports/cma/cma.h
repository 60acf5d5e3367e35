// Cross-memory attach: zero-copy get/put between processes of one host with
// process_vm_readv/process_vm_writev. Whether it works depends on ptrace policy (Yama
// ptrace_scope, containers, differing credentials), so it is probed, never assumed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace swy::common {
class Config;
}

namespace swy::tl::cma {

/// How CMA is configured (SWY_CMA).
enum class CmaMode { kAuto, kForce, kOff, kSimulateEperm };

/// Parse SWY_CMA: auto | y | n | simulate-eperm (tests). false if unknown.
bool parse_cma_mode(const std::string& text, CmaMode* out);

/// How SWY_TLS names CMA. It is no transport of its own (it opens no interface): it is the
/// zero-copy of shm lanes, and SWY_TLS may still name it to switch it on or off
/// (cma_helper.h, registry.h).
inline constexpr const char kTlsName[] = "cma";

/// The mode a transport that uses CMA runs it in: SWY_CMA from @p config, or kOff when
/// SWY_TLS does not enable "cma" (@p enabled_by_tls false). kInvalidParam with @p why when
/// SWY_CMA does not parse.
Status configured_mode(const common::Config& config, bool enabled_by_tls, CmaMode* out,
                       std::string* why);

/// Probe whether we may read @p length bytes at @p remote_address in process @p pid and that
/// they equal @p expected. kOk; kUnsupported with @p why (EPERM, config) otherwise.
Status probe(CmaMode mode, pid_t pid, uint64_t remote_address, const void* expected, size_t length,
             std::string* why);

/// Copy @p length bytes from (pid, remote) to local, looping over partial transfers.
/// kOk; kConnectionReset if the process is gone (ESRCH); kUnsupported on EPERM; kIoError
/// (EFAULT: the remote range is not mapped) otherwise.
Status read(CmaMode mode, pid_t pid, void* local, uint64_t remote, size_t length);

/// Copy @p length bytes from local to (pid, remote). Same errors as read().
Status write(CmaMode mode, pid_t pid, uint64_t remote, const void* local, size_t length);

}  // namespace swy::tl::cma
