// The middle sizes (issue 17): on a shm lane that reaches its peer with CMA, the automatic
// choice never takes the pipelined rendezvous, which streamed at 3-9 GB/s where GET (split
// between both cores from SWY_RNDV_SPLIT_MIN) reached 25-40 GB/s; eager carries up to where
// a GET wins, then GET. The pipeline stays where GET cannot run: a lane without CMA, an
// allow-list without rndv_get_cma, sizes below SWY_ZCOPY_THRESH, and SWY_RNDV_SCHEME=pipeline.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "protocols/protocol.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/shm/shm_costs.h"
#include "transports/shm/shm_iface.h"

namespace swy::proto {
namespace {

constexpr size_t kInf = std::numeric_limits<size_t>::max();

/// The real shm lane with a PIO ring, from the default segment geometry (PIO packets of
/// 8240 B, fragments of 8224 B), costed from the built-in figures of this version.
tl::LaneAttr shm_lane(bool cma) {
    tl::LaneAttr a = tl::shm::lane_attr(tl::shm::ShmConfig{}.geometry, true,
                                        tl::shm::shm_lane_costs(common::CostFigures{}));
    if (cma) a.caps |= tl::cap::kGetZcopy | tl::cap::kPutZcopy;
    return a;
}

SelectOverrides automatic() {
    SelectOverrides o;
    o.split_min = 128 * 1024;  // SWY_RNDV_SPLIT_MIN's default
    return o;
}

bool has_pipeline(const ProtoTable& t) {
    for (const ProtoRange& r : t.ranges()) {
        if (r.proto == ProtoId::kRndvPipeline) return true;
    }
    return false;
}

TEST(SelectMiddle, CmaLaneTakesNoPipelineAtAnySize) {
    const ProtoTable t = table_for(shm_lane(true), automatic());
    EXPECT_FALSE(has_pipeline(t)) << t.print();
    // Every power of two of the middle and beyond is eager or GET.
    for (size_t n = 1024; n <= (size_t{64} << 20); n *= 2) {
        const ProtoId p = t.lookup(n);
        EXPECT_TRUE(p == ProtoId::kRndvGetCma || p == ProtoId::kEagerBcopy ||
                    p == ProtoId::kEagerShort)
            << n << " B: " << proto_name(p) << "\n"
            << t.print();
    }
    EXPECT_EQ(t.lookup(kInf), ProtoId::kRndvGetCma) << t.print();
    // The same without PIO (window full, SWY_EP_FLAG_NO_PIO).
    tl::LaneAttr no_pio = shm_lane(true);
    no_pio.pio = false;
    no_pio.pio_max_message = 0;
    EXPECT_FALSE(has_pipeline(table_for(no_pio, automatic())))
        << table_for(no_pio, automatic()).print();
}

TEST(SelectMiddle, AutomaticCandidatesLeaveOutOnlyThePipeline) {
    const LaneCaps caps = lane_caps(shm_lane(true), automatic());
    const std::vector<Candidate> all = candidates(caps);
    const std::vector<Candidate> weighed = automatic_candidates(caps, automatic());
    ASSERT_EQ(weighed.size() + 1, all.size());
    for (const Candidate& c : weighed)
        EXPECT_NE(c.proto, ProtoId::kRndvPipeline);
}

TEST(SelectMiddle, PipelineStaysWhereGetCannotRun) {
    // No CMA: the pipeline is the only rendezvous.
    const ProtoTable no_cma = table_for(shm_lane(false), automatic());
    EXPECT_EQ(no_cma.lookup(size_t{1} << 20), ProtoId::kRndvPipeline) << no_cma.print();

    // SWY_PROTO without rndv_get_cma.
    SelectOverrides o = automatic();
    o.allow = {"eager_short", "eager_bcopy", "rndv_pipeline"};
    const ProtoTable no_get = table_for(shm_lane(true), o);
    EXPECT_EQ(no_get.lookup(size_t{1} << 20), ProtoId::kRndvPipeline) << no_get.print();

    // SWY_ZCOPY_THRESH: below it the pipeline may fill the gap, above it GET runs.
    o = automatic();
    o.zcopy_thresh = size_t{64} << 20;
    const ProtoTable late = table_for(shm_lane(true), o);
    EXPECT_EQ(late.lookup(size_t{32} << 20), ProtoId::kRndvPipeline) << late.print();
    EXPECT_EQ(late.lookup(size_t{64} << 20), ProtoId::kRndvGetCma) << late.print();

    // SWY_RNDV_SCHEME=pipeline forces it from the automatic threshold.
    o = automatic();
    o.rndv_scheme = "pipeline";
    const ProtoTable forced = table_for(shm_lane(true), o);
    EXPECT_EQ(forced.lookup(size_t{1} << 20), ProtoId::kRndvPipeline) << forced.print();
    EXPECT_NE(forced.print().find("[SWY_RNDV_SCHEME=pipeline]"), std::string::npos)
        << forced.print();
}

// The rendezvous threshold SWY_RNDV_SCHEME and the oversubscribed rule start from is the
// automatic one without the pipeline: the same table below it.
TEST(SelectMiddle, ForcedGetStartsWhereTheAutomaticRendezvousStarts) {
    const ProtoTable idle = table_for(shm_lane(true), automatic());
    SelectOverrides o = automatic();
    o.rndv_scheme = "get";
    const ProtoTable get = table_for(shm_lane(true), o);
    size_t lo = 0;
    size_t thresh = kInf;
    for (const ProtoRange& r : idle.ranges()) {
        if (is_rendezvous(r.proto)) {
            thresh = lo;
            break;
        }
        lo = r.max_size + 1;
    }
    ASSERT_NE(thresh, kInf) << idle.print();
    EXPECT_EQ(get.lookup(thresh - 1), idle.lookup(thresh - 1)) << get.print();
    EXPECT_EQ(get.lookup(thresh), ProtoId::kRndvGetCma) << get.print();
}

// Where the built-in figures put eager -> GET (issue 17). With 8 KiB PIO cells, swy-perf's
// eager ping-pong at 64 KiB took 4.7 us and GET 5.5 us, at 128 KiB eager 8.5 us and GET
// 6.8 us; windowed bandwidth at 64 KiB was 15.7 GB/s eager (8.9 GB/s through the 4 KiB cells
// before), GET at most 12.9 GB/s. The figures before this put the crossing at 76 503 B with
// 4 KiB cells; with 8 KiB cells and those figures it would be beyond 128 KiB. Both endpoint
// shapes (with and without a PIO ring) carry 8224-byte fragments (8144 before the cells
// counted messages only: the crossing moved from 102 647 B to 103 087 B).
TEST(SelectMiddle, BuiltInFiguresSendSixtyFourKiBEagerAndOneHundredTwentyEightKiBByGet) {
    tl::LaneAttr no_pio = shm_lane(true);
    no_pio.pio = false;
    no_pio.pio_max_message = 0;
    for (const tl::LaneAttr& lane : {shm_lane(true), no_pio}) {
        const ProtoTable t = table_for(lane, automatic());
        EXPECT_EQ(t.lookup(64 * 1024), ProtoId::kEagerBcopy) << t.print();
        // Between 64 and 128 KiB the measured lines cross near 85 KiB (eager 61 ps/B from
        // 4.7 us, GET ~20 ps/B from 5.5 us): 112 KiB is GET. The figures before put it at
        // 131 072 B (the split line at SWY_RNDV_SPLIT_MIN), so 112 KiB went eager.
        EXPECT_EQ(t.lookup(112 * 1024), ProtoId::kRndvGetCma) << t.print();
        EXPECT_EQ(t.lookup(128 * 1024), ProtoId::kRndvGetCma) << t.print();
    }
}

}  // namespace
}  // namespace swy::proto
