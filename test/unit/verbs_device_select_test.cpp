// Device, port and GID selection of the verbs transport (pure logic, no device needed).
#include <gtest/gtest.h>

#include "transports/verbs/device_select.h"

using namespace swy::tl::verbs;

namespace {
GidEntry gid(uint32_t index, GidType type, std::initializer_list<uint8_t> tail) {
    GidEntry e;
    e.index = index;
    e.type = type;
    size_t at = 16 - tail.size();
    for (uint8_t b : tail)
        e.raw[at++] = b;
    return e;
}
GidEntry ipv4(uint32_t index, GidType type, uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return gid(index, type, {0xFF, 0xFF, a, b, c, d});
}
}  // namespace

TEST(VerbsDeviceSpecs, ParsesDevicePortAndAll) {
    std::vector<std::string> bad;
    auto specs =
        parse_device_specs({"rxe0:1", "mlx5_0", "all", "eth0", "x:0", ":1", "y:abc"}, &bad);
    ASSERT_EQ(specs.size(), 4u);
    EXPECT_EQ(specs[0].device, "rxe0");
    EXPECT_EQ(specs[0].port, 1);
    EXPECT_EQ(specs[1].device, "mlx5_0");
    EXPECT_EQ(specs[1].port, 0);
    EXPECT_TRUE(specs[2].device.empty());
    EXPECT_EQ(specs[3].device, "eth0");
    EXPECT_EQ(bad, (std::vector<std::string>{"x:0", ":1", "y:abc"}));
}

TEST(VerbsDeviceSpecs, SelectsOnlyTheListedPort) {
    auto specs = parse_device_specs({"rxe0:1"});
    EXPECT_TRUE(device_selected(specs, "rxe0", 1));
    EXPECT_FALSE(device_selected(specs, "rxe0", 2));
    EXPECT_FALSE(device_selected(specs, "mlx5_0", 1));
    // A tcp-only list (network interface names) selects no RDMA device.
    EXPECT_FALSE(device_selected(parse_device_specs({"eth0", "lo"}), "rxe0", 1));
    EXPECT_TRUE(device_selected(parse_device_specs({"all"}), "anything", 3));
}

TEST(VerbsGid, PrefersRoceV2WithIpv4) {
    std::vector<GidEntry> gids = {
        gid(0, GidType::kRoceV1, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 1}),
        gid(1, GidType::kRoceV2, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 1}),
        ipv4(2, GidType::kRoceV1, 198, 18, 0, 1),
        ipv4(3, GidType::kRoceV2, 198, 18, 0, 1),
    };
    EXPECT_EQ(choose_gid(gids), 3);
    gids.pop_back();
    EXPECT_EQ(choose_gid(gids), 1);      // RoCE v2 link-local beats RoCE v1
    EXPECT_EQ(choose_gid(gids, 0), 0);   // forced index
    EXPECT_EQ(choose_gid(gids, 9), -1);  // forced index that does not exist
}

TEST(VerbsGid, SkipsZeroGidsAndReportsNone) {
    std::vector<GidEntry> gids = {gid(0, GidType::kRoceV2, {})};
    EXPECT_EQ(choose_gid(gids), -1);
    EXPECT_EQ(choose_gid({}), -1);
}

TEST(VerbsGid, Ipv4MappedAndText) {
    const GidEntry g = ipv4(1, GidType::kRoceV2, 198, 18, 0, 1);
    EXPECT_TRUE(gid_is_ipv4_mapped(g.raw));
    EXPECT_EQ(gid_text(g.raw), "::ffff:198.18.0.1");
    EXPECT_FALSE(gid_is_ipv4_mapped(gid(0, GidType::kIb, {0xfe, 0x80}).raw));
}
