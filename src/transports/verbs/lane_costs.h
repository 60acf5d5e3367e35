// What a verbs lane's operations cost, from the context's cost figures (verbs_*: measured by
// `swy-info --calibrate` on the first usable port, or built-in placeholders). The worker puts
// the result in VerbsConfig::costs; the interface reports the set that matches its
// registration cache in every lane's attributes (tl::LaneAttr::costs). Compiled with and
// without libibverbs: swy-info and the tests use it either way.
#pragma once

#include "common/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::verbs {

/// Registration rates are a fitted slope: a cache hit whose cost hardly grows with size gives
/// a huge rate (the fit caps it near 1.7e19 B/s), so their upper bound is higher.
inline constexpr double kRegRateMax = 1e20;

/// The calibration figures verbs' cost function reads besides memcpy_bw_Bps (the registry
/// entry lists them; file keys), measured by `swy-info --calibrate` on the first usable
/// port. The defaults are placeholders of a 10 Gb/s-class RoCE adapter, not a measurement.
inline constexpr common::CostFigureVar kCostFigures[] = {
    {"verbs_latency_s", 2e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "one-way latency of a small SEND, less overhead"},
    {"verbs_overhead_s", 0.3e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "sender CPU time per message (1 / message rate)"},
    {"verbs_bw_Bps", 1.25e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "eager SEND bandwidth"},
    {"verbs_rdma_overhead_s", 0.5e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "posting one RDMA READ/WRITE and its completion"},
    {"verbs_rdma_bw_Bps", 1.25e9, common::kFigureBwMin, common::kFigureBwMax,
     common::FigureUnit::kGBps, "RDMA READ/WRITE bandwidth of large transfers"},
    {"verbs_reg_s", 5e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "ibv_reg_mr + ibv_dereg_mr, fixed part"},
    {"verbs_reg_Bps", 20e9, common::kFigureBwMin, kRegRateMax, common::FigureUnit::kGBps,
     "ibv_reg_mr + ibv_dereg_mr per byte (page pinning), as a rate"},
    {"verbs_reg_hit_s", 1e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "a validated registration-cache hit, fixed part"},
    {"verbs_reg_hit_Bps", 200e9, common::kFigureBwMin, kRegRateMax, common::FigureUnit::kGBps,
     "a validated registration-cache hit per byte (page-frame check), as a rate"},
};

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
VerbsCosts verbs_lane_costs(const common::CostFigures& figures);

}  // namespace swy::tl::verbs
