// Protocol selection on a verbs lane (golden thresholds for the default figures): inline PIO,
// bcopy through bounce buffers, RDMA rendezvous (GET or PUT by registration cost); device memory without dma-buf MRs is staged.
// A change to the verbs cost model that moves a threshold must fail here on purpose.
#include <gtest/gtest.h>

#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/verbs/verbs_costs.h"

using namespace swy;
using proto::ProtoId;

namespace {

/// The caps core::Endpoint derives for a verbs lane with a 256 B inline limit and 8 KiB buffers.
proto::LaneCaps verbs_caps() {
    tl::LaneAttr a;
    const tl::verbs::LaneCosts costs = tl::verbs::verbs_lane_costs(proto::CostFigures{});
    a.send_cost = costs.send;
    a.rdma = true;
    a.rdma_cost = costs.rdma;
    a.reg_cost = costs.expected_reg(false);
    proto::LaneCaps caps;
    caps.pio = true;
    caps.pio_max = 256 - sizeof(proto::EagerOnlyHeader);
    caps.fragment_max = 8192 - sizeof(proto::EagerFirstHeader);
    caps.rndv = true;
    proto::set_rdma_lane_costs(a, &caps);
    return caps;
}

}  // namespace

TEST(VerbsSelect, DefaultTableIsInlineThenBcopyThenRdmaPut) {
    // Built-in figures: a registration (5 us) costs more than a message (0.3 us), so PUT,
    // which hides the sender's registration behind RTS and RTR, beats GET at every size.
    const proto::ProtoTable t = proto::select_protocols(verbs_caps(), {}, {});
    ASSERT_EQ(t.ranges().size(), 3u) << t.print();
    EXPECT_EQ(t.ranges()[0].proto, ProtoId::kEagerShort);
    EXPECT_EQ(t.ranges()[0].max_size, 248u);
    EXPECT_EQ(t.ranges()[1].proto, ProtoId::kEagerBcopy);
    EXPECT_EQ(t.ranges()[1].max_size, 56902u);
    EXPECT_EQ(t.ranges()[2].proto, ProtoId::kRndvPutZcopy);
}

TEST(VerbsSelect, CheapRegistrationGivesGetThenPutWhereTheyCross) {
    // A validated cache hit cheaper than a message overhead: GET (one message less) wins
    // until the sender's per-byte check, which PUT hides, outweighs that message.
    proto::LaneCaps caps = verbs_caps();
    caps.reg_fixed_s = 0.1e-6;
    caps.reg_per_byte_s = 1.0 / 1000e9;  // 1 ps per byte: they cross at 200 KB
    const double o = caps.net_overhead_s;
    const auto crossing = static_cast<size_t>((o - caps.reg_fixed_s) / caps.reg_per_byte_s);
    const proto::ProtoTable t = proto::select_protocols(caps, {}, {});
    bool saw_get = false;
    for (const auto& r : t.ranges()) saw_get |= r.proto == ProtoId::kRndvGetZcopy;
    ASSERT_TRUE(saw_get) << t.print();
    EXPECT_EQ(t.lookup(crossing - 1000), ProtoId::kRndvGetZcopy) << t.print();
    EXPECT_EQ(t.lookup(crossing + 1000), ProtoId::kRndvPutZcopy) << t.print();
    EXPECT_EQ(t.lookup(size_t{1} << 30), ProtoId::kRndvPutZcopy) << t.print();
}

TEST(VerbsSelect, SchemeAndAllowListPickTheRdmaFlavour) {
    proto::SelectOverrides put;
    put.rndv_scheme = "put";
    EXPECT_EQ(proto::select_protocols(verbs_caps(), {}, put).lookup(1 << 20),
              ProtoId::kRndvPutZcopy);
    proto::SelectOverrides pipeline;
    pipeline.rndv_scheme = "pipeline";
    EXPECT_EQ(proto::select_protocols(verbs_caps(), {}, pipeline).lookup(1 << 20),
              ProtoId::kRndvPipeline);
    proto::SelectOverrides no_zcopy;
    no_zcopy.allow = {"eager_short", "eager_bcopy", "rndv_pipeline"};
    const proto::ProtoTable t = proto::select_protocols(verbs_caps(), {}, no_zcopy);
    for (const auto& r : t.ranges()) {
        EXPECT_NE(r.proto, ProtoId::kRndvGetZcopy);
        EXPECT_NE(r.proto, ProtoId::kRndvPutZcopy);
    }
    proto::SelectOverrides thresh;
    thresh.rndv_thresh = 4096;
    const proto::ProtoTable th = proto::select_protocols(verbs_caps(), {}, thresh);
    EXPECT_EQ(th.lookup(4095), ProtoId::kEagerBcopy);
    EXPECT_GE(static_cast<int>(th.lookup(4096)), static_cast<int>(ProtoId::kRndvGetCma));
}

TEST(VerbsSelect, DeviceMemoryWithoutDmabufNeverUsesRdma) {
    proto::LaneCaps device = verbs_caps();
    device.pio = false;
    device.pio_max = 0;
    device.rdma = false;  // what the endpoint sets when the device refuses dma-buf MRs
    device.stage_fixed_s = 2e-6;
    device.stage_per_byte_s = 1.0 / 5e9;
    const proto::ProtoTable t = proto::select_protocols(device, {}, {});
    for (const auto& r : t.ranges()) {
        EXPECT_TRUE(r.proto == ProtoId::kEagerBcopy || r.proto == ProtoId::kRndvPipeline)
            << t.print();
    }
    EXPECT_EQ(t.lookup(64u << 20), ProtoId::kRndvPipeline);
    device.rdma = true;  // a device with dma-buf MRs
    EXPECT_EQ(proto::select_protocols(device, {}, {}).lookup(64u << 20), ProtoId::kRndvPutZcopy);
}
