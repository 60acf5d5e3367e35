// The shared-memory transport's registry entry and typed settings.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "transports/registry.h"

namespace swy::tl::shm {

struct ShmConfig;

/// Id of the shm section of a worker address (shm_address.h).
inline constexpr uint8_t kAddressSection = 2;

/// The registry entry (transports/registry.cpp lists it).
extern const TransportEntry kTransport;

/// The shm settings SWY_SHM_*, SWY_KEEPALIVE_INTERVAL give: geometry and keepalive in
/// @p out (the rest left as it is). kInvalidParam with every problem in @p why when a value
/// is out of range, the geometry breaks a rule of segment_bounds.h or a variable read is not
/// declared. swy-info shows the same values.
Status read_settings(const common::Config& config, ShmConfig* out, std::string* why);

}  // namespace swy::tl::shm
