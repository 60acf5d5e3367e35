// Two workers of one context joined by an endpoint (a sends to b), as a two-process program
// would be, in one process: the fixture that the request tests (request_lifetime_test,
// request_memory_test) share, with the stale-handle expectation they both use.
#pragma once

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "test_context.h"

namespace swy::test {

/// @p n bytes that depend on every byte's position and on @p seed: a payload whose misplaced,
/// missing or repeated byte shows in a byte-for-byte comparison.
inline std::vector<uint8_t> pattern(size_t n, uint64_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>((i * 131 + seed * 7919) ^ (i >> 8) ^ (seed >> 3));
    return v;
}

/// A stale handle is refused: SWY_ERR_INVALID_PARAM in release builds; builds without NDEBUG
/// abort with a message instead (the CI builds define NDEBUG). A macro because EXPECT_DEATH
/// must see the call as an expression.
#ifdef NDEBUG
#define EXPECT_STALE(call) EXPECT_EQ((call), SWY_ERR_INVALID_PARAM)
#else
#define EXPECT_STALE(call) EXPECT_DEATH((void)(call), "no longer valid")
#endif

/// Fixture: context from settings() (shm,self unless a test class says otherwise), workers a_
/// and b_, endpoint ep_ from a_ to b_; TearDown force-closes and destroys whatever the test left.
class WorkerPair : public ::testing::Test {
protected:
    /// The context's settings; a derived fixture adds its own.
    virtual Settings settings() const { return {{"TLS", "shm,self"}}; }

    void SetUp() override {
        ctx_ = make_context(settings());
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &a_), SWY_OK);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &b_), SWY_OK);
        ep_ = connect();
        ASSERT_NE(ep_, nullptr);
    }

    void TearDown() override {
        if (ep_ != nullptr) {
            swy_request_h r = nullptr;
            (void)swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &r);
            if (r != nullptr) (void)swy_request_free(r);
        }
        if (a_ != nullptr) swy_worker_destroy(a_);
        if (b_ != nullptr) swy_worker_destroy(b_);
        swy_context_destroy(ctx_);
    }

    /// A new endpoint from a_ to b_ (null, with a test failure, if refused).
    swy_ep_h connect() {
        void* addr = nullptr;
        size_t len = 0;
        EXPECT_EQ(swy_worker_get_address(b_, &addr, &len), SWY_OK);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr;
        p.remote_address_length = len;
        swy_ep_h ep = nullptr;
        EXPECT_EQ(swy_ep_create(a_, &p, &ep), SWY_OK);
        swy_worker_release_address(b_, addr);
        return ep;
    }

    void progress() {
        swy_worker_progress(a_);
        swy_worker_progress(b_);
    }

    /// Progress both workers until @p r completes (bounded); its status.
    swy_status_t wait(swy_request_h r) {
        swy_status_t s = SWY_INPROGRESS;
        for (int i = 0; i < 2000000 && (s = swy_request_test(r)) == SWY_INPROGRESS; ++i)
            progress();
        return s;
    }

    /// Receive on b_ into @p buffer (@p n bytes) the message @p tag matches under @p mask,
    /// waiting for it; its match information in @p info. The receive's status.
    swy_status_t receive_on_b(void* buffer, size_t n, swy_tag_t tag, swy_tag_t mask,
                              swy_tag_recv_info_t* info) {
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
        p.recv_info = info;
        swy_request_h r = nullptr;
        swy_status_t s = swy_tag_recv_nb(b_, buffer, n, tag, mask, &p, &r);
        if (s == SWY_INPROGRESS) {
            s = wait(r);
            EXPECT_EQ(swy_request_recv_info(r, info), SWY_OK);
            EXPECT_EQ(swy_request_free(r), SWY_OK);
        }
        return s;
    }

    swy_context_h ctx_ = nullptr;
    swy_worker_h a_ = nullptr;
    swy_worker_h b_ = nullptr;
    swy_ep_h ep_ = nullptr;
};

}  // namespace swy::test
