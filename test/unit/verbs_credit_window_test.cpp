// Flow control of the verbs transport: a sender never has more messages in flight than the
// receiver posted buffers for, whatever order the credit reports arrive in.
#include <gtest/gtest.h>

#include "transports/verbs/credit_window.h"

using swy::tl::verbs::CreditReturn;
using swy::tl::verbs::CreditWindow;

TEST(VerbsCreditWindow, StopsExactlyAtCapacity) {
    CreditWindow w(4);
    for (int i = 0; i < 4; ++i)
        EXPECT_TRUE(w.take()) << i;
    EXPECT_FALSE(w.take());
    EXPECT_EQ(w.available(), 0);
    EXPECT_EQ(w.in_flight(), 4);
}

TEST(VerbsCreditWindow, CumulativeReportsReturnCredits) {
    CreditWindow w(4);
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(w.take());
    EXPECT_TRUE(w.update(3));
    EXPECT_EQ(w.available(), 3);
    EXPECT_FALSE(w.update(3));  // same report again: nothing new
    EXPECT_EQ(w.available(), 3);
}

TEST(VerbsCreditWindow, StaleReportAfterNewerOneIsIgnored) {
    CreditWindow w(8);
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(w.take());
    EXPECT_TRUE(w.update(6));   // RDMA-written word, newer
    EXPECT_FALSE(w.update(4));  // immediate of an older SEND, processed later
    EXPECT_EQ(w.available(), 6);
    EXPECT_EQ(w.in_flight(), 2);
}

TEST(VerbsCreditWindow, ReportBeyondWhatWasSentIsRejected) {
    CreditWindow w(8);
    ASSERT_TRUE(w.take());
    ASSERT_TRUE(w.take());
    EXPECT_FALSE(w.update(3));  // only 2 sent: corrupt or foreign report
    EXPECT_EQ(w.in_flight(), 2);
}

TEST(VerbsCreditWindow, WrapsAroundSixteenBits) {
    CreditWindow w(100);
    uint16_t freed = 0;
    // 70000 messages: the 16-bit counters wrap once; in flight never exceeds capacity.
    for (int i = 0; i < 70000; ++i) {
        if (!w.take()) {
            freed = static_cast<uint16_t>(freed + 50);
            ASSERT_TRUE(w.update(freed)) << i;
            ASSERT_TRUE(w.take()) << i;
        }
        ASSERT_LE(w.in_flight(), 100);
    }
}

TEST(VerbsCreditReturn, CountsUnreportedUntilReported) {
    CreditReturn r;
    r.consumed();
    r.consumed();
    EXPECT_EQ(r.freed(), 2);
    EXPECT_EQ(r.unreported(), 2);
    r.reported(r.freed());
    EXPECT_EQ(r.unreported(), 0);
    r.consumed();
    EXPECT_EQ(r.unreported(), 1);
}

TEST(VerbsCreditWindow, GrowsOnlyUpwardAndWithinFifteenBits) {
    CreditWindow w(2);
    EXPECT_TRUE(w.take());
    EXPECT_TRUE(w.take());
    EXPECT_FALSE(w.take());
    EXPECT_FALSE(w.grow(2)) << "same capacity";
    EXPECT_FALSE(w.grow(1)) << "a stale, smaller grant";
    EXPECT_FALSE(w.grow(0x8000)) << "beyond what a receive queue can hold";
    EXPECT_EQ(w.capacity(), 2);
    EXPECT_TRUE(w.grow(4));
    EXPECT_EQ(w.available(), 2);
    EXPECT_TRUE(w.take());
    EXPECT_TRUE(w.take());
    EXPECT_FALSE(w.take());
}
