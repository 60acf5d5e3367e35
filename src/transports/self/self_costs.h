// What a self lane's operations cost (a worker's endpoint to itself): a message is a copy into
// a queue and a copy out at the next progress call. Its table has a single candidate
// (eager_bcopy: no PIO, no rendezvous), so these figures only explain it.
#pragma once

#include "common/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::self {

/// A self lane's costs under @p figures (memcpy_bw_Bps only: no latency of its own).
LaneCosts self_lane_costs(const common::CostFigures& figures);

}  // namespace swy::tl::self
