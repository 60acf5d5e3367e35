// Specification of the tcp transport's zero-copy receive: a sink that names a destination for
// a message id gets its payload read from the socket straight into that memory (on_am_placed),
// anything it refuses still arrives whole through on_am(), a destination that goes away in
// the middle of a payload is never written again, and a peer that sends a truncated or lying
// frame cannot make the transport write outside what the sink handed out.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tcp_test_util.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

using test::pattern;
using test::progress_until;

constexpr AmId kPlacedId = 7;  // header {uint64 offset, uint64 tag} + payload
constexpr AmId kPlainId = 2;
constexpr size_t kHeader = 16;
constexpr uint8_t kUntouched = 0xEE;

/// Places kPlacedId payloads at the offset their header names in one big buffer, while
/// `allow` says so and the offset range fits; records what happened, in order.
struct PlacingSink final : AmSink {
    struct Event {
        bool placed;
        AmId id;
        uint64_t offset;            // placed: from the header
        size_t length;              // placed: payload bytes; on_am: whole body
        std::vector<uint8_t> data;  // on_am only
    };
    std::vector<uint8_t> dest = std::vector<uint8_t>(4u << 20, kUntouched);
    std::vector<Event> events;
    std::vector<std::pair<uint64_t, Status>> failures;
    bool allow = true;
    bool vanish_mid_payload = false;  // refuse every call with done > 0
    size_t place_calls = 0;
    size_t max_handed_out = 0;  // highest dest offset + 1 ever returned

    size_t placement_header(AmId id) const override { return id == kPlacedId ? kHeader : 0; }
    uint8_t* place_payload(AmId id, AmSource, const uint8_t* hdr, size_t done,
                           size_t length) override {
        EXPECT_EQ(id, kPlacedId);
        ++place_calls;
        uint64_t off = 0;
        std::memcpy(&off, hdr, sizeof(off));
        if (!allow || off > dest.size() || length > dest.size() - off || done >= length) {
            return nullptr;
        }
        if (done > 0 && vanish_mid_payload) return nullptr;
        max_handed_out = std::max<size_t>(max_handed_out, off + length);
        return dest.data() + off + done;
    }
    void on_am_placed(AmId id, AmSource, const uint8_t* hdr, size_t length) override {
        uint64_t off = 0;
        std::memcpy(&off, hdr, sizeof(off));
        events.push_back({true, id, off, length, {}});
    }
    void on_am(AmId id, AmSource, const uint8_t* data, size_t length) override {
        events.push_back({false, id, 0, length, std::vector<uint8_t>(data, data + length)});
    }
    void on_remote_failure(uint16_t, uint64_t key, Status why) override {
        failures.emplace_back(key, why);
    }
};

struct CountingSink final : AmSink {
    size_t count = 0;
    void on_am(AmId, AmSource, const uint8_t*, size_t) override { ++count; }
    void on_remote_failure(uint16_t, uint64_t, Status) override {}
};

class TcpPlacement : public ::testing::Test {
protected:
    void SetUp() override {
        TcpConfig c;
        c.devices = {"lo"};
        std::string why;
        if (TcpInterface::open(c, 0xA1, 0, &sender_sink_, &a_, &why) != Status::kOk) {
            GTEST_SKIP() << "no loopback interface: " << why;
        }
        ASSERT_EQ(TcpInterface::open(c, 0xB2, 1, &sink_, &b_, &why), Status::kOk) << why;
    }

    std::unique_ptr<Endpoint> connect() {
        std::unique_ptr<Endpoint> ep;
        std::string why;
        std::vector<uint8_t> addr = b_->address();
        EXPECT_EQ(a_->connect(0xB2, addr.data(), addr.size(), false, &ep, &why), Status::kOk)
            << why;
        return ep;
    }

    /// Sends a kPlacedId message; retries while the lane is full (progressing both sides).
    void send_placed(Endpoint* ep, uint64_t offset, const std::vector<uint8_t>& payload) {
        uint64_t hdr[2] = {offset, 0x5151};
        ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
            return ep->am_send(kPlacedId, hdr, sizeof(hdr), payload.data(), payload.size()) ==
                   Status::kOk;
        }));
    }

    int raw_connect() { return test::raw_connect(*b_); }

    static std::vector<uint8_t> frame(AmId id, const std::vector<uint8_t>& body) {
        std::vector<uint8_t> out(kFrameHeaderSize + body.size());
        encode_frame_header(out.data(), id, static_cast<uint32_t>(body.size()));
        if (!body.empty()) std::memcpy(out.data() + kFrameHeaderSize, body.data(), body.size());
        return out;
    }
    static std::vector<uint8_t> placed_body(uint64_t offset, const std::vector<uint8_t>& payload) {
        std::vector<uint8_t> body(kHeader + payload.size());
        std::memcpy(body.data(), &offset, sizeof(offset));
        if (!payload.empty()) std::memcpy(body.data() + kHeader, payload.data(), payload.size());
        return body;
    }
    static void send_all(int fd, const std::vector<uint8_t>& bytes) {
        ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }

    bool untouched(size_t from, size_t to) const {
        for (size_t i = from; i < to; ++i) {
            if (sink_.dest[i] != kUntouched) return false;
        }
        return true;
    }

    CountingSink sender_sink_;
    PlacingSink sink_;
    std::unique_ptr<TcpInterface> a_, b_;
};

TEST_F(TcpPlacement, LargePayloadsLandInTheSinkMemoryInOrderWithPlainMessagesBetween) {
    auto ep = connect();
    ASSERT_TRUE(ep);
    const size_t len = kMaxFrameBody - kHeader;  // a full frame: never one read
    std::vector<std::vector<uint8_t>> payloads;
    for (uint32_t i = 0; i < 6; ++i)
        payloads.push_back(pattern(len - i, i));
    const std::vector<uint8_t> plain = pattern(100, 99);
    for (uint32_t i = 0; i < 6; ++i) {
        send_placed(ep.get(), i * len, payloads[i]);
        if (i == 2) {
            ASSERT_EQ(ep->am_send(kPlainId, nullptr, 0, plain.data(), plain.size()), Status::kOk);
        }
    }
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_.events.size() == 7; }));
    size_t placed = 0;
    for (size_t e = 0; e < sink_.events.size(); ++e) {
        const auto& ev = sink_.events[e];
        if (e == 3) {  // the plain message keeps its place in the stream
            EXPECT_FALSE(ev.placed);
            EXPECT_EQ(ev.id, kPlainId);
            EXPECT_EQ(ev.data, plain);
            continue;
        }
        // Big frames cannot arrive in one read, so every one of them is placed.
        ASSERT_TRUE(ev.placed) << "event " << e;
        ASSERT_EQ(ev.offset, placed * len);
        ASSERT_EQ(ev.length, payloads[placed].size());
        ASSERT_EQ(0, std::memcmp(sink_.dest.data() + ev.offset, payloads[placed].data(),
                                 payloads[placed].size()))
            << "payload " << placed;
        ++placed;
    }
    EXPECT_EQ(placed, 6u);
    EXPECT_TRUE(untouched(6 * len, sink_.dest.size()));
    EXPECT_TRUE(sink_.failures.empty());
}

TEST_F(TcpPlacement, RefusedPlacementDeliversTheWholeMessageThroughOnAm) {
    sink_.allow = false;
    auto ep = connect();
    ASSERT_TRUE(ep);
    const std::vector<uint8_t> payload = pattern(200000, 3);
    send_placed(ep.get(), 0, payload);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_.events.size() == 1; }));
    const auto& ev = sink_.events[0];
    EXPECT_FALSE(ev.placed);
    ASSERT_EQ(ev.length, kHeader + payload.size());
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), ev.data.begin() + kHeader));
    EXPECT_GT(sink_.place_calls, 0u);
    EXPECT_TRUE(untouched(0, sink_.dest.size()));
}

TEST_F(TcpPlacement, DestinationGoneMidPayloadIsNeverWrittenAgainAndTheStreamStaysInStep) {
    sink_.vanish_mid_payload = true;
    auto ep = connect();
    ASSERT_TRUE(ep);
    const std::vector<uint8_t> big = pattern(kMaxFrameBody - kHeader, 4);
    const std::vector<uint8_t> plain = pattern(3000, 5);
    send_placed(ep.get(), 1000, big);
    ASSERT_EQ(ep->am_send(kPlainId, nullptr, 0, plain.data(), plain.size()), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_.events.size() == 1; }));
    // The dropped payload is not reported; the next frame arrives intact.
    EXPECT_FALSE(sink_.events[0].placed);
    EXPECT_EQ(sink_.events[0].data, plain);
    // Whatever was written before the destination went away is a prefix of the payload, at
    // its offset: nothing before it, nothing after what the first read could hold.
    EXPECT_TRUE(untouched(0, 1000));
    size_t written = 0;
    while (written < big.size() && sink_.dest[1000 + written] == big[written])
        ++written;
    EXPECT_LT(written, big.size());
    EXPECT_TRUE(untouched(1000 + written + 64, sink_.dest.size()))
        << "bytes written after the destination was refused";
    EXPECT_TRUE(sink_.failures.empty());
}

TEST_F(TcpPlacement, TruncatedPlacedFrameThenCloseIsAResetWithNothingReported) {
    int fd = raw_connect();
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> hello(kHelloSize);
    const uint8_t nonce[kNonceSize] = {};
    encode_hello(hello.data(), 0x77, nonce);
    send_all(fd, frame(kTcpControlAm, hello));
    std::vector<uint8_t> f = frame(kPlacedId, placed_body(4096, pattern(200000, 6)));
    f.resize(kFrameHeaderSize + kHeader + 70000);  // 70000 of 200000 payload bytes come
    send_all(fd, f);
    for (int i = 0; i < 200; ++i)
        b_->progress();
    close(fd);
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return !sink_.failures.empty(); }));
    EXPECT_NE(sink_.failures[0].first, 0u) << "reported under the connection's key";
    EXPECT_EQ(sink_.failures[0].second, Status::kConnectionReset);
    EXPECT_TRUE(sink_.events.empty()) << "a truncated message was reported";
    EXPECT_TRUE(untouched(0, 4096));
    EXPECT_TRUE(untouched(4096 + 70000, sink_.dest.size()));
    EXPECT_EQ(b_->open_connections(), 0u);
}

TEST_F(TcpPlacement, AFrameLongerThanItsDestinationIsNotPlaced) {
    // The sink bounds what it hands out by the length the frame claims: a payload that would
    // run past the end of the destination goes the plain way (and the sink rejects it there).
    auto ep = connect();
    ASSERT_TRUE(ep);
    const std::vector<uint8_t> payload = pattern(200000, 8);
    send_placed(ep.get(), sink_.dest.size() - 100000, payload);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_.events.size() == 1; }));
    EXPECT_FALSE(sink_.events[0].placed);
    EXPECT_TRUE(untouched(0, sink_.dest.size()));
    EXPECT_EQ(sink_.max_handed_out, 0u);
}

}  // namespace
}  // namespace swy::tl::tcp
