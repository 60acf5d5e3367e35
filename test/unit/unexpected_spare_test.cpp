// Large unexpected messages reuse a worker's spare buffers (Worker::park_unexpected_buffer):
// a buffer freed and allocated again per message let the C library hand its pages back and
// fault them in again, which cost a 64 KiB all-to-all of two ranks 120-270 us per call.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <cstdint>
#include <vector>

#include "core/worker.h"
#include "worker_pair.h"

namespace {

using swy::test::WorkerPair;

constexpr swy_tag_t kTag = 0x5A7E;

class UnexpectedSpare : public WorkerPair {
protected:
    // Eager up to 512 KiB, whatever the selector would choose: the buffers are eager's.
    swy::test::Settings settings() const override {
        return {{"TLS", "shm,self"}, {"RNDV_THRESH", "512K"}};
    }
    swy::core::Worker* receiver() const { return reinterpret_cast<swy::core::Worker*>(b_); }

    /// Sends @p n pattern bytes (seeded by @p seed), lets them arrive before any receive,
    /// then receives them and checks every byte and the guard after them.
    void send_unexpected_then_receive(size_t n, unsigned seed) {
        std::vector<uint8_t> payload(n);
        for (size_t i = 0; i < n; ++i)
            payload[i] = static_cast<uint8_t>(i * 131 + seed * 7 + (i >> 9));
        swy_request_h sr = nullptr;
        const swy_status_t ss = swy_tag_send_nb(ep_, payload.data(), n, kTag, nullptr, &sr);
        ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
        for (int i = 0; i < 1000; ++i)
            progress();  // every fragment lands before the receive is posted
        swy_tag_recv_info_t info{};
        ASSERT_EQ(swy_tag_probe_nb(b_, kTag, ~swy_tag_t{0}, 0, &info, nullptr), SWY_OK)
            << "the message was expected to be waiting, unexpected";
        std::vector<uint8_t> out(n + 64, 0xEE);
        swy_request_h rr = nullptr;
        swy_status_t rs = swy_tag_recv_nb(b_, out.data(), n, kTag, ~swy_tag_t{0}, nullptr, &rr);
        if (rs == SWY_INPROGRESS) {
            rs = wait(rr);
            EXPECT_EQ(swy_request_free(rr), SWY_OK);
        }
        ASSERT_EQ(rs, SWY_OK) << swy_status_string(rs);
        if (ss == SWY_INPROGRESS) {
            EXPECT_EQ(wait(sr), SWY_OK);
            EXPECT_EQ(swy_request_free(sr), SWY_OK);
        }
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(out[i], payload[i]) << "byte " << i << " of " << n;
        for (size_t i = n; i < out.size(); ++i)
            ASSERT_EQ(out[i], 0xEE) << "guard byte " << i - n << " after " << n;
    }
};

TEST_F(UnexpectedSpare, ALargeUnexpectedMessageLeavesItsBufferForTheNext) {
    EXPECT_EQ(receiver()->spare_unexpected_buffers(), 0u);
    send_unexpected_then_receive(64 * 1024, 1);
    EXPECT_EQ(receiver()->spare_unexpected_buffers(), 1u);
    // The next ones take the spare and give it back: still one, never a second allocation.
    send_unexpected_then_receive(64 * 1024, 2);
    send_unexpected_then_receive(48 * 1024, 3);
    EXPECT_EQ(receiver()->spare_unexpected_buffers(), 1u);
}

TEST_F(UnexpectedSpare, SmallMessagesNeedNoSpare) {
    send_unexpected_then_receive(1024, 4);
    EXPECT_EQ(receiver()->spare_unexpected_buffers(), 0u);
}

}  // namespace
