// When `swy-info --calibrate` refuses to write its figures without --force (issue #18): a
// host busier than its CPUs, or two rounds whose figures differ by more than 2x.
#include "../../tools/swy-info/calibrate_guard.h"

#include <gtest/gtest.h>

namespace swy::info {
namespace {

TEST(CalibrateGuard, ALoadAboveTheUsableCpusIsBusy) {
    EXPECT_EQ(busy_reason(0.5, 2), "");
    EXPECT_EQ(busy_reason(2.0, 2), "") << "exactly one runnable task per CPU is not busy";
    EXPECT_EQ(busy_reason(2.1, 2), "the load average is 2.1 on 2 usable CPUs");
    EXPECT_EQ(busy_reason(1.5, 1), "the load average is 1.5 on 1 usable CPU");
    EXPECT_EQ(busy_reason(1.5, 0), "the load average is 1.5 on 1 usable CPU");
}

TEST(CalibrateGuard, FiguresMoreThanTwiceApartAreScattered) {
    const std::vector<FigurePair> pairs = {
        {"memcpy_bw_Bps", 10e9, 12e9},       // within 2x
        {"fifo_latency_s", 100e-9, 200e-9},  // exactly 2x: still trusted
        {"cma_call_s", 1e-6, 2.5e-6},        // 2.5x
        {"shm_copy_bw_Bps", 8e9, 3e9},       // 2.7x, the other way
        {"tcp_latency_s", 0, 5e-6},          // not a positive figure
    };
    const std::vector<std::string> out = scattered_figures(pairs);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0], "cma_call_s: 1e-06 then 2.5e-06");
    EXPECT_EQ(out[1], "shm_copy_bw_Bps: 8e+09 then 3e+09");
    EXPECT_EQ(out[2], "tcp_latency_s: 0 then 5e-06");
    EXPECT_TRUE(scattered_figures({}).empty());
}

}  // namespace
}  // namespace swy::info
