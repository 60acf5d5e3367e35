// The list of transports. A new transport adds its folder and one line below (and its
// header's include).
#include "transports/registry.h"

#include <vector>

#include "transports/self/self_transport.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/verbs/verbs_transport.h"

namespace swy::tl {
namespace {

// In the order their interfaces open; lane selection goes by TransportEntry::priority.
constexpr const TransportEntry* kTransports[] = {
    &self::kTransport,
    &shm::kTransport,
    &tcp::kTransport,
    &verbs::kTransport,
};

}  // namespace

std::span<const TransportEntry* const> transports() { return kTransports; }

const TransportEntry* find_transport(std::string_view name) {
    for (const TransportEntry* t : kTransports) {
        if (t->name == name) return t;
    }
    return nullptr;
}

bool device_claimed_by_other(const TransportEntry& self, std::string_view device) {
    for (const TransportEntry* t : kTransports) {
        if (t != &self && t->claims_device != nullptr && t->claims_device(device)) return true;
    }
    return false;
}

}  // namespace swy::tl

namespace swy::common {

std::span<const ConfigVar> transport_config_table() {
    // Built once, never changed: each transport's variables in registry order.
    static const std::vector<ConfigVar> table = [] {
        std::vector<ConfigVar> all;
        for (const tl::TransportEntry* t : tl::kTransports) {
            all.insert(all.end(), t->config_vars.begin(), t->config_vars.end());
        }
        return all;
    }();
    return table;
}

std::span<const CostFigureVar> transport_cost_figure_table() {
    // Built once, never changed: each transport's calibration figures in registry order.
    static const std::vector<CostFigureVar> table = [] {
        std::vector<CostFigureVar> all;
        for (const tl::TransportEntry* t : tl::kTransports) {
            all.insert(all.end(), t->cost_figures.begin(), t->cost_figures.end());
        }
        return all;
    }();
    return table;
}

}  // namespace swy::common
