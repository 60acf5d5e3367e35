#include "transports/verbs/device_select.h"

#include <arpa/inet.h>

#include <cstdlib>

namespace swy::tl::verbs {

std::vector<DeviceSpec> parse_device_specs(const std::vector<std::string>& entries,
                                           std::vector<std::string>* bad) {
    std::vector<DeviceSpec> out;
    for (const std::string& e : entries) {
        if (e.empty()) continue;
        if (e == "all") {
            out.push_back({});
            continue;
        }
        const size_t colon = e.find(':');
        if (colon == std::string::npos) {
            out.push_back({e, 0});
            continue;
        }
        const std::string port = e.substr(colon + 1);
        char* end = nullptr;
        const long p = std::strtol(port.c_str(), &end, 10);
        if (colon == 0 || port.empty() || *end != '\0' || p < 1 || p > 255) {
            if (bad != nullptr) bad->push_back(e);
            continue;
        }
        out.push_back({e.substr(0, colon), static_cast<int>(p)});
    }
    return out;
}

bool device_selected(const std::vector<DeviceSpec>& specs, const std::string& device, int port) {
    for (const DeviceSpec& s : specs) {
        if ((s.device.empty() || s.device == device) && (s.port == 0 || s.port == port)) {
            return true;
        }
    }
    return false;
}

bool gid_is_ipv4_mapped(const std::array<uint8_t, 16>& raw) {
    for (int i = 0; i < 10; ++i) {
        if (raw[i] != 0) return false;
    }
    return raw[10] == 0xFF && raw[11] == 0xFF;
}

bool gid_is_zero(const std::array<uint8_t, 16>& raw) {
    for (uint8_t b : raw) {
        if (b != 0) return false;
    }
    return true;
}

int choose_gid(const std::vector<GidEntry>& gids, int forced) {
    if (forced >= 0) {
        for (size_t i = 0; i < gids.size(); ++i) {
            if (gids[i].index == static_cast<uint32_t>(forced)) return static_cast<int>(i);
        }
        return -1;
    }
    int best = -1;
    int best_rank = 0;
    for (size_t i = 0; i < gids.size(); ++i) {
        const GidEntry& g = gids[i];
        if (gid_is_zero(g.raw)) continue;
        int rank = 1;  // IB
        if (g.type == GidType::kRoceV1) rank = 2;
        if (g.type == GidType::kRoceV2) rank = gid_is_ipv4_mapped(g.raw) ? 4 : 3;
        if (rank > best_rank) {
            best_rank = rank;
            best = static_cast<int>(i);
        }
    }
    return best;
}

std::string gid_text(const std::array<uint8_t, 16>& raw) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, raw.data(), buf, sizeof(buf));
    return buf;
}

}  // namespace swy::tl::verbs
