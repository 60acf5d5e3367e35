// Cost figures of a verbs lane, shared by the transport (LaneAttr) and swy-info (tables it
// prints without opening an interface).
#pragma once

#include "transports/transport.h"

namespace swy::tl::verbs {

struct LaneCosts {
    LinearCost send;  ///< one SEND of n bytes
    LinearCost rdma;  ///< one RDMA READ/WRITE of n bytes
    LinearCost reg;   ///< registering n bytes on one side
};

/// Placeholder figures until calibration measures the fabric: ~2 us one way, 10 Gb/s, and a
/// registration of ~5 us plus page pinning at 20 GB/s (rxe measured in docs/verbs.md).
LaneCosts default_lane_costs();

}  // namespace swy::tl::verbs
