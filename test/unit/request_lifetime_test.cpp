// Handle lifetimes at the public API (issue 18): a freed request handle, a closed endpoint
// handle and a wait from inside a callback are refused with an error, never followed into a
// request or endpoint that reuses the memory, never a hang; destroying a worker completes
// every request still outstanding and counts the ones never freed.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "worker_pair.h"

namespace {

constexpr swy_tag_t kTag = 0x7117;

/// The shared pair fixture plus the sends and receives these tests repeat.
class Pair : public swy::test::WorkerPair {
protected:
    /// Send @p value (8 bytes) on @p ep and wait until it is handed over.
    void send(swy_ep_h ep, uint64_t value) {
        swy_request_h r = nullptr;
        const swy_status_t s = swy_tag_send_nb(ep, &value, sizeof(value), kTag, nullptr, &r);
        ASSERT_TRUE(s == SWY_OK || s == SWY_INPROGRESS) << swy_status_string(s);
        if (r != nullptr) {
            ASSERT_EQ(wait(r), SWY_OK);
            ASSERT_EQ(swy_request_free(r), SWY_OK);
        }
    }

    /// A receive of 8 bytes posted on b (no message waiting: it stays in progress).
    swy_request_h post_recv(uint64_t* into, const swy_request_params_t* params = nullptr) {
        swy_request_h r = nullptr;
        EXPECT_EQ(swy_tag_recv_nb(b_, into, sizeof(*into), kTag, ~0ull, params, &r),
                  SWY_INPROGRESS);
        EXPECT_NE(r, nullptr);
        return r;
    }
};

TEST_F(Pair, DoubleFreeIsRefusedAndTwoLaterReceivesGetTwoHandles) {
    uint64_t got = 0;
    swy_request_h r = post_recv(&got);
    send(ep_, 41);
    ASSERT_EQ(wait(r), SWY_OK);
    EXPECT_EQ(got, 41u);
    EXPECT_EQ(swy_request_free(r), SWY_OK);
    EXPECT_STALE(swy_request_free(r));

    // Before the fix the pool held the slot twice: both receives got the same handle, and the
    // matcher then looped on a request linked to itself.
    uint64_t x = 0, y = 0;
    swy_request_h rx = post_recv(&x);
    swy_request_h ry = post_recv(&y);
    ASSERT_NE(rx, ry);
    send(ep_, 0x1111);
    send(ep_, 0x2222);
    ASSERT_EQ(wait(rx), SWY_OK);
    ASSERT_EQ(wait(ry), SWY_OK);
    EXPECT_EQ(x, 0x1111u);  // posted first, matched first
    EXPECT_EQ(y, 0x2222u);
    EXPECT_EQ(swy_request_free(rx), SWY_OK);
    EXPECT_EQ(swy_request_free(ry), SWY_OK);
}

TEST_F(Pair, FreedHandleIsRefusedByTestInfoWaitAndCancel) {
    uint64_t got = 0;
    swy_request_h r = post_recv(&got);
    send(ep_, 7);
    ASSERT_EQ(wait(r), SWY_OK);
    ASSERT_EQ(swy_request_free(r), SWY_OK);
    EXPECT_STALE(swy_request_test(r));  // was: SWY_OK, read from a freed request
    swy_tag_recv_info_t info{};
    EXPECT_STALE(swy_request_recv_info(r, &info));
    EXPECT_STALE(swy_request_wait(b_, r));
    EXPECT_STALE(swy_request_cancel(b_, r));
}

TEST_F(Pair, StaleHandleNeverReachesTheRequestThatReusedItsSlot) {
    uint64_t first = 0;
    swy_request_h old = post_recv(&first);
    // Freed before completion: still posted; the message goes to it and releases the slot.
    ASSERT_EQ(swy_request_free(old), SWY_OK);
    send(ep_, 1);
    for (int i = 0; i < 100; ++i)
        progress();
    EXPECT_EQ(first, 1u);
    uint64_t second = 0;
    swy_request_h fresh = post_recv(&second);  // the pool is LIFO: very likely the same slot
    EXPECT_NE(fresh, old);
    EXPECT_STALE(swy_request_cancel(b_, old));  // must not cancel `fresh`
    EXPECT_STALE(swy_request_test(old));
    EXPECT_EQ(swy_request_test(fresh), SWY_INPROGRESS);
    send(ep_, 2);
    ASSERT_EQ(wait(fresh), SWY_OK);
    EXPECT_EQ(second, 2u);
    EXPECT_EQ(swy_request_free(fresh), SWY_OK);
}

struct WaitFromCallback {
    swy_worker_h worker = nullptr;
    swy_request_h other = nullptr;
    swy_status_t wait_status = SWY_OK;
    int calls = 0;
};

void wait_in_callback(swy_request_h, swy_status_t, const swy_tag_recv_info_t*, void* arg) {
    auto* w = static_cast<WaitFromCallback*>(arg);
    ++w->calls;
    w->wait_status = swy_request_wait(w->worker, w->other);  // was: spun forever
}

TEST_F(Pair, WaitInsideACallbackReturnsAnErrorInsteadOfSpinning) {
    alarm(60);  // without the fix this test spins: let the alarm end it as a failure
    WaitFromCallback state;
    state.worker = b_;
    uint64_t other_buf = 0;
    state.other = post_recv(&other_buf);  // never gets a message while the callback runs
    uint64_t got = 0;
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    p.recv_cb = wait_in_callback;
    p.user_data = &state;
    // Posted second, with a distinct tag, so that the one message goes to it.
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_recv_nb(b_, &got, sizeof(got), kTag + 1, ~0ull, &p, &r), SWY_INPROGRESS);
    uint64_t v = 99;
    swy_request_h s = nullptr;
    ASSERT_GE(swy_tag_send_nb(ep_, &v, sizeof(v), kTag + 1, nullptr, &s), SWY_OK);
    ASSERT_EQ(wait(r), SWY_OK);
    alarm(0);
    EXPECT_EQ(state.calls, 1);
    EXPECT_EQ(state.wait_status, SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(got, 99u);
    EXPECT_EQ(swy_request_test(state.other), SWY_INPROGRESS);  // untouched by the refusal
    if (s != nullptr) {
        EXPECT_EQ(wait(s), SWY_OK);
        EXPECT_EQ(swy_request_free(s), SWY_OK);
    }
    EXPECT_EQ(swy_request_free(r), SWY_OK);
    ASSERT_EQ(swy_request_cancel(b_, state.other), SWY_OK);
    EXPECT_EQ(wait(state.other), SWY_ERR_CANCELED);
    EXPECT_EQ(swy_request_free(state.other), SWY_OK);
}

TEST_F(Pair, EndpointHandleIsRefusedAfterForceCloseEvenWhenItsMemoryIsReused) {
    swy_request_h c = nullptr;
    ASSERT_EQ(swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &c), SWY_OK);
    ASSERT_EQ(c, nullptr);
    const swy_ep_h closed = ep_;
    ep_ = nullptr;
    uint64_t v = 5;
    swy_request_h r = nullptr;
    EXPECT_STALE(swy_tag_send_nb(closed, &v, sizeof(v), kTag, nullptr, &r));  // was: use after free
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE;
    EXPECT_STALE(swy_ep_query(closed, &attr));
    EXPECT_STALE(swy_ep_close_nb(closed, SWY_EP_CLOSE_FORCE, &c));

    // A new endpoint takes the freed memory; the old handle still reaches nothing.
    for (int i = 0; i < 10; ++i)
        progress();
    ep_ = connect();
    ASSERT_NE(ep_, nullptr);
    EXPECT_NE(ep_, closed);
    EXPECT_STALE(swy_tag_send_nb(closed, &v, sizeof(v), kTag, nullptr, &r));
    uint64_t got = 0;
    swy_request_h rr = post_recv(&got);
    send(ep_, 0xABCDEF);
    ASSERT_EQ(wait(rr), SWY_OK);
    EXPECT_EQ(got, 0xABCDEFu);
    EXPECT_EQ(swy_request_free(rr), SWY_OK);
}

struct Completion {
    int calls = 0;
    swy_status_t status = SWY_OK;
};

void on_recv(swy_request_h, swy_status_t status, const swy_tag_recv_info_t*, void* arg) {
    auto* c = static_cast<Completion*>(arg);
    ++c->calls;
    c->status = status;
}

void on_send(swy_request_h, swy_status_t status, void* arg) {
    auto* c = static_cast<Completion*>(arg);
    ++c->calls;
    c->status = status;
}

TEST_F(Pair, DestroyingAWorkerCompletesEveryOutstandingRequestAndCountsUnfreedOnes) {
    // On b: a posted receive with a callback (freed by the application: it must still
    // complete), and one without a callback that the application never frees.
    Completion recv_done;
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    p.recv_cb = on_recv;
    p.user_data = &recv_done;
    uint64_t buf1 = 0, buf2 = 0, buf3 = 0;
    swy_request_h with_cb = post_recv(&buf1, &p);
    ASSERT_EQ(swy_request_free(with_cb), SWY_OK);
    (void)post_recv(&buf2);  // never freed
    (void)post_recv(&buf3);  // never freed

    // On a: a synchronous send that b never acknowledges (b does not progress any more), with
    // a callback.
    Completion send_done;
    swy_request_params_t sp{};
    sp.field_mask =
        SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA | SWY_REQ_PARAM_FIELD_FLAGS;
    sp.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE;
    sp.send_cb = on_send;
    sp.user_data = &send_done;
    uint64_t v = 3;
    swy_request_h s = nullptr;
    ASSERT_EQ(swy_tag_send_nb(ep_, &v, sizeof(v), kTag + 9, &sp, &s), SWY_INPROGRESS);
    ASSERT_EQ(swy_request_free(s), SWY_OK);

    ::testing::internal::CaptureStderr();
    swy_worker_destroy(b_);
    b_ = nullptr;
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(recv_done.calls, 1);  // was: 0 (only sends were canceled)
    EXPECT_EQ(recv_done.status, SWY_ERR_CANCELED);
    EXPECT_NE(log.find("2 request(s) were never freed"), std::string::npos) << log;

    ep_ = nullptr;  // closed with a by its destroy
    swy_worker_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(send_done.calls, 1);
}

}  // namespace
