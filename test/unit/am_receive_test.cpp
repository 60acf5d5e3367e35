// The active-message receive half (protocols/am/am_recv.cpp) fed packets directly: exact
// delivery of header and data, every malformed packet dropped before a handler runs (header
// longer than the packet, wrong version, an RTS with bytes missing or extra), unknown ids
// counted, and rendezvous descriptors kept, released and refused once consumed.
#include <gtest/gtest.h>
#include <switchyard/am.h>
#include <switchyard/switchyard.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/worker.h"
#include "protocols/am/am_wire.h"
#include "test_context.h"

namespace swy::proto::am {
namespace {

struct Seen {
    int calls = 0;
    std::vector<uint8_t> header;
    std::vector<uint8_t> data;
    uint32_t flags = 0;
    void* desc = nullptr;
    swy_status_t answer = SWY_OK;
};

swy_status_t record(void* arg, const void* header, size_t header_length, void* data, size_t length,
                    const swy_am_recv_param_t* param) {
    auto* s = static_cast<Seen*>(arg);
    ++s->calls;
    s->flags = param->flags;
    s->header.assign(static_cast<const uint8_t*>(header),
                     static_cast<const uint8_t*>(header) + header_length);
    if ((param->flags & SWY_AM_RECV_FLAG_RNDV) != 0) {
        s->desc = data;
        s->data.assign(length, 0);
    } else {
        s->data.assign(static_cast<const uint8_t*>(data),
                       static_cast<const uint8_t*>(data) + length);
    }
    return s->answer;
}

class AmReceive : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = test::make_context({{"TLS", "self"}, {"LOG_LEVEL", "error"}});
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &worker_), SWY_OK);
        w_ = reinterpret_cast<core::Worker*>(worker_);
        ASSERT_EQ(swy_worker_set_am_handler(worker_, 5, record, &seen_, 0), SWY_OK);
    }
    void TearDown() override {
        swy_worker_destroy(worker_);
        swy_context_destroy(ctx_);
    }
    // Out of line: inlined into a test body with constant sizes, GCC 12 under -fsanitize=thread
    // reports a false -Warray-bounds for a copy of an empty range at the vector's end.
    [[gnu::noinline]] static void append_at(std::vector<uint8_t>& p, size_t at,
                                            const std::vector<uint8_t>& bytes) {
        if (!bytes.empty()) std::memcpy(p.data() + at, bytes.data(), bytes.size());
    }
    static std::vector<uint8_t> eager(uint16_t id, const std::vector<uint8_t>& header,
                                      const std::vector<uint8_t>& data,
                                      uint32_t claimed_header = UINT32_MAX,
                                      uint8_t version = kAmWireVersion) {
        AmEagerHeader h{
            version, 0, id,
            claimed_header == UINT32_MAX ? static_cast<uint32_t>(header.size()) : claimed_header};
        // Sized first, then filled: GCC 12 at -O3 flags insert() after a small vector with a
        // false -Warray-bounds.
        std::vector<uint8_t> p(sizeof(h) + header.size() + data.size());
        std::memcpy(p.data(), &h, sizeof(h));
        append_at(p, sizeof(h), header);
        append_at(p, sizeof(h) + header.size(), data);
        return p;
    }
    static std::vector<uint8_t> rts(uint16_t id, const std::vector<uint8_t>& header, uint64_t total,
                                    uint32_t claimed_header = UINT32_MAX) {
        AmRtsHeader h{};
        h.rts.sender_request = 1;
        h.rts.total_length = total;
        h.rts.scheme = static_cast<uint32_t>(RndvScheme::kPipeline);
        h.version = kAmWireVersion;
        h.am_id = id;
        h.header_length =
            claimed_header == UINT32_MAX ? static_cast<uint32_t>(header.size()) : claimed_header;
        std::vector<uint8_t> p(sizeof(h) + header.size());
        std::memcpy(p.data(), &h, sizeof(h));
        append_at(p, sizeof(h), header);
        return p;
    }
    void deliver(AmIdValue id, const std::vector<uint8_t>& bytes) {
        w_->on_am(id, tl::AmSource{0, 0}, bytes.data(), bytes.size());
    }

    swy_context_h ctx_ = nullptr;
    swy_worker_h worker_ = nullptr;
    core::Worker* w_ = nullptr;
    Seen seen_;
};

TEST_F(AmReceive, EagerHeaderAndDataReachTheHandlerExactly) {
    deliver(kAmUserEager, eager(5, {1, 2, 3}, {9, 8, 7, 6}));
    ASSERT_EQ(seen_.calls, 1);
    EXPECT_EQ(seen_.header, (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(seen_.data, (std::vector<uint8_t>{9, 8, 7, 6}));
    EXPECT_EQ(seen_.flags, 0u);
    deliver(kAmUserEager, eager(5, {}, {}));
    EXPECT_EQ(seen_.calls, 2);
    EXPECT_TRUE(seen_.header.empty() && seen_.data.empty());
}

TEST_F(AmReceive, MalformedPacketsNeverReachAHandler) {
    deliver(kAmUserEager, {});  // no header at all
    deliver(kAmUserEager, std::vector<uint8_t>(sizeof(AmEagerHeader) - 1, 0));
    deliver(kAmUserEager, eager(5, {1, 2}, {}, 3));  // header past the packet
    deliver(kAmUserEager, eager(5, {}, std::vector<uint8_t>(2000, 1), SWY_AM_MAX_HEADER + 1));
    deliver(kAmUserEager, eager(5, {1}, {2}, UINT32_MAX, 2));  // another wire version
    deliver(kAmUserRts, rts(5, {1, 2}, 100, 3));               // user header cut short
    deliver(kAmUserRts, rts(5, {1, 2}, 100, 1));               // a byte too many
    std::vector<uint8_t> short_rts = rts(5, {}, 100);
    short_rts.pop_back();
    deliver(kAmUserRts, short_rts);
    EXPECT_EQ(seen_.calls, 0);
    EXPECT_EQ(w_->am().descriptors_held(), 0u);
}

TEST_F(AmReceive, UnknownIdsAreCountedAndDropped) {
    deliver(kAmUserEager, eager(6, {}, {1}));
    deliver(kAmUserRts, rts(65535, {}, 1000));
    EXPECT_EQ(w_->am().unknown_dropped(), 2u);
    EXPECT_EQ(w_->am().descriptors_held(), 0u);
    EXPECT_EQ(seen_.calls, 0);
    ASSERT_EQ(swy_worker_set_am_handler(worker_, 5, nullptr, nullptr, 0), SWY_OK);  // removed
    deliver(kAmUserEager, eager(5, {}, {1}));
    EXPECT_EQ(seen_.calls, 0);
    EXPECT_EQ(w_->am().unknown_dropped(), 3u);
    EXPECT_EQ(swy_worker_set_am_handler(worker_, 5, record, &seen_, 1u << 7),
              SWY_ERR_INVALID_PARAM);
}

TEST_F(AmReceive, DescriptorsAreKeptReleasedAndConsumedOnce) {
    seen_.answer = SWY_INPROGRESS;
    deliver(kAmUserRts, rts(5, {4, 4}, 1000));
    ASSERT_EQ(seen_.calls, 1);
    EXPECT_EQ(seen_.flags, static_cast<uint32_t>(SWY_AM_RECV_FLAG_RNDV));
    EXPECT_EQ(seen_.header, (std::vector<uint8_t>{4, 4}));
    EXPECT_EQ(seen_.data.size(), 1000u);
    EXPECT_EQ(w_->am().descriptors_held(), 1u);
    void* desc = seen_.desc;
    swy_am_data_release(worker_, desc);
    EXPECT_EQ(w_->am().descriptors_held(), 0u);
    std::vector<uint8_t> buffer(1000);
    swy_request_h req = nullptr;
    EXPECT_EQ(swy_am_recv_data_nb(worker_, desc, buffer.data(), buffer.size(), nullptr, &req),
              SWY_ERR_INVALID_PARAM);
    // A handler that returns SWY_OK without pulling drops it at once.
    seen_.answer = SWY_OK;
    deliver(kAmUserRts, rts(5, {}, 1000));
    EXPECT_EQ(seen_.calls, 2);
    EXPECT_EQ(w_->am().descriptors_held(), 0u);
}

}  // namespace
}  // namespace swy::proto::am
