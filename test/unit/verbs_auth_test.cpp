// Authentication of the verbs handshake with a shared key (SWY_AUTH_KEY, or the PMIx job key):
// workers with the same key connect and exchange every protocol's sizes; a worker with another
// key, or none, is refused before a QP is made for it (acceptor) or moved to RTS (connector),
// and nothing it sends is ever delivered. Needs an RDMA device (rxe0 in the VM:
// test/verbs/run-vm.sh); skips without one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

#include "verbs_test_node.h"

namespace {

using Clock = std::chrono::steady_clock;
using swy::test::VerbsNode;
using swy::test::VerbsSettings;

constexpr const char* kKeyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
constexpr const char* kKeyB = "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

VerbsSettings keyed(const char* key) {
    if (key == nullptr) return {{"RNDV_THRESH", "4K"}};
    return {{"RNDV_THRESH", "4K"}, {"AUTH_KEY", key}};
}

using swy::test::connect_counting_failures;
using Failure = swy::test::EpFailure;

/// Sends @p n bytes a → b and returns the receive's and the send's final statuses (or
/// SWY_INPROGRESS for either after @p seconds); the payload is checked byte for byte.
std::pair<swy_status_t, swy_status_t> exchange(swy_ep_h ep, const VerbsNode& a, const VerbsNode& b,
                                               size_t n, double seconds, bool* intact) {
    std::vector<uint8_t> src(n), dst(n + 16, 0xEE);
    for (size_t i = 0; i < n; ++i)
        src[i] = static_cast<uint8_t>(i * 7 + n);
    swy_request_h rr = nullptr, sr = nullptr;
    swy_status_t rs = swy_tag_recv_nb(b.worker, dst.data(), n, 0xA0, ~0ull, nullptr, &rr);
    swy_status_t ss = swy_tag_send_nb(ep, src.data(), n, 0xA0, nullptr, &sr);
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < end && ((rr != nullptr && swy_request_test(rr) == SWY_INPROGRESS) ||
                                  (sr != nullptr && swy_request_test(sr) == SWY_INPROGRESS))) {
        swy_worker_progress(a.worker);
        swy_worker_progress(b.worker);
    }
    if (rr != nullptr) rs = swy_request_test(rr);
    if (sr != nullptr) ss = swy_request_test(sr);
    *intact = std::memcmp(src.data(), dst.data(), n) == 0 && dst[n] == 0xEE;
    if (rr != nullptr) {
        if (rs == SWY_INPROGRESS) swy_request_cancel(b.worker, rr);
        swy_worker_progress(b.worker);
        swy_request_free(rr);
    }
    if (sr != nullptr && ss != SWY_INPROGRESS) swy_request_free(sr);
    return {rs, ss};
}

}  // namespace

TEST(VerbsAuth, WorkersWithTheSameKeyExchangeEveryProtocol) {
    VerbsNode a(keyed(kKeyA)), b(keyed(kKeyA));
    SKIP_WITHOUT_VERBS(a);
    Failure f;
    swy_ep_h ep = connect_counting_failures(a, b, &f);
    for (size_t n :
         {size_t{0}, size_t{8}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{1} << 20}) {
        bool intact = false;
        auto [rs, ss] = exchange(ep, a, b, n, 30, &intact);
        EXPECT_EQ(rs, SWY_OK) << n;
        EXPECT_EQ(ss, SWY_OK) << n;
        EXPECT_TRUE(intact) << n;
    }
    EXPECT_EQ(f.calls, 0);
    swy::test::close_now(ep);
}

TEST(VerbsAuth, AnotherKeyOrNoneIsRefusedAndDeliversNothing) {
    struct Pair {
        const char* client;
        const char* server;
    };
    for (Pair p : {Pair{kKeyB, kKeyA}, Pair{nullptr, kKeyA}, Pair{kKeyA, nullptr}}) {
        SCOPED_TRACE(std::string("client ") + (p.client ? p.client : "no key") + ", server " +
                     (p.server ? p.server : "no key"));
        VerbsNode a(keyed(p.client)), b(keyed(p.server));
        SKIP_WITHOUT_VERBS(a);
        Failure f;
        swy_ep_h ep = connect_counting_failures(a, b, &f);
        bool intact = false;
        auto [rs, ss] = exchange(ep, a, b, 8, 5, &intact);
        EXPECT_NE(rs, SWY_OK) << "a message from a peer without the key was delivered";
        EXPECT_FALSE(intact);
        EXPECT_EQ(f.calls, 1) << "the connector's endpoint fails, once";
        EXPECT_NE(f.status, SWY_OK);
        EXPECT_NE(ss, SWY_OK);
        swy::test::close_now(ep);
    }
}
