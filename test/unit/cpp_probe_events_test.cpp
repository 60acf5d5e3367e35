// Specification of switchyard.hpp's probe, matched probe, completion callbacks and event fd
// (issue #18: the C++ header covers the C API), over a worker's endpoint to itself.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <string>
#include <switchyard/switchyard.hpp>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

static_assert(!std::is_copy_constructible_v<swy::Message>);
static_assert(std::is_nothrow_move_constructible_v<swy::Message>);

struct SelfPair {
    swy::Context context{{{"TLS", "self"}}};
    swy::Worker worker{context};
    swy::Endpoint ep{worker, worker.address()};

    /// Progress until @p r is done; its status.
    swy_status_t finish(swy::Request& r) {
        while (!r.done())
            worker.progress();
        return r.test();
    }
};

TEST(CppProbe, ProbeSeesAnUnexpectedMessageAndLeavesItForAReceive) {
    SelfPair p;
    const char text[] = "probe me";
    swy::Request s = p.ep.send(text, sizeof(text), 0x77);
    swy_tag_recv_info_t info{};
    for (int i = 0; i < 1000 && !p.worker.probe(0x70, 0xF0, &info); ++i)
        p.worker.progress();
    EXPECT_EQ(info.sender_tag, 0x77u);
    EXPECT_EQ(info.length, sizeof(text));
    EXPECT_TRUE(p.worker.probe(0x77)) << "probe must not remove the message";
    EXPECT_FALSE(p.worker.probe(0x78));
    char buf[sizeof(text)] = {};
    swy::Request r = p.worker.recv(buf, sizeof(buf), 0x77);
    EXPECT_EQ(p.finish(r), SWY_OK);
    EXPECT_STREQ(buf, text);
    EXPECT_EQ(p.finish(s), SWY_OK);
    EXPECT_FALSE(p.worker.probe(0x77)) << "received: gone";
}

TEST(CppProbe, MatchedProbeTakesTheMessageOutOfMatching) {
    SelfPair p;
    std::vector<uint32_t> out(1000);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<uint32_t>(i * 2654435761u);
    swy::Request s = p.ep.send(out.data(), out.size() * sizeof(uint32_t), 5);
    swy_tag_recv_info_t info{};
    swy::Message m;
    for (int i = 0; i < 1000 && !m; ++i) {
        p.worker.progress();
        m = p.worker.probe_take(5, swy::kFullMask, &info);
    }
    ASSERT_TRUE(m);
    EXPECT_EQ(info.length, out.size() * sizeof(uint32_t));
    EXPECT_FALSE(p.worker.probe(5)) << "a taken message matches nothing else";
    std::vector<uint32_t> in(info.length / sizeof(uint32_t));
    swy::Request r = p.worker.recv(std::move(m), in.data(), info.length);
    EXPECT_FALSE(m) << "recv consumes the message";
    EXPECT_EQ(p.finish(r), SWY_OK);
    EXPECT_EQ(in, out);
    EXPECT_EQ(p.finish(s), SWY_OK);
    // Nothing taken: an empty Message, and receiving it is an error.
    swy::Message none = p.worker.probe_take(6);
    EXPECT_FALSE(none);
    char byte;
    swy::Request bad = p.worker.recv(std::move(none), &byte, 1);
    EXPECT_EQ(bad.test(), SWY_ERR_INVALID_PARAM);
}

TEST(CppProbe, AMessageTakenButNeverReceivedIsDroppedNotLeftBehind) {
    SelfPair p;
    const uint64_t value = 42;
    swy::Request s = p.ep.send(&value, sizeof(value), 9);
    {
        swy::Message m;
        for (int i = 0; i < 1000 && !m; ++i) {
            p.worker.progress();
            m = p.worker.probe_take(9);
        }
        ASSERT_TRUE(m);
    }  // dropped here
    EXPECT_EQ(p.finish(s), SWY_OK);
    for (int i = 0; i < 100; ++i)
        p.worker.progress();
    EXPECT_FALSE(p.worker.probe(9));
}

struct Counts {
    int sends = 0;
    int recvs = 0;
    swy_status_t last = SWY_INPROGRESS;
    size_t length = 0;
};

TEST(CppCallbacks, SendAndReceiveCallbacksRunOnceFromProgress) {
    SelfPair p;
    Counts counts;
    const swy::SendCallback on_sent{[](swy_request_h, swy_status_t status, void* arg) {
                                        auto* c = static_cast<Counts*>(arg);
                                        c->sends++;
                                        c->last = status;
                                    },
                                    &counts};
    const swy::RecvCallback on_received{
        [](swy_request_h, swy_status_t status, const swy_tag_recv_info_t* info, void* arg) {
            auto* c = static_cast<Counts*>(arg);
            c->recvs++;
            c->last = status;
            c->length = info->length;
        },
        &counts};
    std::vector<char> in(64 * 1024), out(64 * 1024, 'x');
    swy::Request r = p.worker.recv(in.data(), in.size(), 3, swy::kFullMask, on_received,
                                   SWY_REQ_FLAG_NO_IMM_COMPLETE);
    swy::Request s = p.ep.send(out.data(), out.size(), 3, on_sent, SWY_REQ_FLAG_NO_IMM_COMPLETE);
    EXPECT_EQ(p.finish(r), SWY_OK);
    EXPECT_EQ(p.finish(s), SWY_OK);
    EXPECT_EQ(counts.sends, 1);
    EXPECT_EQ(counts.recvs, 1);
    EXPECT_EQ(counts.length, out.size());
    EXPECT_EQ(in, out);
}

TEST(CppEvents, EventFdArmAndWaitWakeForAMessage) {
    SelfPair p;
    const int fd = p.worker.event_fd();
    EXPECT_GE(fd, 0);
    while (p.worker.progress() > 0) {}
    swy_status_t armed = p.worker.arm();
    EXPECT_TRUE(armed == SWY_OK || armed == SWY_ERR_BUSY) << armed;
    EXPECT_EQ(p.worker.wait(0), armed == SWY_OK ? SWY_ERR_TIMED_OUT : SWY_OK)
        << "nothing pending: a zero wait times out";
    const uint32_t value = 7;
    uint32_t got = 0;
    swy::Request r = p.worker.recv(&got, sizeof(got), 1);
    swy::Request s = p.ep.send(&value, sizeof(value), 1);
    pollfd pfd{fd, POLLIN, 0};
    bool woke = false;
    for (int i = 0; i < 100 && !r.done(); ++i) {
        if (p.worker.arm() == SWY_OK) woke = poll(&pfd, 1, 100) == 1 || woke;
        p.worker.progress();
    }
    EXPECT_EQ(r.test(), SWY_OK);
    EXPECT_EQ(got, value);
    EXPECT_EQ(p.finish(s), SWY_OK);
    (void)woke;  // a self message may complete before any sleep: progress is what must work
}

TEST(CppEvents, SignalWakesAWaitFromAnotherThread) {
    SelfPair p;
    while (p.worker.progress() > 0) {}
    std::atomic<bool> signalled{false};
    std::thread other([&] {
        signalled = true;
        EXPECT_EQ(p.worker.signal(), SWY_OK);
    });
    // Without the signal this wait would run out its 20 s and return SWY_ERR_TIMED_OUT.
    EXPECT_EQ(p.worker.wait(20000), SWY_OK);
    other.join();
    EXPECT_TRUE(signalled.load());
}

}  // namespace
