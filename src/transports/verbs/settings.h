// The verbs transport's settings from the configuration (SWY_NET_DEVICES, SWY_VERBS_*,
// SWY_PIO_RESERVED): one reading for the worker that opens the interface and for swy-info,
// which probes ports and prints tables without one. Compiled with and without libibverbs
// (hence not named verbs_*.cpp: see src/CMakeLists.txt).
#pragma once

#include <string>

#include "common/status.h"
#include "transports/verbs/verbs_open.h"

namespace swy::common {
class Config;
}

namespace swy::tl::verbs {

/// Fill @p out from @p config: devices, segment size, credits, inline limit, send queue depth,
/// device-memory slots, GID index, registration cache. Values beyond what the transport can
/// use are clamped (open() then rejects what is still out of range, with a clear message).
/// kInvalidParam (@p why) for a GID index that is neither "auto" nor a number in 0..65535, or
/// SWY_VERBS_RCACHE other than auto|off. Leaves auth_key and costs alone (the worker's).
Status config_from(const common::Config& config, VerbsConfig* out, std::string* why);

}  // namespace swy::tl::verbs
