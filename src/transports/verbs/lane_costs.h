// Cost figures of a verbs lane, shared by the transport (LaneAttr) and swy-info (tables it
// prints without opening an interface). The worker fills them from the context's cost figures
// (verbs_costs.h: measured by `swy-info --calibrate`, or built-in placeholders).
#pragma once

#include "transports/transport.h"

namespace swy::tl::verbs {

struct LaneCosts {
    LinearCost send;     ///< one SEND of n bytes: latency, sender overhead, bandwidth
    LinearCost rdma;     ///< one RDMA READ/WRITE of n bytes
    LinearCost reg;      ///< registering + deregistering n bytes on one side (cache miss)
    LinearCost reg_hit;  ///< a validated registration-cache hit for n bytes

    /// The per-side registration cost the selector should expect: a cache hit while the
    /// registration cache is active (buffers are reused), a full registration otherwise.
    const LinearCost& expected_reg(bool cache_active) const { return cache_active ? reg_hit : reg; }
};

}  // namespace swy::tl::verbs
