// The list of transports. A new transport adds its folder and one line below (and its
// header's include).
#include "transports/registry.h"

#include <utility>
#include <vector>

#include "transports/cma/cma_helper.h"
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

constexpr const HelperEntry* kHelpers[] = {
    &cma::kHelper,
};

}  // namespace

std::span<const TransportEntry* const> transports() { return kTransports; }

std::span<const HelperEntry* const> tls_helpers() { return kHelpers; }

Status check_helper_settings(const common::Config& config, std::string* why) {
    for (const HelperEntry* h : kHelpers) {
        const Status s = h->check_config(config, why);
        if (s != Status::kOk) return s;
    }
    return Status::kOk;
}

Status check_settings(const common::Config& config,
                      const std::function<bool(std::string_view name)>& enabled, std::string* why) {
    std::string problems;
    auto note = [&](Status s, const std::string& what) {
        if (s == Status::kOk) return;
        if (!problems.empty()) problems += "; ";
        problems += what;
    };
    std::string one;
    note(check_helper_settings(config, &one), one);
    for (const TransportEntry* t : kTransports) {
        if (t->check_config == nullptr || !enabled(t->name)) continue;
        one.clear();
        note(t->check_config(config, &one), one);
    }
    if (problems.empty()) return Status::kOk;
    *why = std::move(problems);
    return Status::kInvalidParam;
}

bool tls_name_known(std::string_view name) {
    if (find_transport(name) != nullptr) return true;
    for (const HelperEntry* h : kHelpers) {
        if (h->name == name) return true;
    }
    return false;
}

std::string tls_names_text() {
    std::string text;
    for (const TransportEntry* t : kTransports) {
        if (!text.empty()) text += ", ";
        text += t->name;
    }
    for (const HelperEntry* h : kHelpers) {
        text += ", ";
        text += h->name;
    }
    return text;
}

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
