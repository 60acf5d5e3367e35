// The verbs transport's registry entry and its typed settings: the one reading of
// SWY_NET_DEVICES / SWY_VERBS_* that the worker and swy-info share.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "transports/registry.h"

namespace swy::tl::verbs {

struct VerbsConfig;

/// Id of the verbs section of a worker address (verbs_wire.h).
inline constexpr uint8_t kAddressSection = 4;

/// The registry entry (transports/registry.cpp lists it).
extern const TransportEntry kTransport;

/// The verbs settings SWY_NET_DEVICES, SWY_PIO_RESERVED and SWY_VERBS_* give, into @p out
/// (auth_key and costs left as they are). Values a field cannot hold are clamped as the help
/// texts say (SWY_VERBS_MAX_INLINE at 4096, SWY_VERBS_SQ_DEPTH at 2^20, SWY_VERBS_DM_SLOTS
/// and SWY_PIO_RESERVED at 4096, SWY_VERBS_RX_CREDITS at 2^32-1); open() rejects a depth
/// below 16. kInvalidParam with every problem in @p why (a GID index that is neither "auto"
/// nor 0..65535, SWY_VERBS_RCACHE other than auto/off).
Status read_settings(const common::Config& config, VerbsConfig* out, std::string* why);

/// "yes: rxe0:1", or "no: <why>" for the verbs transport on this host (probes the devices).
std::string availability(const common::Config& config);

}  // namespace swy::tl::verbs
