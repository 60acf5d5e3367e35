#include "transports/verbs/verbs_costs.h"

namespace swy::tl::verbs {

LaneCosts verbs_lane_costs(const proto::CostFigures& f) {
    LaneCosts c;
    c.send = {f.verbs_latency_s, f.verbs_overhead_s, f.verbs_bw_Bps};
    c.rdma = {0, f.verbs_rdma_overhead_s, f.verbs_rdma_bw_Bps};
    c.reg = {0, f.verbs_reg_s, f.verbs_reg_Bps};
    c.reg_hit = {0, f.verbs_reg_hit_s, f.verbs_reg_hit_Bps};
    return c;
}

}  // namespace swy::tl::verbs
