// Specification of the tcp transport's zero-copy receive: a sink that names a destination for
// a message id gets its payload read from the socket straight into that memory (on_am_placed),
// anything it refuses still arrives whole through on_am(), a destination that goes away in
// the middle of a payload is never written again, and a peer that sends a truncated or lying
// frame cannot make the transport write outside what the sink handed out.
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
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
    AmSource last_source{};
    uint8_t* place_payload(AmId id, AmSource src, const uint8_t* hdr, size_t done,
                           size_t length) override {
        EXPECT_EQ(id, kPlacedId);
        ++place_calls;
        last_source = src;
        uint64_t off = 0;
        std::memcpy(&off, hdr, sizeof(off));
        if (!allow || off > dest.size() || length > dest.size() - off || done >= length) {
            return nullptr;
        }
        if (done > 0 && vanish_mid_payload) return nullptr;
        max_handed_out = std::max<size_t>(max_handed_out, off + length);
        return dest.data() + off + done;
    }
    std::function<void(AmSource)> after_placed;  // e.g. a reply sent from the callback
    void on_am_placed(AmId id, AmSource src, const uint8_t* hdr, size_t length) override {
        uint64_t off = 0;
        std::memcpy(&off, hdr, sizeof(off));
        events.push_back({true, id, off, length, {}});
        if (after_placed) after_placed(src);
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
    /// Sends @p bytes from a raw peer and waits until the receiver's kernel acknowledged all
    /// of them (SIOCOUTQ 0): they are in its socket before the interface reads anything.
    static void send_and_settle(int fd, const uint8_t* bytes, size_t n) {
        ASSERT_EQ(::send(fd, bytes, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        int outq = 1;
        while (ioctl(fd, SIOCOUTQ, &outq) == 0 && outq > 0) {
            ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "bytes never acknowledged";
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    /// A raw peer that said hello, with the interface's answer handled.
    int raw_peer() {
        int fd = raw_connect();
        EXPECT_GE(fd, 0);
        if (fd < 0) return fd;
        std::vector<uint8_t> hello(kHelloSize);
        const uint8_t nonce[kNonceSize] = {};
        encode_hello(hello.data(), 0x77, nonce);
        send_all(fd, frame(kTcpControlAm, hello));
        // Accepted (an interface without connections looks for new ones only now and then)
        // and the hello read.
        EXPECT_TRUE(progress_until({b_.get()}, [&] { return b_->socket_reads() >= 1; }));
        for (int i = 0; i < 64; ++i)
            b_->progress();
        return fd;
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

TEST_F(TcpPlacement, ATrainOfPlacedFramesCostsOneReadPerFrameByteExactAtTheHeaderEdges) {
    // The read that ends a placed payload also takes the next frame's header (16 + kHeader
    // bytes) into the receive buffer: where the whole train is in the socket, one read per
    // frame instead of a header read and a payload read each (issue #17). The payload sizes
    // put the end of each frame at the edges of that second read: a payload of 1 byte, of
    // one header less one, exactly one, one more, and one of kMinRead (16 KiB) +/- 1.
    int fd = raw_peer();
    ASSERT_GE(fd, 0);
    const size_t next_header = kFrameHeaderSize + kHeader;
    const std::vector<size_t> sizes = {
        50000, 1, next_header - 1, next_header, next_header + 1, 16383, 16384, 16385, 2};
    std::vector<uint8_t> stream;
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<uint64_t> offsets;
    uint64_t offset = 100;
    for (size_t i = 0; i < sizes.size(); ++i) {
        payloads.push_back(pattern(sizes[i], 40 + static_cast<uint32_t>(i)));
        offsets.push_back(offset);
        const auto f = frame(kPlacedId, placed_body(offset, payloads.back()));
        stream.insert(stream.end(), f.begin(), f.end());
        offset += sizes[i] + 7;  // gaps between destinations stay untouched
    }
    const std::vector<uint8_t> plain = pattern(3000, 60);
    const auto pf = frame(kPlainId, plain);
    stream.insert(stream.end(), pf.begin(), pf.end());
    // First the start of the big frame (its first read leaves it incomplete: placed), then
    // everything else at once.
    const size_t first = kFrameHeaderSize + kHeader + 20000;
    const uint64_t reads_hello = b_->socket_reads();
    send_and_settle(fd, stream.data(), first);
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return b_->socket_reads() > reads_hello; }));
    for (int i = 0; i < 16; ++i)
        b_->progress();
    const uint64_t reads_before = b_->socket_reads();
    send_and_settle(fd, stream.data() + first, stream.size() - first);
    ASSERT_TRUE(
        progress_until({b_.get()}, [&] { return sink_.events.size() == sizes.size() + 1; }));
    // The rest of the big payload with the next header, then one read per placed frame, and
    // one for the rest of the plain frame. Reading each header apart took 8 reads more.
    EXPECT_LE(b_->socket_reads() - reads_before, sizes.size() + 1);
    for (size_t i = 0; i < sizes.size(); ++i) {
        const auto& ev = sink_.events[i];
        ASSERT_TRUE(ev.placed) << "frame " << i;
        ASSERT_EQ(ev.offset, offsets[i]) << "frame " << i;
        ASSERT_EQ(ev.length, sizes[i]) << "frame " << i;
        ASSERT_EQ(0, std::memcmp(sink_.dest.data() + offsets[i], payloads[i].data(), sizes[i]))
            << "frame " << i;
        EXPECT_TRUE(untouched(offsets[i] + sizes[i], offsets[i] + sizes[i] + 7)) << "frame " << i;
    }
    EXPECT_FALSE(sink_.events.back().placed);
    EXPECT_EQ(sink_.events.back().data, plain);
    EXPECT_TRUE(untouched(0, offsets[0]));
    EXPECT_TRUE(untouched(offset, sink_.dest.size()));
    EXPECT_TRUE(sink_.failures.empty());
    close(fd);
}

TEST_F(TcpPlacement, ANextHeaderSplitAcrossReadsStillPlacesBothPayloadsByteExact) {
    // The payload's last read brings only part of the next header (the read-ahead's partial
    // header, expect_header): the rest of that header is completed by later reads, and both
    // payloads arrive byte-exact at their destinations, nothing written between or after them.
    int fd = raw_peer();
    ASSERT_GE(fd, 0);
    const std::vector<uint8_t> a = pattern(40000, 70);
    const std::vector<uint8_t> b = pattern(30000, 71);
    std::vector<uint8_t> stream = frame(kPlacedId, placed_body(0, a));
    const size_t second = stream.size();
    const auto fb = frame(kPlacedId, placed_body(50000, b));
    stream.insert(stream.end(), fb.begin(), fb.end());
    const size_t cuts[] = {kFrameHeaderSize + kHeader + 10000, second + 10, second + 20,
                           stream.size()};
    size_t sent = 0;
    for (size_t cut : cuts) {
        send_and_settle(fd, stream.data() + sent, cut - sent);
        sent = cut;
        for (int i = 0; i < 16; ++i)
            b_->progress();
    }
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return sink_.events.size() == 2; }));
    ASSERT_TRUE(sink_.events[0].placed);
    ASSERT_TRUE(sink_.events[1].placed);
    EXPECT_EQ(sink_.events[1].offset, 50000u);
    EXPECT_EQ(0, std::memcmp(sink_.dest.data(), a.data(), a.size()));
    EXPECT_EQ(0, std::memcmp(sink_.dest.data() + 50000, b.data(), b.size()));
    EXPECT_TRUE(untouched(a.size(), 50000));
    EXPECT_TRUE(untouched(50000 + b.size(), sink_.dest.size()));
    close(fd);
}

TEST_F(TcpPlacement, AFrameArrivingInPiecesIsNotQuickAckedPieceByPieceButOnceItEnds) {
    // Quick ACKs (TCP_QUICKACK, a system call and an ACK segment each) are for the end of a
    // burst, so that a sender waiting for delivery is not held by the delayed-ACK timer.
    // Inside a frame the rest must still come, and the kernel acknowledges a stream by
    // itself: one quick ACK per read cost ~7-11 per 4 MiB message (issue #17).
    int fd = raw_peer();
    ASSERT_GE(fd, 0);
    const std::vector<uint8_t> payload = pattern(200000, 80);
    const auto f = frame(kPlacedId, placed_body(0, payload));
    const uint64_t acks_before = b_->quick_acks();
    const size_t piece = 20000;
    for (size_t sent = 0; sent < f.size(); sent += piece) {
        const uint64_t reads = b_->socket_reads();
        send_and_settle(fd, f.data() + sent, std::min(piece, f.size() - sent));
        ASSERT_TRUE(progress_until({b_.get()}, [&] { return b_->socket_reads() > reads; }));
        for (int i = 0; i < 16; ++i)  // looks that find nothing: mid-frame, no quick ACK
            b_->progress();
        if (sent + piece < f.size()) {
            ASSERT_EQ(b_->quick_acks(), acks_before) << "quick ACK inside the frame, at " << sent;
        }
    }
    ASSERT_EQ(sink_.events.size(), 1u);
    EXPECT_TRUE(sink_.events[0].placed);
    EXPECT_EQ(0, std::memcmp(sink_.dest.data(), payload.data(), payload.size()));
    // The frame ended: its end is acknowledged at the next pass, once.
    for (int i = 0; i < 16; ++i)
        b_->progress();
    EXPECT_EQ(b_->quick_acks(), acks_before + 1);
    close(fd);
}

TEST_F(TcpPlacement, RepliesBetweenFramesKeepOneQuickAckEntryPerConnection) {
    // A reply sent from the callback of one placed frame carries our ACK (nothing owed any
    // more); the read of the next frame, in the same pass, owes one again, and inside that
    // frame it waits. The connection must stay listed once, not once more per frame.
    int fd = raw_peer();
    ASSERT_GE(fd, 0);
    const std::vector<uint8_t> reply = pattern(40, 91);
    size_t replies = 0;
    sink_.after_placed = [&](AmSource src) {
        Endpoint* back = b_->reply_endpoint(src.sender);
        ASSERT_NE(back, nullptr);
        ASSERT_EQ(back->am_send(kPlainId, nullptr, 0, reply.data(), reply.size()), Status::kOk);
        ++replies;
    };
    constexpr size_t kFrames = 8;
    constexpr size_t kPayload = 30000;
    std::vector<uint8_t> stream;
    std::vector<size_t> starts;
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t i = 0; i < kFrames; ++i) {
        payloads.push_back(pattern(kPayload, 92 + static_cast<uint32_t>(i)));
        starts.push_back(stream.size());
        const auto f = frame(kPlacedId, placed_body(i * kPayload, payloads.back()));
        stream.insert(stream.end(), f.begin(), f.end());
    }
    // Each piece ends inside a frame: the end of one frame and the start of the next.
    size_t sent = 0;
    for (size_t i = 0; i <= kFrames; ++i) {
        const size_t cut = i < kFrames ? starts[i] + 20000 : stream.size();
        const uint64_t reads = b_->socket_reads();
        send_and_settle(fd, stream.data() + sent, cut - sent);
        sent = cut;
        ASSERT_TRUE(progress_until({b_.get()}, [&] { return b_->socket_reads() > reads; }));
        for (int k = 0; k < 8; ++k)
            b_->progress();
        ASSERT_LE(b_->quick_acks_owed(), 1u) << "after piece " << i;
    }
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return sink_.events.size() == kFrames; }));
    EXPECT_EQ(replies, kFrames);
    for (size_t i = 0; i < kFrames; ++i) {
        EXPECT_EQ(0, std::memcmp(sink_.dest.data() + i * kPayload, payloads[i].data(), kPayload))
            << "frame " << i;
    }
    close(fd);
}

}  // namespace
}  // namespace swy::tl::tcp
