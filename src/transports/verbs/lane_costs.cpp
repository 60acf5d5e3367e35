// Named lane_costs.cpp, not verbs_costs.cpp: src/CMakeLists.txt drops verbs_*.cpp when the
// library is built without libibverbs, and these costs are needed either way.
#include "transports/verbs/lane_costs.h"

namespace swy::tl::verbs {

VerbsCosts verbs_lane_costs(const common::CostFigures& f) {
    LaneCosts c;
    const double L = f.get("verbs_latency_s");
    c.latency_s = L;
    c.message_s = f.get("verbs_overhead_s");  // posting a work request and reaping its completion
    const double wire = 1.0 / f.get("verbs_bw_Bps");
    const double copy = 1.0 / f.get("memcpy_bw_Bps");
    c.am_short = {0, wire + copy};      // inline: the receiver's copy out of its buffer only
    c.am_bcopy = {0, wire + 2 * copy};  // into a bounce buffer, out of a receive buffer
    c.unexpected_copy_per_byte_s = copy;
    const double rdma_wire = 1.0 / f.get("verbs_rdma_bw_Bps");
    // GET: READ request and response (docs/verbs.md, "Rendezvous").
    c.get_zcopy = {2 * L + f.get("verbs_rdma_overhead_s"), rdma_wire};
    // PUT: the WRITE and its acknowledgement; the FIN is posted right behind the WRITE on the
    // same QP (placed in order), so it adds a message's CPU time but no latency.
    c.put_zcopy = {2 * L + f.get("verbs_rdma_overhead_s"), rdma_wire};
    VerbsCosts costs;
    costs.rcache_off = c;
    costs.rcache_off.reg = {f.get("verbs_reg_s"), 1.0 / f.get("verbs_reg_Bps")};
    costs.rcache_on = c;
    costs.rcache_on.reg = {f.get("verbs_reg_hit_s"), 1.0 / f.get("verbs_reg_hit_Bps")};
    return costs;
}

}  // namespace swy::tl::verbs
