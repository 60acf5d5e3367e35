// What a verbs lane's operations cost, from the context's cost figures (verbs_*: measured by
// `swy-info --calibrate` on the first usable port, or built-in placeholders). The worker puts
// the result in VerbsConfig::costs; the interface reports the set that matches its
// registration cache in every lane's attributes (tl::LaneAttr::costs). Compiled with and
// without libibverbs: swy-info and the tests use it either way.
#pragma once

#include "protocols/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::verbs {

/// A verbs lane's costs, both ways the registration cache may go (it is known to run only
/// once the interface is open).
struct VerbsCosts {
    LaneCosts rcache_off;  ///< a full ibv_reg_mr + ibv_dereg_mr per side and transfer
    LaneCosts rcache_on;   ///< a validated registration-cache hit per side (buffers reused)
    /// The costs a lane reports: rcache_on while the registration cache is active.
    const LaneCosts& expected(bool cache_active) const {
        return cache_active ? rcache_on : rcache_off;
    }
};

/// A verbs lane's costs under @p figures: SENDs at the lane's latency, overhead and bandwidth
/// plus a copy on each side (bounce buffer, receive buffer; inline sends skip the sender's),
/// RDMA READ/WRITE at their own overhead and bandwidth, registration per side.
VerbsCosts verbs_lane_costs(const proto::CostFigures& figures);

}  // namespace swy::tl::verbs
