// A dedicated PIO ring goes round many times with records of every size it carries (issue 17:
// sender and receiver keep their ring offsets as they move instead of dividing the position
// by the ring's size). The ring here is 6 cache lines (2 credits of 128-byte cells), so
// 1-, 2- and 3-line records keep meeting the end at different offsets and skip records pad
// it; every message must arrive in order, byte for byte, nothing written past its buffer.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "worker_pair.h"

namespace swy::test {
namespace {

constexpr swy_tag_t kTag = 0x17100000;

class ShmSmallPioRing : public WorkerPair {
protected:
    Settings settings() const override {
        return {{"TLS", "shm"}, {"SHM_PIO_CREDITS", "2"}, {"SHM_PIO_CELL_SIZE", "128"}};
    }
};

TEST_F(ShmSmallPioRing, RecordsOfEverySizeWrapManyTimesInOrderAndIntact) {
    // Warm-up: the lane attaches and its PIO ring is granted.
    uint64_t warm = 0x5eed;
    swy_request_h w = nullptr;
    ASSERT_EQ(swy_tag_send_nb(ep_, &warm, sizeof(warm), kTag - 1, nullptr, &w), SWY_OK);
    uint64_t warm_in = 0;
    swy_request_h wr = nullptr;
    if (swy_tag_recv_nb(b_, &warm_in, sizeof(warm_in), kTag - 1, ~0ull, nullptr, &wr) ==
        SWY_INPROGRESS) {
        ASSERT_EQ(wait(wr), SWY_OK);
        EXPECT_EQ(swy_request_free(wr), SWY_OK);
    }
    ASSERT_EQ(warm_in, warm);
    for (int i = 0; i < 1000; ++i)
        progress();
    swy_ep_attr_t a{};
    a.field_mask = SWY_EP_ATTR_FIELD_LANE;
    ASSERT_EQ(swy_ep_query(ep_, &a), SWY_OK);
    ASSERT_EQ(a.pio, 1) << "the endpoint got no PIO ring";
    const size_t pio = a.pio_max_size;
    ASSERT_GE(pio, 64u);
    // Sizes whose records take 1, 2 and 3 lines of the 6-line ring (the tag header rides in
    // the record too), in an order that does not divide the ring evenly.
    const std::vector<size_t> sizes = {1, 8, pio, 40, 41, pio - 1, 0, 100, 8, 64, pio / 2};

    constexpr int kMessages = 3000;
    constexpr int kBatch = 5;  // sent before the receiver drains: the ring fills and waits
    for (int first = 0; first < kMessages; first += kBatch) {
        std::vector<std::vector<uint8_t>> out;
        std::vector<swy_request_h> sends;
        for (int i = first; i < first + kBatch; ++i) {
            const size_t n = sizes[static_cast<size_t>(i) % sizes.size()];
            out.push_back(pattern(n, static_cast<uint64_t>(i)));
            swy_request_h s = nullptr;
            const swy_status_t st =
                swy_tag_send_nb(ep_, out.back().data(), n, kTag + i, nullptr, &s);
            ASSERT_TRUE(st == SWY_OK || st == SWY_INPROGRESS) << swy_status_string(st);
            if (st == SWY_INPROGRESS) sends.push_back(s);
        }
        for (int i = first; i < first + kBatch; ++i) {
            const size_t n = sizes[static_cast<size_t>(i) % sizes.size()];
            std::vector<uint8_t> in(n + 64, 0xEE);
            swy_tag_recv_info_t info{};
            // Any tag of this test: the order they arrive in must be the order they were sent.
            ASSERT_EQ(receive_on_b(in.data(), n, kTag, ~0ull << 20, &info), SWY_OK)
                << "message " << i;
            ASSERT_EQ(info.sender_tag, kTag + i) << "out of order";
            ASSERT_EQ(info.length, n);
            const std::vector<uint8_t> want = pattern(n, static_cast<uint64_t>(i));
            ASSERT_TRUE(std::equal(want.begin(), want.end(), in.begin()))
                << "message " << i << " differs";
            for (size_t k = n; k < in.size(); ++k)
                ASSERT_EQ(in[k], 0xEE) << "message " << i << ": byte " << k << " past the buffer";
        }
        for (swy_request_h s : sends) {
            ASSERT_EQ(wait(s), SWY_OK);
            EXPECT_EQ(swy_request_free(s), SWY_OK);
        }
    }
    // Still the PIO lane at the end (the ring was never given up for the FIFO).
    ASSERT_EQ(swy_ep_query(ep_, &a), SWY_OK);
    EXPECT_EQ(a.pio, 1);
}

}  // namespace
}  // namespace swy::test
