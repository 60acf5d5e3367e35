// The harness itself: a failing, crashing, hanging or throwing rank must fail the run and be
// named in the report, and a rank expected to die by a signal must die by it. Without this,
// a harness bug could make every integration test pass vacuously.
#include <signal.h>

#include <stdexcept>

#include "multiproc.h"

namespace swy_itest {
namespace {

TEST(MultiprocHarness, PassesWhenEveryRankSucceedsAndBarriersHold) {
    EXPECT_TRUE(run_ranks(4, [](World& w) {
        for (int i = 0; i < 200; ++i)
            w.barrier();
        w.scratch(w.rank()).store(1);
        w.barrier();
        for (int r = 0; r < w.size(); ++r)
            ICHECK(w.scratch(r).load() == 1);
    }));
}

TEST(MultiprocHarness, ReportsTheRankWhoseCheckFailed) {
    auto result = run_ranks(3, [](World& w) {
        if (w.rank() == 1) ICHECK_MSG(false, "deliberate failure");
        w.barrier();
    });
    EXPECT_FALSE(result);
    EXPECT_NE(std::string(result.message())
                  .find("rank 1: exited with code 1 (check failed)  <-- failed first"),
              std::string::npos)
        << result.message();
}

TEST(MultiprocHarness, ReportsACrashedRankBySignal) {
    auto result = run_ranks(2, [](World& w) {
        if (w.rank() == 0) {
            // Default disposition: under AddressSanitizer its own SEGV handler would turn the
            // crash into a report and an abort (signal 6).
            signal(SIGSEGV, SIG_DFL);
            raise(SIGSEGV);
        }
        w.barrier();
    });
    EXPECT_FALSE(result);
    EXPECT_NE(std::string(result.message()).find("rank 0: killed by signal 11"), std::string::npos)
        << result.message();
}

TEST(MultiprocHarness, KillsHungRanksAtTheTimeout) {
    RunOptions opts;
    opts.timeout_s = 1;
    auto result = run_ranks(
        2, [](World&) { sleep(30); }, opts);
    EXPECT_FALSE(result);
    EXPECT_NE(std::string(result.message()).find("timed out"), std::string::npos)
        << result.message();
}

TEST(MultiprocHarness, CatchesExceptionsInsideRanks) {
    EXPECT_FALSE(run_ranks(1, [](World&) { throw std::runtime_error("deliberate"); }));
}

TEST(MultiprocHarness, ExpectedSignalMustActuallyHappen) {
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    EXPECT_TRUE(run_ranks(
        2,
        [](World& w) {
            if (w.rank() == 1) raise(SIGKILL);
        },
        opts));
    EXPECT_FALSE(run_ranks(
        2, [](World&) {}, opts));
}

TEST(MultiprocHarness, PatternCatchesASingleFlippedBit) {
    std::vector<unsigned char> b(1001);
    fill_pattern(b.data(), b.size(), pattern_seed(1001, 1, 2));
    EXPECT_EQ(verify_pattern(b.data(), b.size(), pattern_seed(1001, 1, 2)), b.size());
    EXPECT_NE(verify_pattern(b.data(), b.size(), pattern_seed(1001, 1, 3)), b.size());
    EXPECT_NE(verify_pattern(b.data(), b.size(), pattern_seed(1001, 0, 2)), b.size());
    b[777] ^= 0x10;
    EXPECT_EQ(verify_pattern(b.data(), b.size(), pattern_seed(1001, 1, 2)), 777u);
}

}  // namespace
}  // namespace swy_itest
