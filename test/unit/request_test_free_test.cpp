// swy_request_test_free (pml swy's blocking receive polls with it): in progress it changes
// nothing; complete, it returns the final status, the receive's match information and spends
// the handle, for eager and rendezvous sizes around the threshold, truncation, sends, requests
// in the caller's memory, a NULL info and a stale handle.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "worker_pair.h"

namespace {

constexpr swy_tag_t kTag = 0x7e57;
constexpr size_t kThreshold = 8192;  // SWY_RNDV_THRESH for these tests

class RequestTestFree : public swy::test::WorkerPair {
protected:
    swy::test::Settings settings() const override {
        return {{"TLS", "shm,self"}, {"RNDV_THRESH", "8192"}};
    }

    /// Poll @p r with swy_request_test_free between progress passes (bounded); its result.
    swy_status_t poll_free(swy_request_h r, swy_tag_recv_info_t* info) {
        swy_status_t s = SWY_INPROGRESS;
        for (int i = 0; i < 2000000 && (s = swy_request_test_free(r, info)) == SWY_INPROGRESS; ++i)
            progress();
        return s;
    }

    /// Posts a receive of @p capacity bytes, sends @p n pattern bytes, polls both requests
    /// with swy_request_test_free; checks payload, info, the guard bytes and that both
    /// handles are spent. Returns the receive's status.
    swy_status_t round_trip(size_t n, size_t capacity, const swy_request_params_t* rp) {
        std::vector<uint8_t> payload(n), got(capacity + 16, 0xEE);
        for (size_t i = 0; i < n; ++i)
            payload[i] = static_cast<uint8_t>((i * 37 + n) ^ (i >> 8));
        swy_request_h rr = nullptr, sr = nullptr;
        EXPECT_EQ(swy_tag_recv_nb(b_, got.data(), capacity, kTag, ~0ull, rp, &rr), SWY_INPROGRESS);
        swy_tag_recv_info_t info{0xdead, 0xbeef};
        EXPECT_EQ(swy_request_test_free(rr, &info), SWY_INPROGRESS);
        EXPECT_EQ(info.sender_tag, 0xdeadu) << "written while in progress";
        const swy_status_t ss = swy_tag_send_nb(ep_, payload.data(), n, kTag, nullptr, &sr);
        EXPECT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
        const swy_status_t rs = poll_free(rr, &info);
        if (ss == SWY_INPROGRESS) {
            swy_tag_recv_info_t untouched{1, 2};
            const swy_status_t sent = poll_free(sr, &untouched);
            // A rendezvous sender learns of the truncation; an eager one never does.
            EXPECT_TRUE(sent == SWY_OK || (capacity < n && sent == SWY_ERR_MESSAGE_TRUNCATED))
                << swy_status_string(sent);
            EXPECT_EQ(untouched.sender_tag, 1u) << "a send wrote info";
            EXPECT_STALE(swy_request_test(sr));
        }
        EXPECT_STALE(swy_request_test(rr));
        EXPECT_EQ(info.sender_tag, kTag);
        EXPECT_EQ(info.length, n);
        const size_t copied = n < capacity ? n : capacity;
        if (copied != 0) {
            EXPECT_EQ(std::memcmp(got.data(), payload.data(), copied), 0) << "payload differs";
        }
        for (size_t i = capacity; i < capacity + 16; ++i)
            EXPECT_EQ(got[i], 0xEE) << "written past the receive buffer at " << i;
        return rs;
    }
};

TEST_F(RequestTestFree, ReceivesAroundTheRendezvousThreshold) {
    for (size_t n : {size_t{0}, size_t{8}, kThreshold - 1, kThreshold, kThreshold + 1,
                     size_t{256 * 1024 + 3}}) {
        SCOPED_TRACE(testing::Message() << "size " << n);
        EXPECT_EQ(round_trip(n, n, nullptr), SWY_OK);
    }
}

TEST_F(RequestTestFree, TruncationIsTheFinalStatus) {
    for (size_t n : {size_t{100}, kThreshold - 1, kThreshold + 1}) {
        SCOPED_TRACE(testing::Message() << "size " << n);
        EXPECT_EQ(round_trip(n, n / 2, nullptr), SWY_ERR_MESSAGE_TRUNCATED);
    }
}

TEST_F(RequestTestFree, RequestInCallerMemory) {
    swy_worker_attr_t attr{};
    attr.field_mask = SWY_WORKER_ATTR_FIELD_REQUEST_SIZE;
    ASSERT_EQ(swy_worker_query(b_, &attr), SWY_OK);
    std::vector<std::max_align_t> space(attr.request_size / sizeof(std::max_align_t) + 1);
    for (size_t n : {size_t{8}, kThreshold + 1}) {
        SCOPED_TRACE(testing::Message() << "size " << n);
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_REQUEST;
        p.request = space.data();
        p.request_size = space.size() * sizeof(std::max_align_t);
        EXPECT_EQ(round_trip(n, n, &p), SWY_OK);
    }
}

TEST_F(RequestTestFree, NullInfoAndCanceledReceive) {
    uint64_t into = 0;
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, nullptr, &r), SWY_INPROGRESS);
    ASSERT_EQ(swy_request_cancel(b_, r), SWY_OK);
    EXPECT_EQ(poll_free(r, nullptr), SWY_ERR_CANCELED);
    EXPECT_STALE(swy_request_test_free(r, nullptr));
}

TEST_F(RequestTestFree, NullHandleIsRefused) {
    swy_tag_recv_info_t info{};
    EXPECT_STALE(swy_request_test_free(nullptr, &info));
}

}  // namespace
