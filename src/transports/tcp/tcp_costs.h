// What a tcp lane's operations cost, from the context's cost figures (tcp_latency_s,
// tcp_overhead_s, tcp_bw_Bps: measured over loopback by `swy-info --calibrate`). The worker
// puts the result in TcpConfig::costs; every tcp lane reports it in its attributes.
#pragma once

#include "common/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::tcp {

/// The calibration figures tcp's cost function reads besides memcpy_bw_Bps (the registry
/// entry lists them; file keys), measured by `swy-info --calibrate` over loopback (swy-perf,
/// two processes). Defaults from such runs on the 2-vCPU reference VM (docs/protocols.md): a
/// median one-way time of 9-13 us for 8 B, 0.4-0.8 GB/s for a 1 MiB eager stream. A real
/// network has a longer latency, which only moves rendezvous later.
inline constexpr common::CostFigureVar kCostFigures[] = {
    {"tcp_latency_s", 6e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "one-way latency of a small message, less overhead"},
    {"tcp_overhead_s", 4e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "CPU time per message (system calls on both sides)"},
    {"tcp_bw_Bps", 0.75e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "bandwidth of a large eager_bcopy stream"},
};

/// A tcp lane's costs under @p figures: a message costs the socket's latency and a system
/// call's worth of CPU on each side, bytes move at tcp_bw_Bps; no PIO and no zero-copy.
LaneCosts tcp_lane_costs(const common::CostFigures& figures);

}  // namespace swy::tl::tcp
