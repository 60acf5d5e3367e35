// The self transport's registry entry (a worker talking to itself).
#pragma once

#include <cstdint>

#include "transports/registry.h"

namespace swy::tl::self {

/// Id of the self section of a worker address (empty: its presence says "self works").
inline constexpr uint8_t kAddressSection = 1;

/// The registry entry (transports/registry.cpp lists it).
extern const TransportEntry kTransport;

}  // namespace swy::tl::self
