#include "transports/verbs/lane_costs.h"

namespace swy::tl::verbs {

LaneCosts default_lane_costs() {
    constexpr double kBandwidth = 10e9 / 8;
    LaneCosts c;
    c.send = {2e-6, 0.3e-6, kBandwidth};
    c.rdma = {2e-6, 0.5e-6, kBandwidth};
    c.reg = {5e-6, 0, 20e9};
    return c;
}

}  // namespace swy::tl::verbs
