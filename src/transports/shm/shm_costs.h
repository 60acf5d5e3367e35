// What a shared-memory lane's operations cost, from the context's cost figures: the FIFO's
// latency and per-cell overheads, the copy bandwidth through cells, and CMA for zero-copy
// rendezvous. The worker puts the result in ShmConfig::costs; every shm lane reports it in
// its attributes (tl::LaneAttr::costs).
#pragma once

#include "protocols/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::shm {

/// A shm lane's costs under @p figures (fifo_latency_s, cell_overhead_s, pio_overhead_s,
/// bcopy_overhead_s, shm_copy_bw_Bps, cma_call_s, cma_bw_Bps, memcpy_bw_Bps). One set for
/// lanes with and without a PIO ring: the ring changes what the lane can do (LaneAttr::pio),
/// not what each operation costs.
LaneCosts shm_lane_costs(const proto::CostFigures& figures);

}  // namespace swy::tl::shm
