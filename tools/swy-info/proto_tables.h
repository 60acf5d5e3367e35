// Protocol tables as endpoints of this host would build them; shared by --proto and
// --calibrate (which prints the table its fresh figures give).
#pragma once

#include <string>

namespace swy::core {
class Context;
}
namespace swy::common {
class CostFigures;
}

namespace swy::info {

/// One line per cost figure: key, value as written to the calibration file, and the value in
/// units people read (GB/s, us, ns).
void print_cost_figures(const common::CostFigures& costs);

/// Print the tables an endpoint of @p context would get on the @p tls lane ("shm": one with a
/// PIO lane and one without; "tcp", "self": one; "verbs": host memory, a device-memory slot
/// where there is one, device memory), each through the library's own path (the transport's
/// lane attributes and cost function, proto::table_for), using the context's configuration (SWY_PROTO,
/// SWY_RNDV_THRESH, ...) and its cost figures, each range with the reason it won and the
/// derived thresholds. For shm, CMA availability comes from a fork probe (so call this before
/// starting threads). Returns 1 if the configuration makes the lane impossible, else 0.
int print_lane_tables(const core::Context& context, const std::string& tls);

}  // namespace swy::info
