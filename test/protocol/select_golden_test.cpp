// Golden protocol tables: a lane's attributes (tl::LaneAttr, its costs filled by the
// transport's own cost function from synthetic cost figures) → the exact table the library
// builds for it (proto::table_for, the path core::Endpoint::wire takes). Every figure is set
// explicitly so a change of the built-in defaults does not move these tables; a change of the
// cost *model* (a formula, a constant such as the unexpected-message share) or of what a
// transport reports moves a threshold and fails a golden string here.
//
// The expected thresholds were derived by hand from the model documented in select.h /
// select.cpp (t = fixed + size × per-byte for each candidate) with exact rational
// arithmetic, independently of the C++ code; every crossing is far from an integer so
// floating-point rounding cannot move a boundary by one.
//
// Property tests then check, for random figures and lanes, that the table is well formed and
// that it picks the cheapest valid candidate at every size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "protocols/proto_table.h"
#include "protocols/protocol.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/shm/shm_costs.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"
#include "transports/verbs/lane_costs.h"

namespace swy::proto {
namespace {

using common::CostFigures;

constexpr size_t kInf = std::numeric_limits<size_t>::max();

// With these figures (per byte, seconds):
//   eager_short   fixed 0.520 us  per byte 1/4.1e9 + 0.25/7.3e9
//   eager_bcopy   fixed 0.548 us  per byte 1/4.1e9 + 0.118e-6/8000 + 0.25/7.3e9
//   rndv_get_cma  fixed 2.745 us  per byte 1/9.7e9 + 1.7e-6/512Ki
//   rndv_put_cma  fixed 3.242 us  same per byte as get
//   rndv_pipeline fixed 1.542 us  per byte 1/4.1e9 + 0.118e-6/8000
// Crossings: bcopy/get 11776.14, bcopy/put 14440.11, bcopy/pipeline 29024.8,
//            get/pipeline 7897.99, short/get 12950.07 (above pio_max 4000).
CostFigures golden_figures() {
    CostFigures f;
    f.set("memcpy_bw_Bps", 7.3e9);
    f.set("shm_copy_bw_Bps", 4.1e9);
    f.set("cma_bw_Bps", 9.7e9);
    f.set("cma_call_s", 1.7e-6);
    f.set("fifo_latency_s", 0.43e-6);
    f.set("cell_overhead_s", 0.067e-6);
    f.set("pio_overhead_s", 0.023e-6);
    f.set("bcopy_overhead_s", 0.051e-6);
    f.from_file = false;
    f.source = "golden test figures";
    return f;
}

// A shm-costed lane shaped for round numbers: eager_short up to 4000 B (a PIO packet smaller
// than the lane's messages, as verbs inline sends are), bcopy fragments of 8000 B.
tl::LaneAttr lane(bool pio, bool cma, bool rndv = true,
                  const CostFigures& figures = golden_figures()) {
    tl::LaneAttr a;
    a.transport = "shm";
    a.max_message = 8000 + sizeof(EagerFirstHeader);
    a.pio = pio;
    a.pio_max_message = pio ? 4000 + sizeof(EagerOnlyHeader) : 0;
    if (cma) a.caps |= tl::cap::kGetZcopy | tl::cap::kPutZcopy;  // CMA: no remote keys
    a.rndv = rndv;
    a.costs = tl::shm::shm_lane_costs(figures);
    return a;
}

SelectOverrides no_overrides() {
    SelectOverrides o;
    o.rndv_thresh = 0;
    o.zcopy_thresh = 0;
    o.pio_max = 0;
    o.rndv_scheme = "auto";
    o.allow = {};
    return o;
}

struct Row {
    std::string lo;
    std::string hi;
    std::string proto;
    std::string reason;
};

// Parse ProtoTable::print(): "<lo>..<hi> <protocol>  <reason>" per line.
std::vector<Row> parse(const std::string& printed) {
    std::vector<Row> rows;
    std::istringstream in(printed);
    std::string line;
    while (std::getline(in, line)) {
        Row r;
        size_t dots = line.find("..");
        size_t sp = line.find(' ');
        size_t sp2 = line.find("  ", sp + 1);
        if (dots == std::string::npos || sp == std::string::npos || sp2 == std::string::npos) {
            ADD_FAILURE() << "malformed table line: '" << line << "'";
            continue;
        }
        r.lo = line.substr(0, dots);
        r.hi = line.substr(dots + 2, sp - dots - 2);
        r.proto = line.substr(sp + 1, sp2 - sp - 1);
        r.reason = line.substr(sp2 + 2);
        rows.push_back(r);
    }
    return rows;
}

// The printed table without reasons: "lo..hi proto" lines, for exact golden comparison.
std::string ranges_of(const ProtoTable& t) {
    std::string out;
    for (const Row& r : parse(t.print()))
        out += r.lo + ".." + r.hi + " " + r.proto + "\n";
    return out;
}

ProtoTable select(const tl::LaneAttr& l, const SelectOverrides& o = no_overrides()) {
    return table_for(l, o);
}

std::vector<Candidate> candidates_of(const tl::LaneAttr& l,
                                     const SelectOverrides& o = no_overrides()) {
    return candidates(lane_caps(l, o));
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// ------------------------------------------------------------------------------------------
// Golden tables: lanes
// ------------------------------------------------------------------------------------------

TEST(SelectGolden, PioLaneWithCma) {
    ProtoTable t = select(lane(true, true));
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..11776 eager_bcopy\n"
              "11777..inf rndv_get_cma\n")
        << t.print();
    for (const Row& r : parse(t.print())) {
        EXPECT_TRUE(starts_with(r.reason, "t(")) << r.reason;
        EXPECT_NE(r.reason.find(", beats "), std::string::npos) << r.reason;
    }
    EXPECT_EQ(t.lookup(0), ProtoId::kEagerShort);
    EXPECT_EQ(t.lookup(4000), ProtoId::kEagerShort);
    EXPECT_EQ(t.lookup(4001), ProtoId::kEagerBcopy);
    EXPECT_EQ(t.lookup(11776), ProtoId::kEagerBcopy);
    EXPECT_EQ(t.lookup(11777), ProtoId::kRndvGetCma);
    EXPECT_EQ(t.lookup(kInf), ProtoId::kRndvGetCma);
}

TEST(SelectGolden, NoPioLaneWithCma) {
    ProtoTable t = select(lane(false, true));
    EXPECT_EQ(ranges_of(t),
              "0..11776 eager_bcopy\n"
              "11777..inf rndv_get_cma\n")
        << t.print();
}

TEST(SelectGolden, NoCmaFallsToPipeline) {
    ProtoTable t = select(lane(true, false));
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..29024 eager_bcopy\n"
              "29025..inf rndv_pipeline\n")
        << t.print();
}

TEST(SelectGolden, SelfLikeLaneWithoutRendezvousIsEagerOnly) {
    ProtoTable t = select(lane(true, true, /*rndv=*/false));
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..inf eager_bcopy\n")
        << t.print();
    ProtoTable t2 = select(lane(false, false, /*rndv=*/false));
    EXPECT_EQ(ranges_of(t2), "0..inf eager_bcopy\n") << t2.print();
    // The reason of a range with one candidate says so.
    EXPECT_NE(parse(t2.print()).at(0).reason.find("only candidate"), std::string::npos)
        << t2.print();
}

// LaneCaps come from the lane's capability bits alone, whatever the transport is called:
// zero-copy get and put without remote keys run the *_cma protocols (and may split a GET),
// with remote keys the *_zcopy ones.
TEST(SelectGolden, LaneCapsComeFromCapabilityBits) {
    SelectOverrides o = no_overrides();
    o.split_min = 1 << 20;
    tl::LaneAttr a = lane(false, false);
    a.transport = "some-transport";
    a.caps = tl::cap::kAmBcopy | tl::cap::kGetZcopy;  // get alone: no zero-copy protocols
    LaneCaps c = lane_caps(a, o);
    EXPECT_FALSE(c.zcopy);
    EXPECT_EQ(c.split_min, 0u);
    a.caps |= tl::cap::kPutZcopy;
    c = lane_caps(a, o);
    EXPECT_TRUE(c.zcopy);
    EXPECT_FALSE(c.remote_keys);
    EXPECT_EQ(c.split_min, size_t{1} << 20);
    EXPECT_EQ(select_protocols(c, o).lookup(64u << 20), ProtoId::kRndvGetCma);
    a.caps |= tl::cap::kRemoteKeys;
    c = lane_caps(a, o);
    EXPECT_TRUE(c.zcopy);
    EXPECT_TRUE(c.remote_keys);
    EXPECT_EQ(c.split_min, 0u);  // a GET with keys completes later: never split
    const ProtoId big = select_protocols(c, o).lookup(64u << 20);
    EXPECT_TRUE(big == ProtoId::kRndvGetZcopy || big == ProtoId::kRndvPutZcopy) << proto_name(big);
    // From device memory: only with keys and where the memory can be registered.
    DeviceMemoryPath device;
    device.zcopy_reaches = false;
    EXPECT_FALSE(lane_caps(a, o, &device).zcopy);
    device.zcopy_reaches = true;
    EXPECT_TRUE(lane_caps(a, o, &device).zcopy);
    a.caps &= ~tl::cap::kRemoteKeys;  // CMA: the CPU must not touch device memory
    EXPECT_FALSE(lane_caps(a, o, &device).zcopy);
}

TEST(SelectGolden, CandidatesOfPioCmaLaneHaveModelCosts) {
    std::vector<Candidate> c = candidates_of(lane(true, true));
    ASSERT_EQ(c.size(), 5u);
    EXPECT_EQ(c[0].proto, ProtoId::kEagerShort);
    EXPECT_EQ(c[0].max_size, 4000u);
    EXPECT_NEAR(c[0].fixed_s, 0.520e-6, 1e-15);
    EXPECT_NEAR(c[1].fixed_s, 0.548e-6, 1e-15);
    EXPECT_NEAR(c[2].fixed_s, 2.745e-6, 1e-15);
    EXPECT_NEAR(c[3].fixed_s, 3.242e-6, 1e-15);
    EXPECT_NEAR(c[4].fixed_s, 1.542e-6, 1e-15);
    EXPECT_NEAR(c[4].per_byte_s, 1 / 4.1e9 + 0.118e-6 / 8000, 1e-22);
    EXPECT_NEAR(c[2].per_byte_s, 1 / 9.7e9 + 1.7e-6 / (512.0 * 1024), 1e-22);
    EXPECT_DOUBLE_EQ(c[2].per_byte_s, c[3].per_byte_s);
}

// ------------------------------------------------------------------------------------------
// Golden tables: overrides
// ------------------------------------------------------------------------------------------

TEST(SelectGolden, RndvThreshPutsEagerBelowAndRendezvousFromExactlyThreshold) {
    SelectOverrides o = no_overrides();
    o.rndv_thresh = 8192;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..8191 eager_bcopy\n"
              "8192..inf rndv_get_cma\n")
        << t.print();
    EXPECT_EQ(t.lookup(8191), ProtoId::kEagerBcopy);
    EXPECT_EQ(t.lookup(8192), ProtoId::kRndvGetCma);
    auto rows = parse(t.print());
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_NE(rows[1].reason.find("[SWY_RNDV_THRESH]"), std::string::npos) << t.print();
    EXPECT_NE(rows[2].reason.find("[SWY_RNDV_THRESH]"), std::string::npos) << t.print();
    EXPECT_EQ(rows[0].reason.find("[SWY_RNDV_THRESH]"), std::string::npos) << t.print();
}

TEST(SelectGolden, RndvThreshBelowPioMaxCutsEagerShortAndPicksCheapestRendezvous) {
    SelectOverrides o = no_overrides();
    o.rndv_thresh = 1000;
    ProtoTable t = select(lane(true, true), o);
    // On a lane with CMA the pipeline is no automatic choice (automatic_candidates()).
    EXPECT_EQ(ranges_of(t),
              "0..999 eager_short\n"
              "1000..inf rndv_get_cma\n")
        << t.print();
}

TEST(SelectGolden, RndvThreshWithPipelineScheme) {
    SelectOverrides o = no_overrides();
    o.rndv_thresh = 8192;
    o.rndv_scheme = "pipeline";
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..8191 eager_bcopy\n"
              "8192..inf rndv_pipeline\n")
        << t.print();
}

// SWY_RNDV_THRESH=inf is documented to disable rendezvous: no range may name one.
TEST(SelectGolden, RndvThreshInfinityDisablesRendezvous) {
    SelectOverrides o = no_overrides();
    o.rndv_thresh = kInf;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..inf eager_bcopy\n")
        << t.print();
}

TEST(SelectGolden, ZcopyThreshDelaysZeroCopyAndPipelineFillsTheGap) {
    SelectOverrides o = no_overrides();
    o.zcopy_thresh = 1u << 20;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..29024 eager_bcopy\n"
              "29025..1048575 rndv_pipeline\n"
              "1048576..inf rndv_get_cma\n")
        << t.print();
}

TEST(SelectGolden, PioMaxOverrideLowersEagerShortLimit) {
    SelectOverrides o = no_overrides();
    o.pio_max = 1000;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..1000 eager_short\n"
              "1001..11776 eager_bcopy\n"
              "11777..inf rndv_get_cma\n")
        << t.print();
}

TEST(SelectGolden, PioMaxOverrideCannotRaiseTheLaneLimit) {
    SelectOverrides o = no_overrides();
    o.pio_max = 20000;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..11776 eager_bcopy\n"
              "11777..inf rndv_get_cma\n")
        << t.print();
}

// A forced scheme starts where the automatic choice starts a rendezvous (11777, GET's
// crossing with eager_bcopy), not where its own line would cross eager (14441 for PUT).
TEST(SelectGolden, RndvSchemePut) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "put";
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..11776 eager_bcopy\n"
              "11777..inf rndv_put_cma\n")
        << t.print();
    EXPECT_NE(t.print().find("[SWY_RNDV_SCHEME=put]"), std::string::npos) << t.print();
}

// PUT's line never beats eager_bcopy (its per-byte cost made higher than eager's): before,
// forcing it left no rendezvous at all; now it runs from the automatic threshold.
TEST(SelectGolden, RndvSchemePutRunsEvenWhereItsLineNeverWins) {
    LaneCaps l = lane_caps(lane(true, true), no_overrides());
    l.costs.put_zcopy.per_byte_s = 1e-9;  // 1 GB/s: worse than eager_bcopy at every size
    SelectOverrides o = no_overrides();
    ProtoTable automatic = select_protocols(l, o);
    o.rndv_scheme = "put";
    ProtoTable t = select_protocols(l, o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..11776 eager_bcopy\n"
              "11777..inf rndv_put_cma\n")
        << t.print() << "automatic:\n"
        << automatic.print();
}

TEST(SelectGolden, RndvSchemeWithoutThatSchemeOnTheLaneKeepsTheAutomaticChoice) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "get";  // no CMA on this lane
    EXPECT_EQ(ranges_of(select(lane(true, false), o)), ranges_of(select(lane(true, false))));
    o.rndv_scheme = "put";
    o.allow = {"eager_short", "eager_bcopy", "rndv_pipeline"};  // put excluded by SWY_PROTO
    SelectOverrides auto_allow = no_overrides();
    auto_allow.allow = o.allow;
    EXPECT_EQ(ranges_of(select(lane(true, true), o)),
              ranges_of(select(lane(true, true), auto_allow)));
}

TEST(SelectGolden, RndvSchemeGetStartsAtZcopyThresh) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "get";
    o.zcopy_thresh = 65536;
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..65535 eager_bcopy\n"
              "65536..inf rndv_get_cma\n")
        << t.print();
}

TEST(SelectGolden, RndvSchemeGetEqualsAuto) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "get";
    EXPECT_EQ(ranges_of(select(lane(true, true), o)), ranges_of(select(lane(true, true))));
}

TEST(SelectGolden, RndvSchemePipeline) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "pipeline";
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..11776 eager_bcopy\n"
              "11777..inf rndv_pipeline\n")
        << t.print();
}

TEST(SelectGolden, AllowOnlyEagerShortFallsToBcopyAbovePioMaxAndSaysWhy) {
    SelectOverrides o = no_overrides();
    o.allow = {"eager_short"};
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..inf eager_bcopy\n")
        << t.print();
    auto rows = parse(t.print());
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_TRUE(starts_with(rows[1].reason, "no allowed protocol covers these sizes"))
        << rows[1].reason;
    EXPECT_NE(rows[1].reason.find("SWY_PROTO"), std::string::npos) << rows[1].reason;
    EXPECT_NE(rows[0].reason.find("only candidate"), std::string::npos) << rows[0].reason;
}

TEST(SelectGolden, AllowOnlyEagerShortWithoutPioIsAllBcopy) {
    SelectOverrides o = no_overrides();
    o.allow = {"eager_short"};
    ProtoTable t = select(lane(false, true), o);
    EXPECT_EQ(ranges_of(t), "0..inf eager_bcopy\n") << t.print();
    EXPECT_TRUE(starts_with(parse(t.print()).at(0).reason, "no allowed protocol")) << t.print();
}

TEST(SelectGolden, AllowOnlyGetIsRendezvousFromZero) {
    SelectOverrides o = no_overrides();
    o.allow = {"rndv_get_cma"};
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t), "0..inf rndv_get_cma\n") << t.print();
    EXPECT_EQ(t.lookup(0), ProtoId::kRndvGetCma);
}

TEST(SelectGolden, AllowOnlyRendezvousSchemesIsRendezvousFromZero) {
    SelectOverrides o = no_overrides();
    o.allow = {"rndv_get_cma", "rndv_put_cma", "rndv_pipeline"};
    ProtoTable t = select(lane(true, true), o);
    // The pipeline is no automatic choice where GET may run (automatic_candidates()).
    EXPECT_EQ(ranges_of(t), "0..inf rndv_get_cma\n") << t.print();
}

TEST(SelectGolden, AllowOnlyGetOnLaneWithoutCmaFallsToBcopy) {
    SelectOverrides o = no_overrides();
    o.allow = {"rndv_get_cma"};
    ProtoTable t = select(lane(true, false), o);
    EXPECT_EQ(ranges_of(t), "0..inf eager_bcopy\n") << t.print();
    EXPECT_TRUE(starts_with(parse(t.print()).at(0).reason, "no allowed protocol")) << t.print();
}

TEST(SelectGolden, AllowAllIsTheSameAsNoList) {
    SelectOverrides o = no_overrides();
    o.allow = {"all"};
    EXPECT_EQ(select(lane(true, true), o).print(), select(lane(true, true)).print());
}

// ------------------------------------------------------------------------------------------
// Golden tables: tcp, from tcp's own figures
// ------------------------------------------------------------------------------------------

// tcp figures (the shm figures stay golden_figures(), which tcp must not read):
//   eager_bcopy   fixed L + m = 14.083 us   per byte 1/1.9e9 + m/262112 + 0.25/7.3e9
//   rndv_pipeline fixed 3 (L + m)           per byte 1/1.9e9 + m/262112
// They cross where 2 (L + m) = n × 0.25 / memcpy: n = 8 × 14.083e-6 × 7.3e9 = 822447.2.
CostFigures tcp_figures() {
    CostFigures f = golden_figures();
    f.set("tcp_latency_s", 11.37e-6);
    f.set("tcp_overhead_s", 2.713e-6);
    f.set("tcp_bw_Bps", 1.9e9);
    return f;
}

// The lane a tcp interface reports (tl::tcp::lane_attr), costed by tcp_lane_costs().
tl::LaneAttr tcp_lane(const CostFigures& figures = tcp_figures()) {
    tl::tcp::TcpConfig config;
    config.costs = tl::tcp::tcp_lane_costs(figures);
    return tl::tcp::lane_attr(config);
}

TEST(SelectGoldenTcp, EagerBcopyThenPipelineWhereTcpFiguresCross) {
    ProtoTable t = select(tcp_lane());
    EXPECT_EQ(ranges_of(t),
              "0..822447 eager_bcopy\n"
              "822448..inf rndv_pipeline\n")
        << t.print();
    const LaneCaps caps = lane_caps(tcp_lane(), no_overrides());
    EXPECT_FALSE(caps.pio);
    EXPECT_FALSE(caps.zcopy);
    EXPECT_FALSE(caps.remote_keys);
    EXPECT_EQ(caps.fragment_max, tl::tcp::kMaxFrameBody - sizeof(EagerFirstHeader));
}

TEST(SelectGoldenTcp, CandidatesHaveTcpCosts) {
    std::vector<Candidate> c = candidates_of(tcp_lane());
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].proto, ProtoId::kEagerBcopy);
    EXPECT_NEAR(c[0].fixed_s, 14.083e-6, 1e-15);
    EXPECT_NEAR(
        c[0].per_byte_s,
        1 / 1.9e9 + 2.713e-6 / (tl::tcp::kMaxFrameBody - sizeof(EagerFirstHeader)) + 0.25 / 7.3e9,
        1e-22);
    EXPECT_EQ(c[1].proto, ProtoId::kRndvPipeline);
    EXPECT_NEAR(c[1].fixed_s, 3 * 14.083e-6, 1e-15);
}

TEST(SelectGoldenTcp, RndvThreshOverridesTheDerivedThreshold) {
    SelectOverrides o = no_overrides();
    o.rndv_thresh = 65536;
    EXPECT_EQ(ranges_of(select(tcp_lane(), o)),
              "0..65535 eager_bcopy\n"
              "65536..inf rndv_pipeline\n");
}

// The tcp table is computed from tcp's figures, not shared memory's: the same lane costed with
// the shm figures (what the selector used before tcp had figures of its own) crosses at
// 2 (fifo latency + cell overhead) / (0.25 / memcpy) = 29024.8 instead.
TEST(SelectGoldenTcp, TcpTableDiffersFromTheShmCostedOne) {
    tl::LaneAttr shm_costed = tcp_lane();
    shm_costed.costs = tl::shm::shm_lane_costs(tcp_figures());
    EXPECT_EQ(ranges_of(select(shm_costed)),
              "0..29024 eager_bcopy\n"
              "29025..inf rndv_pipeline\n");
    EXPECT_NE(ranges_of(select(tcp_lane())), ranges_of(select(shm_costed)));
}

TEST(SelectGoldenTcp, OnlyTcpFiguresMoveTheTcpTable) {
    CostFigures f = tcp_figures();
    const std::string base = ranges_of(select(tcp_lane(f)));
    f.set("fifo_latency_s", f.get("fifo_latency_s") * 10);  // shm figures: no effect on a tcp lane
    f.set("cell_overhead_s", f.get("cell_overhead_s") * 10);
    f.set("shm_copy_bw_Bps", f.get("shm_copy_bw_Bps") / 10);
    f.set("verbs_latency_s", f.get("verbs_latency_s") * 10);
    EXPECT_EQ(ranges_of(select(tcp_lane(f))), base);
    // tcp's own latency: rendezvous moves later
    f.set("tcp_latency_s", f.get("tcp_latency_s") * 2);
    const ProtoTable slower = select(tcp_lane(f));
    EXPECT_NE(ranges_of(slower), base);
    EXPECT_GT(slower.ranges().front().max_size, 822447u) << slower.print();
}

// And the reverse: shm tables do not read the tcp figures.
TEST(SelectGoldenTcp, TcpFiguresDoNotMoveShmTables) {
    CostFigures f = golden_figures();
    const std::string base = ranges_of(select(lane(true, true, true, f)));
    f.set("tcp_latency_s", f.get("tcp_latency_s") * 10);
    f.set("tcp_overhead_s", f.get("tcp_overhead_s") * 10);
    f.set("tcp_bw_Bps", f.get("tcp_bw_Bps") / 10);
    EXPECT_EQ(ranges_of(select(lane(true, true, true, f))), base);
}

// ------------------------------------------------------------------------------------------
// Properties over random figures and lanes
// ------------------------------------------------------------------------------------------

double log_uniform(std::mt19937_64& rng, double lo, double hi) {
    std::uniform_real_distribution<double> d(std::log(lo), std::log(hi));
    return std::exp(d(rng));
}

CostFigures random_figures(std::mt19937_64& rng) {
    CostFigures f;
    f.set("memcpy_bw_Bps", log_uniform(rng, 1e9, 5e10));
    f.set("shm_copy_bw_Bps", log_uniform(rng, 5e8, 3e10));
    f.set("cma_bw_Bps", log_uniform(rng, 1e9, 5e10));
    f.set("cma_call_s", log_uniform(rng, 1e-7, 2e-5));
    f.set("fifo_latency_s", log_uniform(rng, 5e-8, 5e-6));
    f.set("cell_overhead_s", log_uniform(rng, 5e-9, 1e-6));
    f.set("pio_overhead_s", log_uniform(rng, 5e-9, 1e-6));
    f.set("bcopy_overhead_s", log_uniform(rng, 5e-9, 1e-6));
    f.set("tcp_latency_s", log_uniform(rng, 1e-6, 1e-4));
    f.set("tcp_overhead_s", log_uniform(rng, 1e-7, 2e-5));
    f.set("tcp_bw_Bps", log_uniform(rng, 1e8, 1e10));
    f.set("verbs_latency_s", log_uniform(rng, 5e-7, 2e-5));
    f.set("verbs_overhead_s", log_uniform(rng, 5e-8, 5e-6));
    f.set("verbs_bw_Bps", log_uniform(rng, 1e8, 5e10));
    f.set("verbs_rdma_overhead_s", log_uniform(rng, 5e-8, 5e-6));
    f.set("verbs_rdma_bw_Bps", log_uniform(rng, 1e8, 5e10));
    f.set("verbs_reg_s", log_uniform(rng, 1e-7, 1e-4));
    f.set("verbs_reg_Bps", log_uniform(rng, 1e9, 1e12));
    f.from_file = false;
    f.source = "random";
    return f;
}

// A random lane shape with the costs of a random transport (shm with or without CMA, tcp,
// verbs with RDMA) under @p f: every transport's cost function feeds the properties.
LaneCaps random_lane(std::mt19937_64& rng, const CostFigures& f) {
    LaneCaps l;
    l.pio = rng() % 2 == 0;
    l.pio_max = l.pio ? static_cast<size_t>(log_uniform(rng, 8, 65536)) : 0;
    l.fragment_max = static_cast<size_t>(log_uniform(rng, 32, 1 << 20));
    l.rndv = rng() % 5 != 0;
    switch (rng() % 3) {
        case 0:
            l.costs = tl::shm::shm_lane_costs(f);
            l.zcopy = rng() % 2 == 0;  // CMA
            break;
        case 1: l.costs = tl::tcp::tcp_lane_costs(f); break;
        default:
            l.costs = tl::verbs::verbs_lane_costs(f).rcache_off;
            l.zcopy = true;  // RDMA
            l.remote_keys = true;
            break;
    }
    return l;
}

size_t random_size(std::mt19937_64& rng) {
    switch (rng() % 4) {
        case 0: return rng() % 256;
        default: return static_cast<size_t>(log_uniform(rng, 1, 1e12));
    }
}

std::string describe(const LaneCaps& l, const CostFigures& f) {
    std::ostringstream s;
    s << "lane{pio=" << l.pio << " pio_max=" << l.pio_max << " frag=" << l.fragment_max
      << " zcopy=" << l.zcopy << " keys=" << l.remote_keys << " rndv=" << l.rndv
      << " L=" << l.costs.latency_s << " m=" << l.costs.message_s
      << "} figures{memcpy=" << f.get("memcpy_bw_Bps") << " shm=" << f.get("shm_copy_bw_Bps")
      << " cma_bw=" << f.get("cma_bw_Bps") << " cma_call=" << f.get("cma_call_s")
      << " L=" << f.get("fifo_latency_s") << " cell=" << f.get("cell_overhead_s")
      << " pio=" << f.get("pio_overhead_s") << " bcopy=" << f.get("bcopy_overhead_s") << "}";
    return s.str();
}

// Ranges start at 0, each starts right after the previous one, upper bounds increase, the last
// one is open-ended, and neighbours differ (equal neighbours are merged).
void expect_well_formed(const ProtoTable& t, const std::string& ctx) {
    ASSERT_FALSE(t.empty()) << ctx;
    const auto& r = t.ranges();
    for (size_t i = 1; i < r.size(); ++i) {
        EXPECT_LT(r[i - 1].max_size, r[i].max_size) << ctx << "\n" << t.print();
        EXPECT_NE(r[i - 1].proto, r[i].proto) << ctx << "\n" << t.print();
    }
    EXPECT_EQ(r.back().max_size, kInf) << ctx << "\n" << t.print();
    auto rows = parse(t.print());
    ASSERT_EQ(rows.size(), r.size()) << t.print();
    EXPECT_EQ(rows.front().lo, "0");
    EXPECT_EQ(rows.back().hi, "inf");
    for (size_t i = 1; i < rows.size(); ++i) {
        EXPECT_EQ(std::stoull(rows[i].lo), std::stoull(rows[i - 1].hi) + 1) << t.print();
    }
}

// The chosen protocol costs no more than any candidate valid at that size (ties allowed).
void expect_argmin(const ProtoTable& t, const std::vector<Candidate>& cands, size_t size,
                   const std::string& ctx) {
    const ProtoId chosen = t.lookup(size);
    const Candidate* best = nullptr;
    const Candidate* picked = nullptr;
    for (const Candidate& c : cands) {
        if (size < c.min_size || size > c.max_size) continue;
        if (best == nullptr || c.at(size) < best->at(size)) best = &c;
        if (c.proto == chosen) picked = &c;
    }
    ASSERT_NE(best, nullptr) << ctx;  // eager_bcopy covers every size
    ASSERT_NE(picked, nullptr) << ctx << ": " << proto_name(chosen) << " chosen at " << size
                               << " where it is not valid\n"
                               << t.print();
    EXPECT_LE(picked->at(size), best->at(size) * (1 + 1e-9))
        << ctx << ": at " << size << " the table picks " << proto_name(chosen) << " ("
        << picked->at(size) << " s) but " << proto_name(best->proto) << " costs " << best->at(size)
        << " s\n"
        << t.print();
}

TEST(SelectProperty, RangesAreContiguousAndIncreasing) {
    std::mt19937_64 rng(20240611);
    for (int trial = 0; trial < 500; ++trial) {
        CostFigures f = random_figures(rng);
        LaneCaps l = random_lane(rng, f);
        SelectOverrides o = no_overrides();
        if (trial % 3 == 1) o.rndv_thresh = random_size(rng) + 1;
        if (trial % 5 == 2) o.zcopy_thresh = random_size(rng) + 1;
        if (trial % 7 == 3) o.pio_max = random_size(rng) + 1;
        if (trial % 4 == 0) o.rndv_scheme = (trial / 4) % 2 ? "put" : "pipeline";
        ProtoTable t = select_protocols(l, o);
        expect_well_formed(t, describe(l, f));
        if (HasFailure()) return;
    }
}

TEST(SelectProperty, ChosenProtocolIsTheCheapestCandidateAtEverySize) {
    std::mt19937_64 rng(77);
    for (int trial = 0; trial < 500; ++trial) {
        CostFigures f = random_figures(rng);
        LaneCaps l = random_lane(rng, f);
        ProtoTable t = select_protocols(l, no_overrides());
        std::vector<Candidate> cands = automatic_candidates(l, no_overrides());
        const std::string ctx = describe(l, f);
        for (int k = 0; k < 200; ++k)
            expect_argmin(t, cands, random_size(rng), ctx);
        // Both sides of every boundary.
        for (const ProtoRange& r : t.ranges()) {
            if (r.max_size == kInf || r.max_size > (size_t{1} << 50)) continue;
            expect_argmin(t, cands, r.max_size, ctx);
            expect_argmin(t, cands, r.max_size + 1, ctx);
        }
        if (HasFailure()) return;
    }
}

TEST(SelectProperty, GoldenFiguresPickTheCheapestCandidateAroundEveryBoundary) {
    for (bool pio : {false, true}) {
        for (bool cma : {false, true}) {
            const tl::LaneAttr l = lane(pio, cma);
            ProtoTable t = select(l);
            std::vector<Candidate> cands =
                automatic_candidates(lane_caps(l, no_overrides()), no_overrides());
            for (const ProtoRange& r : t.ranges()) {
                if (r.max_size == kInf) continue;
                for (size_t d : {0, 1, 2}) {
                    expect_argmin(t, cands, r.max_size - std::min(d, r.max_size), "golden");
                    expect_argmin(t, cands, r.max_size + 1 + d, "golden");
                }
            }
        }
    }
}

TEST(SelectProperty, RndvThreshSplitsEagerFromRendezvousExactly) {
    std::mt19937_64 rng(4242);
    for (int trial = 0; trial < 300; ++trial) {
        CostFigures f = random_figures(rng);
        LaneCaps l = random_lane(rng, f);
        l.rndv = true;
        SelectOverrides o = no_overrides();
        o.rndv_thresh = random_size(rng) + 1;
        ProtoTable t = select_protocols(l, o);
        const std::string ctx = describe(l, f) + " rndv_thresh=" + std::to_string(o.rndv_thresh);
        auto is_rndv = [](ProtoId p) { return p >= ProtoId::kRndvGetCma; };
        EXPECT_FALSE(is_rndv(t.lookup(o.rndv_thresh - 1))) << ctx << "\n" << t.print();
        EXPECT_TRUE(is_rndv(t.lookup(o.rndv_thresh))) << ctx << "\n" << t.print();
        EXPECT_TRUE(is_rndv(t.lookup(o.rndv_thresh + 12345))) << ctx << "\n" << t.print();
        EXPECT_FALSE(is_rndv(t.lookup(0))) << ctx << "\n" << t.print();
        if (HasFailure()) return;
    }
}

// SWY_RNDV_SCHEME=X: wherever the automatic table has a rendezvous and the lane offers X,
// every size from the automatic threshold on is X, and every size below it is what the
// automatic table says.
TEST(SelectProperty, ForcedSchemeRunsFromTheAutomaticThreshold) {
    std::mt19937_64 rng(1818);
    const char* const schemes[] = {"get", "put", "pipeline"};
    for (int trial = 0; trial < 300; ++trial) {
        CostFigures f = random_figures(rng);
        LaneCaps l = random_lane(rng, f);
        const SelectOverrides none = no_overrides();
        const ProtoTable automatic = select_protocols(l, none);
        size_t thresh = kInf;
        size_t lo = 0;
        for (const ProtoRange& r : automatic.ranges()) {
            if (is_rendezvous(r.proto)) {
                thresh = lo;
                break;
            }
            if (r.max_size == kInf) break;
            lo = r.max_size + 1;
        }
        for (const char* scheme : schemes) {
            SelectOverrides o = none;
            o.rndv_scheme = scheme;
            const ProtoTable t = select_protocols(l, o);
            const std::string ctx = describe(l, f) + " scheme=" + scheme;
            const bool offered = std::string(scheme) == "pipeline" ? l.rndv : l.rndv && l.zcopy;
            if (!offered || thresh == kInf) {
                EXPECT_EQ(ranges_of(t), ranges_of(automatic)) << ctx;
                continue;
            }
            const ProtoId want =
                std::string(scheme) == "pipeline" ? ProtoId::kRndvPipeline
                : std::string(scheme) == "get"
                    ? (l.remote_keys ? ProtoId::kRndvGetZcopy : ProtoId::kRndvGetCma)
                    : (l.remote_keys ? ProtoId::kRndvPutZcopy : ProtoId::kRndvPutCma);
            for (const size_t n : {thresh, thresh + 1, thresh + random_size(rng), kInf / 2}) {
                if (n < thresh) continue;
                EXPECT_EQ(t.lookup(n), want) << ctx << " size " << n << "\n" << t.print();
            }
            for (int k = 0; k < 20 && thresh > 0; ++k) {
                const size_t n = random_size(rng) % thresh;
                EXPECT_EQ(t.lookup(n), automatic.lookup(n)) << ctx << " size " << n;
            }
            if (HasFailure()) return;
        }
    }
}

}  // namespace
}  // namespace swy::proto
