// Requests in the caller's memory (SWY_REQ_PARAM_FIELD_REQUEST, issue 17): the size query,
// byte-exact sends and receives at eager and rendezvous sizes around the threshold, cancel,
// truncation, a free from the callback with the memory reused at once, stale handles refused
// after the memory was reused, worker teardown, and every misuse refused with a clear error.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "worker_pair.h"

namespace {

constexpr swy_tag_t kTag = 0x5150;
constexpr size_t kThreshold = 8192;  // SWY_RNDV_THRESH for these tests
constexpr unsigned char kCanary = 0xA5;

/// Caller memory for one request, with canary bytes after the size the query asked for.
struct Space {
    explicit Space(size_t size) : size(size), bytes(new unsigned char[size + 64 + 64]) {
        // 64-aligned start inside the allocation, canary after `size` bytes.
        auto a = reinterpret_cast<uintptr_t>(bytes.get());
        start = reinterpret_cast<unsigned char*>((a + 63) & ~uintptr_t{63});
        std::memset(start, 0x5A, size);
        std::memset(start + size, kCanary, 64);
    }
    bool canary_intact() const {
        for (size_t i = 0; i < 64; ++i)
            if (start[size + i] != kCanary) return false;
        return true;
    }
    size_t size;
    std::unique_ptr<unsigned char[]> bytes;
    unsigned char* start = nullptr;
};

struct CallbackLog {
    int calls = 0;
    swy_status_t status = SWY_INPROGRESS;
    swy_request_h handle = nullptr;
    swy_tag_recv_info_t info{};
};

void on_sent(swy_request_h req, swy_status_t status, void* user_data) {
    auto* log = static_cast<CallbackLog*>(user_data);
    ++log->calls;
    log->status = status;
    log->handle = req;
}

void on_received(swy_request_h req, swy_status_t status, const swy_tag_recv_info_t* info,
                 void* user_data) {
    auto* log = static_cast<CallbackLog*>(user_data);
    ++log->calls;
    log->status = status;
    log->handle = req;
    log->info = *info;
}

/// The shared pair fixture (a sends to b over shared memory), rendezvous from 8 KiB, and the
/// request size the workers report.
class RequestMemory : public swy::test::WorkerPair {
protected:
    swy::test::Settings settings() const override {
        return {{"TLS", "shm,self"}, {"RNDV_THRESH", "8192"}};
    }
    void SetUp() override {
        WorkerPair::SetUp();
        if (HasFatalFailure()) return;
        swy_worker_attr_t attr{};
        attr.field_mask = SWY_WORKER_ATTR_FIELD_REQUEST_SIZE;
        ASSERT_EQ(swy_worker_query(b_, &attr), SWY_OK);
        request_size_ = attr.request_size;
        request_alignment_ = attr.request_alignment;
    }

    swy_request_params_t params_in(Space& space, CallbackLog* log, bool receive) {
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_REQUEST | SWY_REQ_PARAM_FIELD_CALLBACK |
                       SWY_REQ_PARAM_FIELD_USER_DATA;
        p.request = space.start;
        p.request_size = space.size;
        if (receive) {
            p.recv_cb = on_received;
        } else {
            p.send_cb = on_sent;
        }
        p.user_data = log;
        return p;
    }

    /// Send @p n pattern bytes and receive them into a @p capacity buffer, both requests in
    /// caller memory; the receive is posted first when @p recv_first. Returns the receive's
    /// status; @p out gets the bytes.
    swy_status_t round_trip(size_t n, size_t capacity, bool recv_first, std::vector<uint8_t>* out) {
        std::vector<uint8_t> payload(n);
        for (size_t i = 0; i < n; ++i)
            payload[i] = static_cast<uint8_t>((i * 131 + n) ^ (i >> 8));
        out->assign(capacity + 16, 0xEE);  // 16 guard bytes past the capacity
        Space send_space(request_size_), recv_space(request_size_);
        CallbackLog send_log, recv_log;
        swy_request_params_t sp = params_in(send_space, &send_log, false);
        swy_request_params_t rp = params_in(recv_space, &recv_log, true);
        swy_tag_recv_info_t info{};
        rp.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
        rp.recv_info = &info;

        swy_request_h sr = nullptr, rr = nullptr;
        swy_status_t rs = SWY_INPROGRESS, ss = SWY_INPROGRESS;
        if (recv_first) {
            rs = swy_tag_recv_nb(b_, out->data(), capacity, kTag, ~0ull, &rp, &rr);
            EXPECT_EQ(rs, SWY_INPROGRESS);
        }
        ss = swy_tag_send_nb(ep_, payload.data(), n, kTag, &sp, &sr);
        EXPECT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
        if (!recv_first) {
            for (int i = 0; i < 1000; ++i)
                progress();  // the message (or its RTS) arrives unexpected
            rs = swy_tag_recv_nb(b_, out->data(), capacity, kTag, ~0ull, &rp, &rr);
        }
        if (rs == SWY_INPROGRESS) {
            rs = wait(rr);
            EXPECT_EQ(recv_log.calls, 1);
            EXPECT_EQ(recv_log.status, rs);
            EXPECT_EQ(recv_log.handle, rr);
            info = recv_log.info;
            swy_tag_recv_info_t queried{};
            EXPECT_EQ(swy_request_recv_info(rr, &queried), SWY_OK);
            EXPECT_EQ(queried.length, n);
            EXPECT_EQ(swy_request_free(rr), SWY_OK);
            EXPECT_STALE(swy_request_test(rr));
        }
        if (ss == SWY_INPROGRESS) {
            EXPECT_NE(wait(sr), SWY_INPROGRESS);
            EXPECT_EQ(send_log.calls, 1);
            EXPECT_EQ(swy_request_free(sr), SWY_OK);
            EXPECT_STALE(swy_request_free(sr));
        }
        EXPECT_EQ(info.sender_tag, kTag);
        EXPECT_EQ(info.length, n);
        EXPECT_TRUE(send_space.canary_intact()) << "a send wrote past request_size";
        EXPECT_TRUE(recv_space.canary_intact()) << "a receive wrote past request_size";
        const size_t copied = std::min(n, capacity);
        if (copied != 0) {
            EXPECT_EQ(std::memcmp(out->data(), payload.data(), copied), 0) << "payload differs";
        }
        for (size_t i = capacity; i < capacity + 16; ++i)
            EXPECT_EQ((*out)[i], 0xEE) << "written past the receive buffer at " << i;
        return rs;
    }

    size_t request_size_ = 0;
    size_t request_alignment_ = 0;
};

TEST_F(RequestMemory, QueryReportsSizeAndAlignmentOnlyWhenAsked) {
    EXPECT_GE(request_size_, 64u);
    EXPECT_NE(request_alignment_, 0u);
    EXPECT_EQ(request_alignment_ & (request_alignment_ - 1), 0u) << "not a power of two";
    EXPECT_LE(request_alignment_, alignof(std::max_align_t));  // malloc'd memory qualifies
    swy_worker_attr_t attr{};
    attr.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
    attr.request_size = 12345;
    ASSERT_EQ(swy_worker_query(a_, &attr), SWY_OK);
    EXPECT_EQ(attr.request_size, 12345u);  // not asked: untouched
}

TEST_F(RequestMemory, BytesExactAroundTheRendezvousThreshold) {
    for (size_t n : {size_t{0}, size_t{8}, kThreshold - 1, kThreshold, kThreshold + 1,
                     size_t{256 * 1024 + 3}}) {
        for (bool recv_first : {true, false}) {
            SCOPED_TRACE(testing::Message() << "size " << n << (recv_first ? " posted" : " unexp"));
            std::vector<uint8_t> got;
            EXPECT_EQ(round_trip(n, n, recv_first, &got), SWY_OK);
        }
    }
}

TEST_F(RequestMemory, TruncationIsReportedAndNothingWrittenPastTheBuffer) {
    for (size_t n : {size_t{100}, kThreshold - 1, kThreshold, kThreshold + 1}) {
        for (bool recv_first : {true, false}) {
            SCOPED_TRACE(testing::Message() << "size " << n << (recv_first ? " posted" : " unexp"));
            std::vector<uint8_t> got;
            EXPECT_EQ(round_trip(n, n / 2, recv_first, &got), SWY_ERR_MESSAGE_TRUNCATED);
        }
    }
}

TEST_F(RequestMemory, CancelThenReuseTheMemoryAndTheOldHandleStaysRefused) {
    Space space(request_size_);
    CallbackLog log;
    swy_request_params_t p = params_in(space, &log, true);
    uint64_t into = 0;
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_INPROGRESS);
    // Not complete: its memory is still in use, so free is refused and changes nothing.
    EXPECT_EQ(swy_request_free(r), SWY_ERR_BUSY);
    EXPECT_EQ(swy_request_cancel(b_, r), SWY_OK);
    EXPECT_EQ(wait(r), SWY_ERR_CANCELED);
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.status, SWY_ERR_CANCELED);
    EXPECT_EQ(swy_request_free(r), SWY_OK);

    // The same memory at once for a new receive: the old handle must not reach it.
    CallbackLog log2;
    swy_request_params_t p2 = params_in(space, &log2, true);
    swy_request_h r2 = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p2, &r2), SWY_INPROGRESS);
    EXPECT_NE(r2, r);
    EXPECT_STALE(swy_request_test(r));
    EXPECT_STALE(swy_request_cancel(b_, r));
    EXPECT_STALE(swy_request_free(r));
    EXPECT_EQ(swy_request_test(r2), SWY_INPROGRESS);  // untouched by the refused calls
    uint64_t value = 0x0123456789abcdefull;
    swy_request_h s = nullptr;
    const swy_status_t ss = swy_tag_send_nb(ep_, &value, sizeof(value), kTag, nullptr, &s);
    ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS);
    EXPECT_EQ(wait(r2), SWY_OK);
    EXPECT_EQ(into, value);
    EXPECT_EQ(swy_request_free(r2), SWY_OK);
    if (s != nullptr) {
        EXPECT_EQ(wait(s), SWY_OK);
        EXPECT_EQ(swy_request_free(s), SWY_OK);
    }
    // The caller scribbles over the memory it got back: the spent handle is still refused.
    std::memset(space.start, 0xFF, space.size);
    EXPECT_STALE(swy_request_test(r2));
    EXPECT_TRUE(space.canary_intact());
}

/// A callback that frees its request and posts the next receive into the same memory.
struct Chain {
    swy_worker_h worker = nullptr;
    unsigned char* memory = nullptr;
    size_t size = 0;
    uint64_t into[3] = {};
    int completed = 0;
    swy_request_h current = nullptr;
    swy_status_t free_status = SWY_OK;
};

void repost(swy_request_h req, swy_status_t status, const swy_tag_recv_info_t*, void* user_data) {
    auto* c = static_cast<Chain*>(user_data);
    EXPECT_EQ(status, SWY_OK);
    if (swy_request_free(req) != SWY_OK) c->free_status = SWY_ERR_INVALID_PARAM;
    if (++c->completed == 3) return;
    swy_request_params_t p{};
    p.field_mask =
        SWY_REQ_PARAM_FIELD_REQUEST | SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    p.request = c->memory;
    p.request_size = c->size;
    p.recv_cb = repost;
    p.user_data = c;
    EXPECT_EQ(swy_tag_recv_nb(c->worker, &c->into[c->completed], sizeof(uint64_t), kTag, ~0ull, &p,
                              &c->current),
              SWY_INPROGRESS);
}

TEST_F(RequestMemory, FreeInTheCallbackHandsTheMemoryBackAtOnce) {
    Space space(request_size_);
    Chain c;
    c.worker = b_;
    c.memory = space.start;
    c.size = space.size;
    swy_request_params_t p{};
    p.field_mask =
        SWY_REQ_PARAM_FIELD_REQUEST | SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    p.request = space.start;
    p.request_size = space.size;
    p.recv_cb = repost;
    p.user_data = &c;
    ASSERT_EQ(swy_tag_recv_nb(b_, &c.into[0], sizeof(uint64_t), kTag, ~0ull, &p, &c.current),
              SWY_INPROGRESS);
    for (uint64_t v : {11ull, 22ull, 33ull}) {
        swy_request_h s = nullptr;
        const swy_status_t ss = swy_tag_send_nb(ep_, &v, sizeof(v), kTag, nullptr, &s);
        ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS);
        if (s != nullptr) {
            ASSERT_EQ(wait(s), SWY_OK);
            ASSERT_EQ(swy_request_free(s), SWY_OK);
        }
        for (int i = 0; i < 100000 && c.completed < static_cast<int>(v / 11); ++i)
            progress();
    }
    EXPECT_EQ(c.completed, 3);
    EXPECT_EQ(c.free_status, SWY_OK);
    EXPECT_EQ(c.into[0], 11u);
    EXPECT_EQ(c.into[1], 22u);
    EXPECT_EQ(c.into[2], 33u);
    EXPECT_TRUE(space.canary_intact());
}

TEST_F(RequestMemory, MisuseIsRefusedWithAClearError) {
    Space space(request_size_);
    uint64_t into = 0;
    swy_request_h r = reinterpret_cast<swy_request_h>(uintptr_t{0x1234});
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_REQUEST;
    p.request = space.start;

    p.request_size = request_size_ - 1;  // too small
    EXPECT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_tag_send_nb(ep_, &into, sizeof(into), kTag, &p, &r), SWY_ERR_INVALID_PARAM);
    p.request_size = 0;
    EXPECT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_ERR_INVALID_PARAM);
    p.request_size = request_size_;
    p.request = nullptr;  // no memory
    EXPECT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_ERR_INVALID_PARAM);
    if (request_alignment_ > 1) {
        Space big(request_size_ + 64);
        p.request = big.start + 1;  // misaligned (the size is enough)
        p.request_size = request_size_;
        EXPECT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r),
                  SWY_ERR_INVALID_PARAM);
    }
    // Active messages do not take caller memory.
    p.request = space.start;
    EXPECT_EQ(swy_am_send_nb(ep_, 1, nullptr, 0, &into, sizeof(into), &p, &r),
              SWY_ERR_INVALID_PARAM);
    // Nothing was posted: a message now goes to no receive, and the memory is untouched.
    for (size_t i = 0; i < space.size; ++i)
        ASSERT_EQ(space.start[i], 0x5A) << "refused call wrote the caller's memory at " << i;
    EXPECT_EQ(swy_tag_probe_nb(b_, kTag, ~0ull, 0, nullptr, nullptr), SWY_ERR_NO_MESSAGE);
}

TEST_F(RequestMemory, FieldsAreIgnoredWithoutTheirBit) {
    // request/request_size point at 8 bytes, far too few, but without the bit they are not
    // read: the receive takes a pool request and the bytes stay as they were.
    unsigned char tiny[8];
    std::memset(tiny, 0x3C, sizeof(tiny));
    swy_request_params_t p{};
    p.request = tiny;
    p.request_size = sizeof(tiny);
    uint64_t into = 0;
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_INPROGRESS);
    uint64_t value = 0xfeedfacecafebeefull;
    swy_request_h s = nullptr;
    const swy_status_t ss = swy_tag_send_nb(ep_, &value, sizeof(value), kTag, &p, &s);
    ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS);
    EXPECT_EQ(wait(r), SWY_OK);
    EXPECT_EQ(into, value);
    EXPECT_EQ(swy_request_free(r), SWY_OK);
    if (s != nullptr) {
        EXPECT_EQ(wait(s), SWY_OK);
        EXPECT_EQ(swy_request_free(s), SWY_OK);
    }
    for (unsigned char c : tiny)
        EXPECT_EQ(c, 0x3C);
}

TEST_F(RequestMemory, WorkerDestroyCancelsAndReleasesRequestsInCallerMemory) {
    Space space(request_size_);
    CallbackLog log;
    swy_request_params_t p = params_in(space, &log, true);
    uint64_t into = 0;
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &into, sizeof(into), kTag, ~0ull, &p, &r), SWY_INPROGRESS);
    swy_request_h c = nullptr;
    (void)swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &c);
    if (c != nullptr) (void)swy_request_free(c);
    ep_ = nullptr;
    swy_worker_destroy(b_);  // never freed: released with a warning
    b_ = nullptr;
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.status, SWY_ERR_CANCELED);
    EXPECT_TRUE(space.canary_intact());
}

}  // namespace
