// The MPI suite's default size list (test/integration/mpi/mt_sizes.h) must name today's
// protocol edges, or the MPI tests stop crossing threshold-1/threshold/threshold+1 of the
// selector (they named 28 800 / 375 480 / 2 594 573 long after the selector moved). This test
// derives the rendezvous thresholds of both shm endpoint shapes from the built-in figures, as
// `swy-info --proto` prints them, and fails when the list misses one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "../integration/mpi/mt_sizes.h"
#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "protocols/protocol.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/shm/shm_costs.h"
#include "transports/shm/shm_iface.h"

namespace swy::proto {
namespace {

/// A shm lane as the real ones, from the default segment geometry (tl::shm::lane_attr, as
/// swy-info --proto): with a PIO ring (packets of 8240 B, fragments of 8224 B) or without
/// (fragments of 8224 B through the shared FIFO), with CMA, built-in figures.
tl::LaneAttr shm_lane(bool pio) {
    tl::LaneAttr a = tl::shm::lane_attr(tl::shm::ShmConfig{}.geometry, pio,
                                        tl::shm::shm_lane_costs(common::CostFigures{}));
    a.caps |= tl::cap::kGetZcopy | tl::cap::kPutZcopy;
    return a;
}

/// The first size of every range whose protocol differs from the previous range's.
std::vector<size_t> thresholds(const ProtoTable& t) {
    std::vector<size_t> out;
    for (size_t i = 1; i < t.ranges().size(); ++i) {
        if (t.ranges()[i].proto != t.ranges()[i - 1].proto) {
            out.push_back(t.ranges()[i - 1].max_size + 1);
        }
    }
    return out;
}

/// mt_sizes.h's default sizes (every edge as n-1, n, n+1) contain @p n-1, n and n+1.
bool crosses(size_t n) {
    unsetenv("MT_EDGES");
    unsetenv("MT_EXTRA_EDGES");
    unsetenv("MT_MAX_SIZE");
    mt_sizes_t s = mt_sizes_build();
    unsigned found = 0;
    for (size_t i = 0; i < s.n; ++i) {
        if (s.v[i] == n - 1 || s.v[i] == n || s.v[i] == n + 1) ++found;
    }
    free(s.v);
    return found == 3;
}

TEST(MpiEdges, DefaultSizesCrossEveryShmRendezvousThreshold) {
    SelectOverrides o;
    o.split_min = 128 * 1024;  // SWY_RNDV_SPLIT_MIN's default
    for (bool pio : {true, false}) {
        const ProtoTable t = table_for(shm_lane(pio), o);
        bool rendezvous_seen = false;
        for (size_t edge : thresholds(t)) {
            if (!is_rendezvous(t.lookup(edge))) continue;
            rendezvous_seen = true;
            EXPECT_TRUE(crosses(edge)) << "mt_sizes.h's mt_default_edges misses " << edge
                                       << (pio ? " (PIO endpoint)" : " (no PIO)") << "\n"
                                       << t.print();
        }
        EXPECT_TRUE(rendezvous_seen) << t.print();
    }
    EXPECT_TRUE(crosses(o.split_min)) << "the split GET threshold";
}

}  // namespace
}  // namespace swy::proto
