// What a tcp lane's operations cost, from the context's cost figures (tcp_latency_s,
// tcp_overhead_s, tcp_bw_Bps: measured over loopback by `swy-info --calibrate`). The worker
// puts the result in TcpConfig::costs; every tcp lane reports it in its attributes.
#pragma once

#include "protocols/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::tcp {

/// A tcp lane's costs under @p figures: a message costs the socket's latency and a system
/// call's worth of CPU on each side, bytes move at tcp_bw_Bps; no PIO and no zero-copy.
LaneCosts tcp_lane_costs(const proto::CostFigures& figures);

}  // namespace swy::tl::tcp
