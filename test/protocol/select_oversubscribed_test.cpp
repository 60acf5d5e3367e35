// The selector on an oversubscribed host (SelectOverrides::oversubscribed): a shm lane with
// CMA takes plain GET, which needs no CPU time from the sender, for every size from the
// rendezvous threshold the automatic choice gives; the table says why; SWY_RNDV_SCHEME and
// SWY_PROTO still decide; lanes with remote keys (RDMA) and lanes without zero-copy keep
// their automatic choice. And detect_oversubscription() from SWY_OVERSUBSCRIBED and
// SWY_LOCAL_PROCS.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "common/config.h"
#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "protocols/oversubscription.h"
#include "protocols/protocol.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/shm/shm_costs.h"

namespace swy::proto {
namespace {

constexpr size_t kInf = std::numeric_limits<size_t>::max();

// Figures under which an idle host splits large GETs (the built-in defaults of this
// version): a protocol that needs the sender after the match.
common::CostFigures figures() {
    common::CostFigures f;
    f.set("memcpy_bw_Bps", 1e10);
    f.set("shm_copy_bw_Bps", 2.4e10);
    f.set("cma_bw_Bps", 1e10);
    f.set("cma_call_s", 3e-6);
    f.set("fifo_latency_s", 0.3e-6);
    f.set("cell_overhead_s", 0.06e-6);
    f.set("pio_overhead_s", 0.02e-6);
    f.set("bcopy_overhead_s", 0.05e-6);
    return f;
}

/// A shm lane with PIO (4000 B) and fragments of 8000 B, with CMA (@p cma) or without.
tl::LaneAttr shm_lane(bool cma, bool remote_keys = false) {
    tl::LaneAttr a;
    a.transport = "shm";
    a.max_message = 8000 + sizeof(EagerFirstHeader);
    a.pio = true;
    a.pio_max_message = 4000 + sizeof(EagerOnlyHeader);
    if (cma) a.caps |= tl::cap::kGetZcopy | tl::cap::kPutZcopy;
    if (remote_keys) a.caps |= tl::cap::kRemoteKeys;
    a.rndv = true;
    a.costs = tl::shm::shm_lane_costs(figures());
    return a;
}

SelectOverrides automatic(bool oversubscribed) {
    SelectOverrides o;
    o.split_min = 128 * 1024;
    o.oversubscribed = oversubscribed;
    o.oversubscribed_why = "test: 16 local processes on 2 cores";
    return o;
}

/// The first size of the table's first rendezvous range (kInf: none).
size_t rndv_threshold(const ProtoTable& t) {
    size_t lo = 0;
    for (const ProtoRange& r : t.ranges()) {
        if (is_rendezvous(r.proto)) return lo;
        if (r.max_size == kInf) break;
        lo = r.max_size + 1;
    }
    return kInf;
}

TEST(SelectOversubscribed, GetAloneFromTheFirstSizeThatNeedsTwoFragments) {
    const tl::LaneAttr lane = shm_lane(true);
    const ProtoTable idle = table_for(lane, automatic(false));
    const ProtoTable busy = table_for(lane, automatic(true));
    const size_t idle_thresh = rndv_threshold(idle);
    ASSERT_NE(idle_thresh, kInf) << idle.print();
    // Eager up to one fragment (the idle host goes further), GET from the next byte.
    const size_t fragment = lane_caps(lane, automatic(true), nullptr).fragment_max;
    ASSERT_LT(fragment + 1, idle_thresh) << "the rule would change nothing: " << idle.print();
    const size_t thresh = fragment + 1;
    // The idle host uses a protocol that needs the sender after the match (a GET of at least
    // split_min bytes, which the receiver splits): otherwise this test proves nothing.
    ASSERT_EQ(idle.lookup(size_t{1} << 20), ProtoId::kRndvGetCma) << idle.print();
    ASSERT_GE(size_t{1} << 20, automatic(false).split_min);
    EXPECT_EQ(rndv_threshold(busy), thresh) << busy.print();
    for (size_t n :
         {thresh - 1, thresh, thresh + 1, size_t{64} << 10, size_t{1} << 20, size_t{256} << 20}) {
        const ProtoId expected = n < thresh ? idle.lookup(n) : ProtoId::kRndvGetCma;
        EXPECT_EQ(busy.lookup(n), expected) << n << " B:\n" << busy.print();
    }
    // One GET range, whose reason names the rule and its cause, so no split range either.
    size_t get_ranges = 0;
    for (const ProtoRange& r : busy.ranges()) {
        if (!is_rendezvous(r.proto)) continue;
        ++get_ranges;
        EXPECT_NE(r.reason.find("oversubscribed: test: 16 local processes on 2 cores"),
                  std::string::npos)
            << busy.print();
    }
    EXPECT_EQ(get_ranges, 1u) << busy.print();
}

TEST(SelectOversubscribed, ForcedSchemeAndAllowListStillDecide) {
    const tl::LaneAttr lane = shm_lane(true);
    SelectOverrides o = automatic(true);
    o.rndv_scheme = "pipeline";
    ProtoTable t = table_for(lane, o);
    EXPECT_EQ(t.lookup(size_t{1} << 20), ProtoId::kRndvPipeline) << t.print();
    EXPECT_NE(t.print().find("[SWY_RNDV_SCHEME=pipeline]"), std::string::npos) << t.print();
    EXPECT_EQ(t.print().find("oversubscribed"), std::string::npos) << t.print();

    o = automatic(true);
    o.allow = {"eager_short", "eager_bcopy", "rndv_pipeline"};  // no GET allowed
    t = table_for(lane, o);
    EXPECT_EQ(t.lookup(size_t{1} << 20), ProtoId::kRndvPipeline) << t.print();

    o = automatic(true);
    o.rndv_thresh = 100000;  // SWY_RNDV_THRESH moves where GET starts
    t = table_for(lane, o);
    EXPECT_NE(t.lookup(99999), ProtoId::kRndvGetCma) << t.print();
    EXPECT_EQ(t.lookup(100000), ProtoId::kRndvGetCma) << t.print();
    EXPECT_EQ(t.lookup(100001), ProtoId::kRndvGetCma) << t.print();
}

TEST(SelectOversubscribed, LanesWithoutCmaKeepTheirChoice) {
    for (const tl::LaneAttr& lane : {shm_lane(false), shm_lane(true, true)}) {
        const ProtoTable idle = table_for(lane, automatic(false));
        const ProtoTable busy = table_for(lane, automatic(true));
        EXPECT_EQ(busy.print(), idle.print());
    }
}

common::Config config_with(const char* mode, const std::string& procs) {
    common::Config c;
    EXPECT_EQ(c.set("OVERSUBSCRIBED", mode), Status::kOk);
    EXPECT_EQ(c.set("LOCAL_PROCS", procs), Status::kOk);
    return c;
}

TEST(SelectOversubscribed, DetectedFromTheLocalProcessCount) {
    const unsigned cores = usable_cores();
    ASSERT_GE(cores, 1u);
    // Up to SWY_OVERSUBSCRIBED_PER_CORE (4) processes per core is not oversubscribed; one more
    // is.
    EXPECT_FALSE(detect_oversubscription(config_with("auto", std::to_string(cores))).busy);
    EXPECT_FALSE(detect_oversubscription(config_with("auto", std::to_string(cores + 1))).busy);
    EXPECT_FALSE(detect_oversubscription(config_with("auto", std::to_string(4 * cores))).busy);
    EXPECT_TRUE(detect_oversubscription(config_with("auto", std::to_string(4 * cores + 1))).busy);
    common::Config one_per_core = config_with("auto", std::to_string(cores + 1));
    ASSERT_EQ(one_per_core.set("OVERSUBSCRIBED_PER_CORE", "1"), Status::kOk);
    EXPECT_TRUE(detect_oversubscription(one_per_core).busy);
    EXPECT_NE(one_per_core.set("OVERSUBSCRIBED_PER_CORE", "0"), Status::kOk);
    EXPECT_FALSE(detect_oversubscription(config_with("auto", "0")).busy);  // unknown
    const Oversubscription o = detect_oversubscription(config_with("auto", "64"));
    EXPECT_NE(o.why.find("64 local processes on " + std::to_string(cores) + " cores"),
              std::string::npos)
        << o.why;
    // yes and no are taken as said, whatever the count.
    EXPECT_TRUE(detect_oversubscription(config_with("yes", "1")).busy);
    EXPECT_FALSE(detect_oversubscription(config_with("no", "100000")).busy);
    // A value outside the choices is refused.
    common::Config c;
    EXPECT_NE(c.set("OVERSUBSCRIBED", "sometimes"), Status::kOk);
    // And overrides_from() carries the answer to the selector.
    const SelectOverrides from = overrides_from(config_with("yes", "0"));
    EXPECT_TRUE(from.oversubscribed);
    EXPECT_EQ(from.oversubscribed_why, "SWY_OVERSUBSCRIBED=yes");
}

}  // namespace
}  // namespace swy::proto
