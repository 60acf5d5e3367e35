// The tcp transport's registry entry and typed settings.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "transports/registry.h"

namespace swy::tl::tcp {

struct TcpConfig;

/// Id of the tcp section of a worker address (tcp_address.cpp).
inline constexpr uint8_t kAddressSection = 3;

/// The registry entry (transports/registry.cpp lists it).
extern const TransportEntry kTransport;

/// The tcp settings SWY_NET_DEVICES and SWY_TCP_* give, into @p out (the rest left as it
/// is). kInvalidParam with every problem in @p why.
Status read_settings(const common::Config& config, TcpConfig* out, std::string* why);

}  // namespace swy::tl::tcp
