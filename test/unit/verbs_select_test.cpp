// Protocol selection on a verbs lane (golden thresholds for the default figures): inline PIO,
// bcopy through bounce buffers, RDMA rendezvous (GET or PUT by registration cost); device memory without dma-buf MRs is staged.
// A change to the verbs cost model that moves a threshold must fail here on purpose.
#include <gtest/gtest.h>

#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/verbs/lane_attr.h"
#include "transports/verbs/lane_costs.h"

using namespace swy;
using proto::ProtoId;

namespace {

/// The lane a verbs interface reports with a 256 B inline limit, 8 KiB buffers, the built-in
/// figures and no registration cache (tl::verbs::lane_attr, as the interface fills it).
tl::LaneAttr verbs_lane() {
    tl::verbs::VerbsConfig vc;
    vc.seg_size = 8192;
    vc.costs = tl::verbs::verbs_lane_costs(common::CostFigures{});
    return tl::verbs::lane_attr(vc, 256, /*dmabuf_mr=*/false, /*rcache_active=*/false);
}

/// The caps core::Endpoint derives from that lane (no overrides).
proto::LaneCaps verbs_caps() { return proto::lane_caps(verbs_lane(), {}); }

}  // namespace

TEST(VerbsSelect, LaneCapsComeFromTheLaneAttributes) {
    const proto::LaneCaps caps = verbs_caps();
    EXPECT_TRUE(caps.pio);
    EXPECT_EQ(caps.pio_max, 256 - sizeof(proto::EagerOnlyHeader));
    EXPECT_EQ(caps.fragment_max, 8192 - sizeof(proto::EagerFirstHeader));
    EXPECT_TRUE(caps.zcopy);
    EXPECT_TRUE(caps.remote_keys);  // rndv_*_zcopy, never the *_cma ids
    EXPECT_EQ(caps.split_min, 0u);
    const common::CostFigures f;
    EXPECT_DOUBLE_EQ(caps.costs.latency_s, f.get("verbs_latency_s"));
    EXPECT_DOUBLE_EQ(caps.costs.message_s, f.get("verbs_overhead_s"));
    // cache off: a full registration
    EXPECT_DOUBLE_EQ(caps.costs.reg.fixed_s, f.get("verbs_reg_s"));
    tl::verbs::VerbsConfig vc;
    vc.costs = tl::verbs::verbs_lane_costs(f);
    EXPECT_DOUBLE_EQ(tl::verbs::lane_attr(vc, 256, false, true).costs.reg.fixed_s,
                     f.get("verbs_reg_hit_s"));  // cache on: a validated hit
}

TEST(VerbsSelect, DefaultTableIsInlineThenBcopyThenRdmaPut) {
    // Built-in figures: a registration (5 us) costs more than a message (0.3 us), so PUT,
    // which hides the sender's registration behind RTS and RTR, beats GET at every size.
    const proto::ProtoTable t = proto::select_protocols(verbs_caps(), {});
    ASSERT_EQ(t.ranges().size(), 3u) << t.print();
    EXPECT_EQ(t.ranges()[0].proto, ProtoId::kEagerShort);
    EXPECT_EQ(t.ranges()[0].max_size, 248u);
    EXPECT_EQ(t.ranges()[1].proto, ProtoId::kEagerBcopy);
    // bcopy (2.3 us + n (2.25e-10 + 0.3 us / 8160)) meets PUT (14.4 us + n 0.85e-9) at
    // n = 57138.9. (56902 until the verbs lane stopped borrowing shm's bcopy_overhead_s, a
    // shared-FIFO claim a verbs send never makes: its bcopy fixed cost was 2.35 us.)
    EXPECT_EQ(t.ranges()[1].max_size, 57138u);
    EXPECT_EQ(t.ranges()[2].proto, ProtoId::kRndvPutZcopy);
}

TEST(VerbsSelect, CheapRegistrationGivesGetThenPutWhereTheyCross) {
    // A validated cache hit cheaper than a message overhead: GET (one message less) wins
    // until the sender's per-byte check, which PUT hides, outweighs that message.
    proto::LaneCaps caps = verbs_caps();
    caps.costs.reg.fixed_s = 0.1e-6;
    caps.costs.reg.per_byte_s = 1.0 / 1000e9;  // 1 ps per byte: they cross at 200 KB
    const double o = caps.costs.message_s;
    const auto crossing =
        static_cast<size_t>((o - caps.costs.reg.fixed_s) / caps.costs.reg.per_byte_s);
    const proto::ProtoTable t = proto::select_protocols(caps, {});
    bool saw_get = false;
    for (const auto& r : t.ranges())
        saw_get |= r.proto == ProtoId::kRndvGetZcopy;
    ASSERT_TRUE(saw_get) << t.print();
    EXPECT_EQ(t.lookup(crossing - 1000), ProtoId::kRndvGetZcopy) << t.print();
    EXPECT_EQ(t.lookup(crossing + 1000), ProtoId::kRndvPutZcopy) << t.print();
    EXPECT_EQ(t.lookup(size_t{1} << 30), ProtoId::kRndvPutZcopy) << t.print();
}

TEST(VerbsSelect, SchemeAndAllowListPickTheRdmaFlavour) {
    proto::SelectOverrides put;
    put.rndv_scheme = "put";
    EXPECT_EQ(proto::select_protocols(verbs_caps(), put).lookup(1 << 20), ProtoId::kRndvPutZcopy);
    proto::SelectOverrides pipeline;
    pipeline.rndv_scheme = "pipeline";
    EXPECT_EQ(proto::select_protocols(verbs_caps(), pipeline).lookup(1 << 20),
              ProtoId::kRndvPipeline);
    proto::SelectOverrides no_zcopy;
    no_zcopy.allow = {"eager_short", "eager_bcopy", "rndv_pipeline"};
    const proto::ProtoTable t = proto::select_protocols(verbs_caps(), no_zcopy);
    for (const auto& r : t.ranges()) {
        EXPECT_NE(r.proto, ProtoId::kRndvGetZcopy);
        EXPECT_NE(r.proto, ProtoId::kRndvPutZcopy);
    }
    proto::SelectOverrides thresh;
    thresh.rndv_thresh = 4096;
    const proto::ProtoTable th = proto::select_protocols(verbs_caps(), thresh);
    EXPECT_EQ(th.lookup(4095), ProtoId::kEagerBcopy);
    EXPECT_GE(static_cast<int>(th.lookup(4096)), static_cast<int>(ProtoId::kRndvGetCma));
}

TEST(VerbsSelect, DeviceMemoryWithoutDmabufNeverUsesRdma) {
    proto::LaneCaps device = verbs_caps();
    device.pio = false;
    device.pio_max = 0;
    device.zcopy = false;  // what the endpoint sets when the device refuses dma-buf MRs
    device.stage_fixed_s = 2e-6;
    device.stage_per_byte_s = 1.0 / 5e9;
    const proto::ProtoTable t = proto::select_protocols(device, {});
    for (const auto& r : t.ranges()) {
        EXPECT_TRUE(r.proto == ProtoId::kEagerBcopy || r.proto == ProtoId::kRndvPipeline)
            << t.print();
    }
    EXPECT_EQ(t.lookup(64u << 20), ProtoId::kRndvPipeline);
    device.zcopy = true;  // a device with dma-buf MRs
    EXPECT_EQ(proto::select_protocols(device, {}).lookup(64u << 20), ProtoId::kRndvPutZcopy);
}
