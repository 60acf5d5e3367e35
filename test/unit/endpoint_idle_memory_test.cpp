// What an idle endpoint keeps (issue #18, "Endpoints": at most 2 KiB per idle endpoint):
// a tcp interface that carried large frames gives their buffers back once its connections
// are idle, and a worker's endpoints whose lanes give the same protocol tables share one copy
// of them (core/endpoint_tables.h) instead of each holding its own.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/api_handles.h"
#include "common/cost_figures.h"
#include "core/endpoint.h"
#include "tcp_test_util.h"
#include "test_context.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

using test::pattern;
using test::progress_until;

struct CollectingSink final : AmSink {
    std::vector<std::vector<uint8_t>> msgs;
    size_t failures = 0;
    void on_am(AmId, AmSource, const uint8_t* data, size_t length) override {
        msgs.emplace_back(data, data + length);
    }
    void on_remote_failure(uint16_t, uint64_t, Status) override { ++failures; }
};

TcpConfig loopback_config() {
    TcpConfig c;
    c.devices = {"lo"};
    c.costs = tcp_lane_costs(swy::common::CostFigures{});
    return c;
}

// Both sides of a connection that carried 16 MiB in 256 KiB frames while the receiver did not
// read (the sender's queue grows with what the kernel took of frames in part, the receiver's
// buffer to hold a whole frame): once everything arrived and the connection is idle, each interface holds at most
// its two parked spares, neither larger than TcpInterface::kSpareKeepMax. Before, the spares kept
// whatever the largest queue had grown to (512 KiB on the receiver), for the interface's life.
TEST(TcpIdleMemory, BuffersGrownByLargeFramesAreReleasedWhenTheConnectionIsIdle) {
    CollectingSink sink_a, sink_b;
    std::unique_ptr<TcpInterface> a, b;
    std::string why;
    if (TcpInterface::open(loopback_config(), 0xA1, 1, &sink_a, &a, &why) != Status::kOk) {
        GTEST_SKIP() << "no loopback interface: " << why;
    }
    ASSERT_EQ(TcpInterface::open(loopback_config(), 0xB2, 2, &sink_b, &b, &why), Status::kOk)
        << why;
    std::unique_ptr<Endpoint> ep;
    const std::vector<uint8_t> addr = b->address();
    ASSERT_EQ(a->connect(0xB2, addr.data(), addr.size(), false, &ep, &why), Status::kOk) << why;
    // Handshake first, with one small message: the interfaces then hold at most the spares.
    const uint8_t one = 1;
    ASSERT_EQ(ep->am_send(3, &one, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a.get(), b.get()}, [&] { return sink_b.msgs.size() == 1; }));
    sink_b.msgs.clear();

    constexpr size_t kFrames = 64;  // 16 MiB: more than the kernel buffers and our 4 MiB queue
    constexpr size_t kBody = kMaxFrameBody - 4;
    size_t sent = 0;
    size_t peak_a = 0;
    // The receiver does not progress until the sender is refused (its queue is full).
    while (sent < kFrames) {
        const std::vector<uint8_t> body = pattern(kBody, static_cast<uint32_t>(sent));
        const uint32_t seq = static_cast<uint32_t>(sent);
        const Status s = ep->am_send(4, &seq, sizeof(seq), body.data(), body.size());
        if (s == Status::kNoResource) break;
        ASSERT_EQ(s, Status::kOk);
        ++sent;
        a->progress();
        peak_a = std::max(peak_a, a->buffer_bytes());
    }
    // (A large frame that finds the kernel full is refused, not copied: what queues is the
    // rest of frames the kernel took in part.)
    // Sends now complete on acknowledgement, which keeps the queue near one spare's size.
    ASSERT_GE(peak_a, TcpInterface::kSpareKeepMax) << "the send queue never grew: proves nothing";
    // Then both progress until every frame arrived, the rest sent as room frees up.
    size_t peak_b = 0;
    ASSERT_TRUE(progress_until({a.get(), b.get()}, [&] {
        peak_b = std::max(peak_b, b->buffer_bytes());
        while (sent < kFrames) {
            const std::vector<uint8_t> body = pattern(kBody, static_cast<uint32_t>(sent));
            const uint32_t seq = static_cast<uint32_t>(sent);
            const Status s = ep->am_send(4, &seq, sizeof(seq), body.data(), body.size());
            if (s == Status::kNoResource) break;
            EXPECT_EQ(s, Status::kOk);
            if (s != Status::kOk) return true;
            ++sent;
        }
        return sink_b.msgs.size() == kFrames;
    }));
    ASSERT_EQ(sink_b.msgs.size(), kFrames);
    for (size_t i = 0; i < kFrames; ++i) {
        const std::vector<uint8_t>& m = sink_b.msgs[i];
        ASSERT_EQ(m.size(), sizeof(uint32_t) + kBody) << i;
        uint32_t seq = 0;
        std::memcpy(&seq, m.data(), sizeof(seq));
        ASSERT_EQ(seq, i);
        ASSERT_EQ(std::vector<uint8_t>(m.begin() + 4, m.end()),
                  pattern(kBody, static_cast<uint32_t>(i)))
            << i;
    }
    ASSERT_GT(peak_b, 2 * TcpInterface::kSpareKeepMax) << "the receive buffer never grew";
    // Idle now: a few more passes let the last queue run empty and park.
    for (int i = 0; i < 100; ++i) {
        a->progress();
        b->progress();
    }
    EXPECT_LE(a->buffer_bytes(), 2 * TcpInterface::kSpareKeepMax);
    EXPECT_LE(b->buffer_bytes(), 2 * TcpInterface::kSpareKeepMax);
    // And the idle connection still works, from the parked spares.
    const uint32_t last = 0xFEED;
    ASSERT_EQ(ep->am_send(5, &last, sizeof(last), nullptr, 0), Status::kOk);
    ASSERT_TRUE(
        progress_until({a.get(), b.get()}, [&] { return sink_b.msgs.size() == kFrames + 1; }));
    EXPECT_EQ(sink_b.msgs.back(), std::vector<uint8_t>({0xED, 0xFE, 0, 0}));
    EXPECT_EQ(sink_a.failures + sink_b.failures, 0u);
}

std::vector<uint8_t> address_of(swy_worker_h w) {
    void* a = nullptr;
    size_t n = 0;
    EXPECT_EQ(swy_worker_get_address(w, &a, &n), SWY_OK);
    std::vector<uint8_t> out(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
    swy_worker_release_address(w, a);
    return out;
}

// Endpoints of one worker to peers over one tcp interface have equal tables: they share one
// copy (the same object), which reads exactly like the tables each would have built, and
// sends on every endpoint still choose their protocols from it.
TEST(EndpointIdleMemory, EndpointsOverOneInterfaceShareTheirProtocolTables) {
    swy_context_h ctx = swy::test::make_context({{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}});
    ASSERT_NE(ctx, nullptr);
    swy_worker_params_t wp{};
    swy_worker_h origin = nullptr, t1 = nullptr, t2 = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, &wp, &origin), SWY_OK);
    ASSERT_EQ(swy_worker_create(ctx, &wp, &t1), SWY_OK);
    ASSERT_EQ(swy_worker_create(ctx, &wp, &t2), SWY_OK);
    std::vector<swy_ep_h> eps;
    for (swy_worker_h target : {t1, t2, t1}) {
        const std::vector<uint8_t> addr = address_of(target);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr.data();
        p.remote_address_length = addr.size();
        swy_ep_h ep = nullptr;
        ASSERT_EQ(swy_ep_create(origin, &p, &ep), SWY_OK);
        eps.push_back(ep);
    }
    std::vector<core::Endpoint*> e(eps.size());
    for (size_t i = 0; i < eps.size(); ++i)
        ASSERT_EQ(swy::api::resolve("test", eps[i], &e[i]), SWY_OK);
    ASSERT_TRUE(e[0]->wired());
    ASSERT_STREQ(e[0]->lane_attr().transport, "tcp");
    EXPECT_FALSE(e[0]->host_table().empty());
    for (size_t i = 1; i < e.size(); ++i) {
        EXPECT_EQ(&e[i]->host_table(), &e[0]->host_table()) << i;
        EXPECT_EQ(&e[i]->datatype_table(), &e[0]->datatype_table()) << i;
    }
    // A message over each, from the shared table (8 bytes, and one past the first range).
    const size_t second = e[0]->host_table().ranges().front().max_size + 1;
    for (size_t size : {size_t{8}, second}) {
        std::vector<uint8_t> out = pattern(size, static_cast<uint32_t>(size));
        for (size_t i = 0; i < eps.size(); ++i) {
            swy_worker_h target = i == 1 ? t2 : t1;
            std::vector<uint8_t> in(size);
            swy_request_h rr = nullptr, sr = nullptr;
            ASSERT_EQ(swy_tag_recv_nb(target, in.data(), in.size(), 9, ~uint64_t{0}, nullptr, &rr),
                      SWY_INPROGRESS);
            const swy_status_t s = swy_tag_send_nb(eps[i], out.data(), out.size(), 9, nullptr, &sr);
            ASSERT_TRUE(s == SWY_OK || s == SWY_INPROGRESS);
            ASSERT_TRUE(test::progress_until({}, [&] {
                swy_worker_progress(origin);
                swy_worker_progress(t1);
                swy_worker_progress(t2);
                return swy_request_test(rr) != SWY_INPROGRESS &&
                       (sr == nullptr || swy_request_test(sr) != SWY_INPROGRESS);
            }));
            EXPECT_EQ(swy_request_test(rr), SWY_OK);
            if (sr != nullptr) {
                EXPECT_EQ(swy_request_test(sr), SWY_OK);
                swy_request_free(sr);
            }
            swy_request_free(rr);
            EXPECT_EQ(in, out) << "size " << size << " endpoint " << i;
        }
    }
    for (swy_ep_h ep : eps) {
        swy_request_h r = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &r) == SWY_INPROGRESS) {
            (void)test::progress_until({}, [&] {
                swy_worker_progress(origin);
                return swy_request_test(r) != SWY_INPROGRESS;
            });
            swy_request_free(r);
        }
    }
    swy_worker_destroy(t2);
    swy_worker_destroy(t1);
    swy_worker_destroy(origin);
    swy_context_destroy(ctx);
}

}  // namespace
}  // namespace swy::tl::tcp
