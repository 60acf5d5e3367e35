#include "transports/self/self_costs.h"

namespace swy::tl::self {

LaneCosts self_lane_costs(const common::CostFigures& f) {
    LaneCosts c;
    const double copy = 1.0 / f.get("memcpy_bw_Bps");
    c.am_bcopy = {0, 2 * copy};  // into the queue, out to the receive buffer
    c.unexpected_copy_per_byte_s = copy;
    return c;
}

}  // namespace swy::tl::self
