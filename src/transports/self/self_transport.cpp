// The self transport as the registry sees it: always opens, reaches only its own worker.
#include "transports/self/self_transport.h"

#include "transports/self/self_costs.h"
#include "transports/self/self_iface.h"

namespace swy::tl::self {
namespace {

Status open_self(const OpenParams& p, std::unique_ptr<Interface>* out, std::string* /*why*/) {
    *out = std::make_unique<SelfInterface>(p.worker_uid, p.iface_index, p.sink,
                                           self_lane_costs(p.costs));
    return Status::kOk;
}

bool reaches(const ReachQuery& q) { return q.remote_uid == q.local_uid; }

Status connect_self(Interface* iface, const ConnectParams& p, std::unique_ptr<Endpoint>* out,
                    std::string* why) {
    return iface->connect(p.remote_uid, nullptr, 0, false, out, why);
}

std::string always(const common::Config&) { return "yes"; }

}  // namespace

const TransportEntry kTransport{
    .name = "self",
    .config_prefix = "SELF_",
    .address_section = kAddressSection,
    .priority = 40,
    .polls_host_memory = false,
    .config_vars = {},
    .cost_figures = {},  // memcpy_bw_Bps only, a common figure
    .open = open_self,
    .can_reach = reaches,
    .connect = connect_self,
    .lane_costs = self_lane_costs,
    .availability = always,
};

}  // namespace swy::tl::self
