// The verbs lane's cost figures from the context's cost figures (calibration file or built-in
// placeholders): one place, so the worker's lanes and swy-info's tables always agree.
#pragma once

#include "protocols/cost_figures.h"
#include "transports/verbs/lane_costs.h"

namespace swy::tl::verbs {

/// Convert @p figures (seconds and bytes per second) into a verbs lane's costs.
LaneCosts verbs_lane_costs(const proto::CostFigures& figures);

}  // namespace swy::tl::verbs
