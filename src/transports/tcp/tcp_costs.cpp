#include "transports/tcp/tcp_costs.h"

namespace swy::tl::tcp {

LaneCosts tcp_lane_costs(const common::CostFigures& f) {
    LaneCosts c;
    c.latency_s = f.get("tcp_latency_s");
    c.message_s = f.get("tcp_overhead_s");
    // tcp_bw_Bps is measured end to end (user copy in, kernel, copy out), so it stands for
    // every copy of a fragment's bytes; a fragment costs nothing beyond its message.
    c.am_bcopy = {0, 1.0 / f.get("tcp_bw_Bps")};
    c.unexpected_copy_per_byte_s = 1.0 / f.get("memcpy_bw_Bps");
    // No am_short (nothing is mapped), no zero-copy, no registration: left at 0.
    return c;
}

}  // namespace swy::tl::tcp
