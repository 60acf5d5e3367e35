// Pure device/port/GID selection logic of the verbs transport, kept free of libibverbs so it
// is unit-tested on hosts without RDMA devices (test/unit/verbs_device_select_test.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace swy::tl::verbs {

/// One entry of SWY_NET_DEVICES as the verbs transport reads it: "rxe0:1" (device and port),
/// "rxe0" (device, any active port), or "all". Entries naming network interfaces ("eth0",
/// "lo") are for tcp and match no RDMA device.
struct DeviceSpec {
    std::string device;  ///< empty: any device
    int port = 0;        ///< 0: any port
};

/// Parse the entries; entries that do not parse ("x:y" with a bad port) are skipped and
/// named in @p bad (if given).
std::vector<DeviceSpec> parse_device_specs(const std::vector<std::string>& entries,
                                           std::vector<std::string>* bad = nullptr);

/// Whether @p device / @p port is selected by @p specs.
bool device_selected(const std::vector<DeviceSpec>& specs, const std::string& device, int port);

enum class GidType : uint8_t { kIb, kRoceV1, kRoceV2 };

struct GidEntry {
    uint32_t index = 0;
    GidType type = GidType::kIb;
    std::array<uint8_t, 16> raw{};
};

/// True for ::ffff:a.b.c.d.
bool gid_is_ipv4_mapped(const std::array<uint8_t, 16>& raw);
bool gid_is_zero(const std::array<uint8_t, 16>& raw);

/// Preferred GID: RoCE v2 with an IPv4-mapped address (routable, and it names an address the
/// handshake can use), then any RoCE v2, then RoCE v1, then IB. @p forced >= 0 takes that
/// index if present. @return index into @p gids, or -1 if none is usable.
int choose_gid(const std::vector<GidEntry>& gids, int forced = -1);

/// "fe80::...:1" style text of a GID (for swy-info and logs).
std::string gid_text(const std::array<uint8_t, 16>& raw);

}  // namespace swy::tl::verbs
