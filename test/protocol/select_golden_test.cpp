// Golden protocol tables: synthetic lanes × synthetic cost figures → the exact table the
// selector prints. Every figure is set explicitly so a change of the built-in defaults does
// not move these tables; a change of the cost *model* (a formula, a constant such as the
// unexpected-message share) moves a threshold and fails a golden string here.
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

#include "protocols/cost_figures.h"
#include "protocols/proto_table.h"
#include "protocols/select.h"

namespace swy::proto {
namespace {

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
    f.memcpy_bw_Bps = 7.3e9;
    f.shm_copy_bw_Bps = 4.1e9;
    f.cma_bw_Bps = 9.7e9;
    f.cma_call_s = 1.7e-6;
    f.fifo_latency_s = 0.43e-6;
    f.cell_overhead_s = 0.067e-6;
    f.pio_overhead_s = 0.023e-6;
    f.bcopy_overhead_s = 0.051e-6;
    f.from_file = false;
    f.source = "golden test figures";
    return f;
}

LaneCaps lane(bool pio, bool cma, bool rndv = true) {
    LaneCaps l;
    l.pio = pio;
    l.pio_max = pio ? 4000 : 0;
    l.fragment_max = 8000;
    l.cma = cma;
    l.rndv = rndv;
    return l;
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
    for (const Row& r : parse(t.print())) out += r.lo + ".." + r.hi + " " + r.proto + "\n";
    return out;
}

ProtoTable select(const LaneCaps& l, const SelectOverrides& o = no_overrides()) {
    return select_protocols(l, golden_figures(), o);
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

TEST(SelectGolden, CandidatesOfPioCmaLaneHaveModelCosts) {
    std::vector<Candidate> c = candidates(lane(true, true), golden_figures());
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
    EXPECT_EQ(ranges_of(t),
              "0..999 eager_short\n"
              "1000..7897 rndv_pipeline\n"
              "7898..inf rndv_get_cma\n")
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

TEST(SelectGolden, RndvSchemePut) {
    SelectOverrides o = no_overrides();
    o.rndv_scheme = "put";
    ProtoTable t = select(lane(true, true), o);
    EXPECT_EQ(ranges_of(t),
              "0..4000 eager_short\n"
              "4001..14440 eager_bcopy\n"
              "14441..inf rndv_put_cma\n")
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
              "4001..29024 eager_bcopy\n"
              "29025..inf rndv_pipeline\n")
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
    EXPECT_EQ(ranges_of(t),
              "0..7897 rndv_pipeline\n"
              "7898..inf rndv_get_cma\n")
        << t.print();
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
// Properties over random figures and lanes
// ------------------------------------------------------------------------------------------

double log_uniform(std::mt19937_64& rng, double lo, double hi) {
    std::uniform_real_distribution<double> d(std::log(lo), std::log(hi));
    return std::exp(d(rng));
}

CostFigures random_figures(std::mt19937_64& rng) {
    CostFigures f;
    f.memcpy_bw_Bps = log_uniform(rng, 1e9, 5e10);
    f.shm_copy_bw_Bps = log_uniform(rng, 5e8, 3e10);
    f.cma_bw_Bps = log_uniform(rng, 1e9, 5e10);
    f.cma_call_s = log_uniform(rng, 1e-7, 2e-5);
    f.fifo_latency_s = log_uniform(rng, 5e-8, 5e-6);
    f.cell_overhead_s = log_uniform(rng, 5e-9, 1e-6);
    f.pio_overhead_s = log_uniform(rng, 5e-9, 1e-6);
    f.bcopy_overhead_s = log_uniform(rng, 5e-9, 1e-6);
    f.from_file = false;
    f.source = "random";
    return f;
}

LaneCaps random_lane(std::mt19937_64& rng) {
    LaneCaps l;
    l.pio = rng() % 2 == 0;
    l.pio_max = l.pio ? static_cast<size_t>(log_uniform(rng, 8, 65536)) : 0;
    l.fragment_max = static_cast<size_t>(log_uniform(rng, 32, 1 << 20));
    l.cma = rng() % 2 == 0;
    l.rndv = rng() % 5 != 0;
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
      << " cma=" << l.cma << " rndv=" << l.rndv << "} figures{memcpy=" << f.memcpy_bw_Bps
      << " shm=" << f.shm_copy_bw_Bps << " cma_bw=" << f.cma_bw_Bps
      << " cma_call=" << f.cma_call_s << " L=" << f.fifo_latency_s
      << " cell=" << f.cell_overhead_s << " pio=" << f.pio_overhead_s
      << " bcopy=" << f.bcopy_overhead_s << "}";
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
                               << " where it is not valid\n" << t.print();
    EXPECT_LE(picked->at(size), best->at(size) * (1 + 1e-9))
        << ctx << ": at " << size << " the table picks " << proto_name(chosen) << " ("
        << picked->at(size) << " s) but " << proto_name(best->proto) << " costs "
        << best->at(size) << " s\n" << t.print();
}

TEST(SelectProperty, RangesAreContiguousAndIncreasing) {
    std::mt19937_64 rng(20240611);
    for (int trial = 0; trial < 500; ++trial) {
        LaneCaps l = random_lane(rng);
        CostFigures f = random_figures(rng);
        SelectOverrides o = no_overrides();
        if (trial % 3 == 1) o.rndv_thresh = random_size(rng) + 1;
        if (trial % 5 == 2) o.zcopy_thresh = random_size(rng) + 1;
        if (trial % 7 == 3) o.pio_max = random_size(rng) + 1;
        if (trial % 4 == 0) o.rndv_scheme = (trial / 4) % 2 ? "put" : "pipeline";
        ProtoTable t = select_protocols(l, f, o);
        expect_well_formed(t, describe(l, f));
        if (HasFailure()) return;
    }
}

TEST(SelectProperty, ChosenProtocolIsTheCheapestCandidateAtEverySize) {
    std::mt19937_64 rng(77);
    for (int trial = 0; trial < 500; ++trial) {
        LaneCaps l = random_lane(rng);
        CostFigures f = random_figures(rng);
        ProtoTable t = select_protocols(l, f, no_overrides());
        std::vector<Candidate> cands = candidates(l, f);
        const std::string ctx = describe(l, f);
        for (int k = 0; k < 200; ++k) expect_argmin(t, cands, random_size(rng), ctx);
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
            LaneCaps l = lane(pio, cma);
            ProtoTable t = select(l);
            std::vector<Candidate> cands = candidates(l, golden_figures());
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
        LaneCaps l = random_lane(rng);
        l.rndv = true;
        CostFigures f = random_figures(rng);
        SelectOverrides o = no_overrides();
        o.rndv_thresh = random_size(rng) + 1;
        ProtoTable t = select_protocols(l, f, o);
        const std::string ctx = describe(l, f) + " rndv_thresh=" + std::to_string(o.rndv_thresh);
        auto is_rndv = [](ProtoId p) { return p >= ProtoId::kRndvGetCma; };
        EXPECT_FALSE(is_rndv(t.lookup(o.rndv_thresh - 1))) << ctx << "\n" << t.print();
        EXPECT_TRUE(is_rndv(t.lookup(o.rndv_thresh))) << ctx << "\n" << t.print();
        EXPECT_TRUE(is_rndv(t.lookup(o.rndv_thresh + 12345))) << ctx << "\n" << t.print();
        EXPECT_FALSE(is_rndv(t.lookup(0))) << ctx << "\n" << t.print();
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace swy::proto
