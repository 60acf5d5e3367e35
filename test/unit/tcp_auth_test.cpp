// Specification of the tcp transport's connection set-up (issue #12): connect() never blocks
// (addresses are tried from progress under SWY_TCP_CONNECT_TIMEOUT), and with a shared key
// nothing a peer sends is delivered before it proved that it holds the key.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "tcp_test_util.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

using test::Blackholes;
using test::pattern;
using test::progress_until;
using test::raw_connect;
using Clock = std::chrono::steady_clock;

struct Sink final : AmSink {
    std::vector<std::vector<uint8_t>> msgs;
    std::vector<std::pair<uint64_t, Status>> failures;
    void on_am(AmId, AmSource, const uint8_t* data, size_t length) override {
        msgs.emplace_back(data, data + length);
    }
    /// (peer key, status): the key names the connection, never just a claimed uid.
    void on_remote_failure(uint16_t, uint64_t key, Status why) override {
        failures.emplace_back(key, why);
    }
};

constexpr uint64_t kUidA = 0xA0000000000000A1ull;
constexpr uint64_t kUidB = 0xB0000000000000B2ull;
constexpr uint64_t kUidC = 0xC0000000000000C3ull;

common::AuthKey key_of(const char* hex) {
    common::AuthKey k;
    std::string why;
    EXPECT_EQ(common::AuthKey::from_hex(hex, &k, &why), Status::kOk) << why;
    return k;
}
const char* const kKey1 = "00112233445566778899aabbccddeeff";
const char* const kKey2 = "ffeeddccbbaa99887766554433221100";

TcpConfig config(const char* key_hex = nullptr, uint64_t connect_timeout_ns = 10'000'000'000) {
    TcpConfig c;
    c.devices = {"lo"};
    c.connect_timeout_ns = connect_timeout_ns;
    if (key_hex != nullptr) c.auth_key = key_of(key_hex);
    return c;
}

class TcpSetup : public ::testing::Test {
protected:
    void open(std::unique_ptr<TcpInterface>* out, Sink* sink, uint64_t uid, const TcpConfig& c) {
        std::string why;
        if (TcpInterface::open(c, uid, 1, sink, out, &why) != Status::kOk) {
            GTEST_SKIP() << "no loopback interface: " << why;
        }
    }
    std::unique_ptr<Endpoint> connect(TcpInterface* from, uint64_t to_uid,
                                      const std::vector<uint8_t>& section) {
        std::unique_ptr<Endpoint> ep;
        std::string why;
        EXPECT_EQ(from->connect(to_uid, section.data(), section.size(), false, &ep, &why),
                  Status::kOk)
            << why;
        return ep;
    }
    static std::vector<uint8_t> frame(AmId id, const uint8_t* body, size_t n) {
        std::vector<uint8_t> out(kFrameHeaderSize + n);
        encode_frame_header(out.data(), id, static_cast<uint32_t>(n));
        if (n != 0) std::memcpy(out.data() + kFrameHeaderSize, body, n);
        return out;
    }
    static void send_all(int fd, const std::vector<uint8_t>& bytes) {
        ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    /// True once @p fd sees EOF or a reset.
    static bool closed(int fd) {
        uint8_t buf[512];
        for (;;) {
            const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (n > 0) continue;  // the hello answer
            return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        }
    }

    Sink sink_a_, sink_b_, sink_c_;
    std::unique_ptr<TcpInterface> a_, b_, c_;
};

// ---- Asynchronous connect --------------------------------------------------------------------

TEST_F(TcpSetup, ThirtyTwoBlackholedAddressesNeitherBlockNorStopOtherPeers) {
    // 3 s for all 32 addresses: long enough that the live exchange below finishes first even
    // on a loaded machine or under a sanitizer (the test checks the order of events; the old
    // code took 2 s per address, 64 s in all).
    constexpr uint64_t kTimeout = 3'000'000'000;
    open(&a_, &sink_a_, kUidA, config(nullptr, kTimeout));
    open(&b_, &sink_b_, kUidB, config());
    Blackholes holes(kMaxTcpAddresses);
    ASSERT_EQ(holes.entries().size(), kMaxTcpAddresses);

    const auto t0 = Clock::now();
    auto dead = connect(a_.get(), kUidC, holes.section());
    const auto connect_time = Clock::now() - t0;
    ASSERT_TRUE(dead);
    EXPECT_LT(connect_time, std::chrono::seconds(1)) << "connect() must not wait";
    // Sends to it queue meanwhile.
    const uint8_t x = 1;
    EXPECT_EQ(dead->am_send(1, &x, 1, nullptr, 0), Status::kOk);

    // Meanwhile a live peer on the same interface is served, both ways.
    auto live = connect(a_.get(), kUidB, b_->address());
    ASSERT_TRUE(live);
    for (uint32_t i = 0; i < 20; ++i) {
        std::vector<uint8_t> p = pattern(1000 + i, i);
        ASSERT_EQ(live->am_send(2, &i, 4, p.data(), p.size()), Status::kOk);
    }
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 20; }));
    EXPECT_TRUE(sink_a_.failures.empty())
        << "failed before its deadline, or the live peer waited for the blackholed one";
    for (uint32_t i = 0; i < 20; ++i) {
        std::vector<uint8_t> want(4 + 1000 + i);
        std::memcpy(want.data(), &i, 4);
        std::vector<uint8_t> p = pattern(1000 + i, i);
        std::memcpy(want.data() + 4, p.data(), p.size());
        ASSERT_EQ(sink_b_.msgs[i], want) << i;
    }

    // Then the blackholed peer fails, once, within the deadline (plus progress slack).
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return !sink_a_.failures.empty(); }));
    const auto fail_time = Clock::now() - t0;
    EXPECT_LT(fail_time, std::chrono::seconds(3 + 3)) << "not failed at its deadline";
    EXPECT_GE(fail_time, std::chrono::milliseconds(2900)) << "failed before its deadline";
    ASSERT_EQ(sink_a_.failures.size(), 1u);
    EXPECT_EQ(sink_a_.failures[0].first, dead->peer_key());
    EXPECT_EQ(sink_a_.failures[0].second, Status::kTimedOut);
    EXPECT_EQ(dead->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
    for (int i = 0; i < 1000; ++i)
        a_->progress();
    EXPECT_EQ(sink_a_.failures.size(), 1u) << "reported once";
    // The live one still works.
    uint32_t last = 99;
    ASSERT_EQ(live->am_send(2, &last, 4, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 21; }));
}

TEST_F(TcpSetup, ABlackholedFirstAddressLeavesTimeForTheNextOne) {
    // One hanging address, then the real one: each attempt gets a share of the deadline.
    open(&a_, &sink_a_, kUidA, config(nullptr, 2'000'000'000));
    open(&b_, &sink_b_, kUidB, config());
    Blackholes hole(1);
    ASSERT_EQ(hole.entries().size(), 1u);
    std::vector<TcpAddressEntry> entries = hole.entries();
    std::vector<TcpAddressEntry> real;
    ASSERT_TRUE(decode_tcp_address(b_->address().data(), b_->address().size(), &real));
    entries.insert(entries.end(), real.begin(), real.end());
    auto ep = connect(a_.get(), kUidB, encode_tcp_address(entries));
    ASSERT_TRUE(ep);
    const uint8_t x = 7;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    EXPECT_EQ(sink_b_.msgs[0], std::vector<uint8_t>{7});
    EXPECT_TRUE(sink_a_.failures.empty());
}

TEST_F(TcpSetup, SendsWhileConnectingQueueWithinTheLimitAndLeaveInOrder) {
    TcpConfig ca = config();
    ca.sndbuf_limit = 64 * 1024;
    open(&a_, &sink_a_, kUidA, ca);
    open(&b_, &sink_b_, kUidB, config());
    auto ep = connect(a_.get(), kUidB, b_->address());
    ASSERT_TRUE(ep);
    // Nothing progressed: not connected yet, so everything queues, up to the limit.
    uint32_t accepted = 0;
    Status last = Status::kOk;
    while (last == Status::kOk && accepted < 1000) {
        std::vector<uint8_t> p = pattern(10000, accepted);
        last = ep->am_send(3, &accepted, 4, p.data(), p.size());
        if (last == Status::kOk) ++accepted;
    }
    EXPECT_EQ(last, Status::kNoResource);
    EXPECT_GE(accepted, 6u);
    EXPECT_LE(accepted * 10012u, 64u * 1024u + 10012u);
    ASSERT_TRUE(
        progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == accepted; }));
    for (uint32_t i = 0; i < accepted; ++i) {
        uint32_t seq = 0;
        std::memcpy(&seq, sink_b_.msgs[i].data(), 4);
        ASSERT_EQ(seq, i);
        ASSERT_EQ(std::vector<uint8_t>(sink_b_.msgs[i].begin() + 4, sink_b_.msgs[i].end()),
                  pattern(10000, i));
    }
}

TEST_F(TcpSetup, APeerBusyLongerThanTheConnectTimeoutIsNotAFailure) {
    // The timeout bounds the TCP connect only: the handshake waits for the other side's
    // progress, however long it computes.
    constexpr uint64_t kTimeout = 200'000'000;
    open(&a_, &sink_a_, kUidA, config(kKey1, kTimeout));
    open(&b_, &sink_b_, kUidB, config(kKey1, kTimeout));
    auto ep = connect(a_.get(), kUidB, b_->address());
    ASSERT_TRUE(ep);
    const uint8_t x = 3;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    // The acceptor computes (no progress) while the connector waits for its answer...
    const auto t0 = Clock::now();
    while (Clock::now() - t0 < std::chrono::milliseconds(500))
        a_->progress();
    // ...and the acceptor waits while the connector computes.
    while (Clock::now() - t0 < std::chrono::milliseconds(1000))
        b_->progress();
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

// ---- Authentication --------------------------------------------------------------------------

TEST_F(TcpSetup, KeyedPeersExchangeMessagesByteExactBothWays) {
    open(&a_, &sink_a_, kUidA, config(kKey1));
    open(&b_, &sink_b_, kUidB, config(kKey1));
    auto ep = connect(a_.get(), kUidB, b_->address());
    ASSERT_TRUE(ep);
    const size_t sizes[] = {0, 1, 100, 4096, 65536, kMaxFrameBody - 4};
    uint32_t i = 0;
    for (size_t n : sizes) {
        std::vector<uint8_t> p = pattern(n, i);
        Status s;
        ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
            s = ep->am_send(4, &i, 4, p.data(), p.size());
            return s != Status::kNoResource;
        }));
        ASSERT_EQ(s, Status::kOk);
        ++i;
    }
    ASSERT_TRUE(progress_until({a_.get(), b_.get()},
                               [&] { return sink_b_.msgs.size() == std::size(sizes); }));
    for (i = 0; i < std::size(sizes); ++i) {
        ASSERT_EQ(sink_b_.msgs[i].size(), 4 + sizes[i]);
        ASSERT_EQ(std::vector<uint8_t>(sink_b_.msgs[i].begin() + 4, sink_b_.msgs[i].end()),
                  pattern(sizes[i], i));
    }
    EXPECT_EQ(b_->sender_uid(0), kUidA) << "identity known once proven";
    Endpoint* back = b_->reply_endpoint(0);
    ASSERT_NE(back, nullptr);
    const uint8_t r = 42;
    ASSERT_EQ(back->am_send(5, &r, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == 1; }));
    EXPECT_EQ(sink_a_.msgs[0], std::vector<uint8_t>{42});
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

TEST_F(TcpSetup, RawPeerWithoutProofGetsNothingDeliveredAndIsClosed) {
    open(&b_, &sink_b_, kUidB, config(kKey1));
    for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(variant);
        int fd = raw_connect(*b_);
        ASSERT_GE(fd, 0);
        uint8_t nonce[kNonceSize] = {1, 2, 3};
        uint8_t hello[kHelloSize];
        encode_hello(hello, 0x5555, nonce);
        send_all(fd, frame(kTcpControlAm, hello, sizeof(hello)));
        if (variant == 1) {
            // A made-up proof.
            uint8_t proof[kProofSize] = {9, 9, 9};
            uint8_t body[kProofFrameSize];
            encode_proof(body, proof);
            send_all(fd, frame(kTcpControlAm, body, sizeof(body)));
        } else if (variant == 2) {
            // A proof under another key (right protocol, wrong secret).
            uint8_t ack_buf[kFrameHeaderSize + kHelloAckMaxSize];
            ssize_t got = -1;
            ASSERT_TRUE(progress_until({b_.get()}, [&] {
                got = recv(fd, ack_buf, sizeof(ack_buf), MSG_DONTWAIT);
                return got != -1;
            }));
            ASSERT_EQ(got, static_cast<ssize_t>(sizeof(ack_buf)));
            HelloAck ack;
            ASSERT_TRUE(decode_hello_ack(ack_buf + kFrameHeaderSize, kHelloAckMaxSize, &ack));
            EXPECT_TRUE(ack.has_proof);
            uint8_t ctx[kHelloContextSize], proof[kProofSize], body[kProofFrameSize];
            hello_context(0x5555, kUidB, ctx);
            common::auth_proof(key_of(kKey2), kClientLabel, nonce, ack.nonce, ctx, sizeof(ctx),
                               proof);
            encode_proof(body, proof);
            send_all(fd, frame(kTcpControlAm, body, sizeof(body)));
        }
        const uint8_t data[] = {1, 2, 3, 4};
        send_all(fd, frame(1, data, sizeof(data)));
        EXPECT_TRUE(progress_until({b_.get()}, [&] { return closed(fd); }));
        for (int i = 0; i < 1000; ++i)
            b_->progress();
        close(fd);
        EXPECT_TRUE(sink_b_.msgs.empty()) << "delivered without a proof";
        EXPECT_TRUE(sink_b_.failures.empty()) << "an unproven uid must not be blamed";
        EXPECT_EQ(b_->open_connections(), 0u);
    }
}

TEST_F(TcpSetup, DifferentKeysFailTheEndpointAndDeliverNothing) {
    // Keyed/keyed with different keys, keyed connector/unkeyed acceptor, and the reverse.
    const char* keys[][2] = {{kKey1, kKey2}, {kKey1, nullptr}, {nullptr, kKey2}};
    for (auto& k : keys) {
        SCOPED_TRACE(std::string(k[0] ? k[0] : "-") + " / " + (k[1] ? k[1] : "-"));
        sink_a_ = Sink{};
        sink_b_ = Sink{};
        open(&a_, &sink_a_, kUidA, config(k[0]));
        open(&b_, &sink_b_, kUidB, config(k[1]));
        auto ep = connect(a_.get(), kUidB, b_->address());
        ASSERT_TRUE(ep);
        const uint8_t x = 1;
        ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
        ASSERT_TRUE(
            progress_until({a_.get(), b_.get()}, [&] { return !sink_a_.failures.empty(); }));
        for (int i = 0; i < 1000; ++i) {
            a_->progress();
            b_->progress();
        }
        ASSERT_EQ(sink_a_.failures.size(), 1u);
        EXPECT_EQ(sink_a_.failures[0].first, ep->peer_key());
        EXPECT_NE(sink_a_.failures[0].second, Status::kOk);
        EXPECT_TRUE(sink_b_.msgs.empty());
        EXPECT_TRUE(sink_a_.msgs.empty());
        EXPECT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
        if (k[1] != nullptr) {
            EXPECT_TRUE(sink_b_.failures.empty());
        }
        ep.reset();
        a_.reset();
        b_.reset();
    }
}

// ---- Crossed connects under a key (one connection per pair, tcp_pairing.cpp) ---------------

/// A listening socket on 127.0.0.1 that plays a peer answering by hand.
class FakeAcceptor {
public:
    FakeAcceptor() {
        listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(sin);
        if (listen_fd_ < 0 ||
            bind(listen_fd_, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0 ||
            listen(listen_fd_, 4) != 0 ||
            getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sin), &len) != 0) {
            return;
        }
        TcpAddressEntry e;
        e.family = 4;
        e.port = ntohs(sin.sin_port);
        std::memcpy(e.ip, &sin.sin_addr, 4);
        section_ = encode_tcp_address({e});
    }
    ~FakeAcceptor() {
        if (fd_ >= 0) close(fd_);
        if (listen_fd_ >= 0) close(listen_fd_);
    }
    FakeAcceptor(const FakeAcceptor&) = delete;
    FakeAcceptor& operator=(const FakeAcceptor&) = delete;
    const std::vector<uint8_t>& section() const { return section_; }
    int fd() const { return fd_; }
    /// One step of: accept, then read a whole hello frame. True once the hello is in.
    bool hello_arrived() {
        if (fd_ < 0) fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd_ < 0) return false;
        const ssize_t n = recv(fd_, hello_ + got_, sizeof(hello_) - got_, MSG_DONTWAIT);
        if (n > 0) got_ += static_cast<size_t>(n);
        return got_ == sizeof(hello_);
    }

private:
    int listen_fd_ = -1;
    int fd_ = -1;
    uint8_t hello_[kFrameHeaderSize + kHelloSize] = {};
    size_t got_ = 0;
    std::vector<uint8_t> section_;
};

TEST_F(TcpSetup, APeerWithAnotherKeyCrossingOurConnectFailsBothSidesAtOnce) {
    // Both connect to each other at once, with different keys. Each side's own connection
    // fails authentication and must be reported now, not after SWY_TCP_CONNECT_TIMEOUT (60 s
    // here, far beyond progress_until's 10 s): before the fix, the worker with the higher uid
    // had been redirected (on an unproven hello) to the other's connection and waited for it.
    constexpr uint64_t kMinute = 60'000'000'000;
    for (bool a_first : {true, false}) {
        SCOPED_TRACE(a_first ? "A connects first" : "B connects first");
        sink_a_ = Sink{};
        sink_b_ = Sink{};
        open(&a_, &sink_a_, kUidA, config(kKey1, kMinute));
        open(&b_, &sink_b_, kUidB, config(kKey2, kMinute));
        std::unique_ptr<Endpoint> ab, ba;
        if (a_first) {
            ab = connect(a_.get(), kUidB, b_->address());
            ba = connect(b_.get(), kUidA, a_->address());
        } else {
            ba = connect(b_.get(), kUidA, a_->address());
            ab = connect(a_.get(), kUidB, b_->address());
        }
        ASSERT_TRUE(ab && ba);
        const uint8_t x = 7;
        ASSERT_EQ(ab->am_send(1, &x, 1, nullptr, 0), Status::kOk);
        ASSERT_EQ(ba->am_send(1, &x, 1, nullptr, 0), Status::kOk);
        ASSERT_TRUE(
            progress_until({a_.get(), b_.get()},
                           [&] { return !sink_a_.failures.empty() && !sink_b_.failures.empty(); }))
            << "A failed: " << sink_a_.failures.size() << ", B failed: " << sink_b_.failures.size();
        ASSERT_EQ(sink_a_.failures.size(), 1u);
        ASSERT_EQ(sink_b_.failures.size(), 1u);
        EXPECT_EQ(sink_a_.failures[0].first, ab->peer_key());
        EXPECT_EQ(sink_b_.failures[0].first, ba->peer_key());
        EXPECT_EQ(sink_a_.failures[0].second, Status::kUnreachable) << "authentication failed";
        EXPECT_EQ(sink_b_.failures[0].second, Status::kUnreachable) << "authentication failed";
        EXPECT_TRUE(sink_a_.msgs.empty());
        EXPECT_TRUE(sink_b_.msgs.empty());
        EXPECT_EQ(ab->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
        EXPECT_EQ(ba->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
        ab.reset();
        ba.reset();
        a_.reset();
        b_.reset();
    }
}

TEST_F(TcpSetup, CrossedConnectsWithOneKeyEndWithOneConnectionByteExact) {
    // The held handshake (kHelloAckHold, verdict after the proof) keeps one connection per
    // pair under a key, whichever side connects first; every byte arrives, in order.
    for (bool a_first : {true, false}) {
        SCOPED_TRACE(a_first ? "A connects first" : "B connects first");
        sink_a_ = Sink{};
        sink_b_ = Sink{};
        open(&a_, &sink_a_, kUidA, config(kKey1));
        open(&b_, &sink_b_, kUidB, config(kKey1));
        std::unique_ptr<Endpoint> ab, ba;
        if (a_first) {
            ab = connect(a_.get(), kUidB, b_->address());
            ba = connect(b_.get(), kUidA, a_->address());
        } else {
            ba = connect(b_.get(), kUidA, a_->address());
            ab = connect(a_.get(), kUidB, b_->address());
        }
        ASSERT_TRUE(ab && ba);
        constexpr uint32_t kCount = 50;
        for (uint32_t i = 0; i < kCount; ++i) {
            const std::vector<uint8_t> p = pattern(100 + i * 37, i);
            ASSERT_EQ(ab->am_send(1, &i, 4, p.data(), p.size()), Status::kOk);
            const std::vector<uint8_t> q = pattern(100 + i * 37, i + 1000);
            ASSERT_EQ(ba->am_send(1, &i, 4, q.data(), q.size()), Status::kOk);
        }
        ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
            return sink_a_.msgs.size() == kCount && sink_b_.msgs.size() == kCount;
        }));
        for (uint32_t i = 0; i < kCount; ++i) {
            std::vector<uint8_t> want_b(4), want_a(4);
            std::memcpy(want_b.data(), &i, 4);
            want_a = want_b;
            const std::vector<uint8_t> p = pattern(100 + i * 37, i);
            const std::vector<uint8_t> q = pattern(100 + i * 37, i + 1000);
            want_b.insert(want_b.end(), p.begin(), p.end());
            want_a.insert(want_a.end(), q.begin(), q.end());
            ASSERT_EQ(sink_b_.msgs[i], want_b) << i;
            ASSERT_EQ(sink_a_.msgs[i], want_a) << i;
        }
        ASSERT_TRUE(progress_until(
            {a_.get(), b_.get()},
            [&] { return a_->open_connections() == 1 && b_->open_connections() == 1; }))
            << a_->open_connections() << " and " << b_->open_connections() << " connections";
        ab->disconnect();
        ba->disconnect();
        ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
            return a_->open_connections() == 0 && b_->open_connections() == 0;
        }));
        EXPECT_TRUE(sink_a_.failures.empty());
        EXPECT_TRUE(sink_b_.failures.empty());
        ab.reset();
        ba.reset();
        a_.reset();
        b_.reset();
    }
}

TEST_F(TcpSetup, ARedirectedConnectWaitsAWholeConnectTimeoutFromTheRedirect) {
    // B (the higher uid) connects first, with a 2 s connect timeout, while A is too busy to
    // look (1.5 s). Then A connects back, crossing: A redirects B to A's connection, which
    // reaches B only after A's first attempt (a blackholed address, half of A's 2 s) ended:
    // after B's first deadline, within 2 s of the redirect. A slow peer is not a dead one:
    // B must wait for it (256 ranks on two cores failed here) and both messages arrive.
    constexpr uint64_t kTwoSeconds = 2'000'000'000;
    open(&a_, &sink_a_, kUidA, config(nullptr, kTwoSeconds));
    open(&b_, &sink_b_, kUidB, config(nullptr, kTwoSeconds));
    Blackholes hole(1);
    ASSERT_EQ(hole.entries().size(), 1u);
    std::unique_ptr<Endpoint> ba = connect(b_.get(), kUidA, a_->address());
    ASSERT_TRUE(ba);
    const std::vector<uint8_t> from_b = pattern(3000, 11);
    ASSERT_EQ(ba->am_send(1, nullptr, 0, from_b.data(), from_b.size()), Status::kOk);
    const auto busy_until = Clock::now() + std::chrono::milliseconds(1500);
    while (Clock::now() < busy_until)
        b_->progress();  // A does not progress: B's hello waits in A's socket

    std::vector<TcpAddressEntry> entries = hole.entries();
    std::vector<TcpAddressEntry> real;
    ASSERT_TRUE(decode_tcp_address(b_->address().data(), b_->address().size(), &real));
    entries.insert(entries.end(), real.begin(), real.end());
    std::unique_ptr<Endpoint> ab = connect(a_.get(), kUidB, encode_tcp_address(entries));
    ASSERT_TRUE(ab);
    const std::vector<uint8_t> from_a = pattern(2000, 22);
    ASSERT_EQ(ab->am_send(1, nullptr, 0, from_a.data(), from_a.size()), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return (sink_a_.msgs.size() == 1 && sink_b_.msgs.size() == 1) ||
               !sink_a_.failures.empty() || !sink_b_.failures.empty();
    }));
    EXPECT_TRUE(sink_b_.failures.empty())
        << "B gave up on A's connection at its first deadline: "
        << (sink_b_.failures.empty() ? "" : status_text(sink_b_.failures[0].second));
    EXPECT_TRUE(sink_a_.failures.empty());
    ASSERT_EQ(sink_a_.msgs.size(), 1u);
    ASSERT_EQ(sink_b_.msgs.size(), 1u);
    EXPECT_EQ(sink_a_.msgs[0], from_b);
    EXPECT_EQ(sink_b_.msgs[0], from_a);
    EXPECT_EQ(a_->open_connections(), 1u) << "one connection for the pair";
}

TEST_F(TcpSetup, AForgedPairingAnswerIsRefusedAndTheRealConnectionWorks) {
    // B (higher uid) connects to "A" at an address where an impostor without the key answers
    // the hello with a pairing frame instead of a proven hello answer. Before the fix a
    // kRedirect made B wait for A's own connection and then moved B's endpoint onto whatever
    // connection came from A: the impostor steered it. Now B's endpoint fails at once
    // (authentication failed), and the real A and B still exchange every byte both ways.
    constexpr uint64_t kMinute = 60'000'000'000;
    const TcpControl forged[] = {TcpControl::kRedirect, TcpControl::kProceed, TcpControl::kAttach};
    for (TcpControl kind : forged) {
        SCOPED_TRACE(static_cast<int>(kind));
        sink_a_ = Sink{};
        sink_b_ = Sink{};
        open(&a_, &sink_a_, kUidA, config(kKey1, kMinute));
        open(&b_, &sink_b_, kUidB, config(kKey1, kMinute));
        FakeAcceptor impostor;
        ASSERT_FALSE(impostor.section().empty());
        auto forged_ep = connect(b_.get(), kUidA, impostor.section());
        ASSERT_TRUE(forged_ep);
        const uint8_t early = 9;
        ASSERT_EQ(forged_ep->am_send(1, &early, 1, nullptr, 0), Status::kOk);
        ASSERT_TRUE(progress_until({b_.get()}, [&] { return impostor.hello_arrived(); }));
        const uint8_t body = static_cast<uint8_t>(kind);
        send_all(impostor.fd(), frame(kTcpControlAm, &body, 1));
        ASSERT_TRUE(progress_until({b_.get()}, [&] { return !sink_b_.failures.empty(); }))
            << "the forged answer was not refused";
        ASSERT_EQ(sink_b_.failures.size(), 1u);
        EXPECT_EQ(sink_b_.failures[0].first, forged_ep->peer_key());
        EXPECT_EQ(sink_b_.failures[0].second, Status::kUnreachable);
        EXPECT_TRUE(progress_until({b_.get()}, [&] { return closed(impostor.fd()); }));
        EXPECT_EQ(forged_ep->am_send(1, &early, 1, nullptr, 0), Status::kConnectionReset);

        // The real connection (what a redirect would have waited for): A -> B, and B's new
        // endpoint to A rides on it; every byte.
        auto ab = connect(a_.get(), kUidB, b_->address());
        ASSERT_TRUE(ab);
        const size_t sizes[] = {0, 1, 4095, 4096, 4097, 65536};
        for (uint32_t i = 0; i < std::size(sizes); ++i) {
            const std::vector<uint8_t> p = pattern(sizes[i], i);
            ASSERT_EQ(ab->am_send(2, &i, 4, p.data(), p.size()), Status::kOk);
        }
        ASSERT_TRUE(progress_until({a_.get(), b_.get()},
                                   [&] { return sink_b_.msgs.size() == std::size(sizes); }));
        auto ba = connect(b_.get(), kUidA, a_->address());
        ASSERT_TRUE(ba);
        for (uint32_t i = 0; i < std::size(sizes); ++i) {
            const std::vector<uint8_t> q = pattern(sizes[i], i + 100);
            ASSERT_EQ(ba->am_send(2, &i, 4, q.data(), q.size()), Status::kOk);
        }
        ASSERT_TRUE(progress_until({a_.get(), b_.get()},
                                   [&] { return sink_a_.msgs.size() == std::size(sizes); }));
        for (uint32_t i = 0; i < std::size(sizes); ++i) {
            std::vector<uint8_t> want(4);
            std::memcpy(want.data(), &i, 4);
            std::vector<uint8_t> want_a = want;
            const std::vector<uint8_t> p = pattern(sizes[i], i);
            const std::vector<uint8_t> q = pattern(sizes[i], i + 100);
            want.insert(want.end(), p.begin(), p.end());
            want_a.insert(want_a.end(), q.begin(), q.end());
            ASSERT_EQ(sink_b_.msgs[i], want) << i;
            ASSERT_EQ(sink_a_.msgs[i], want_a) << i;
        }
        EXPECT_EQ(b_->open_connections(), 1u) << "B's new endpoint shares A's connection";
        EXPECT_TRUE(sink_a_.failures.empty());
        EXPECT_EQ(sink_b_.failures.size(), 1u) << "only the forged connection failed";
        ab.reset();
        ba.reset();
        forged_ep.reset();
        a_.reset();
        b_.reset();
    }
}

TEST_F(TcpSetup, PairingFramesFromAnUnprovenConnectorAreRefused) {
    // The acceptor side: a raw peer claims to be A (whose connection B would keep or share)
    // and sends kAttach / kRedirect / kProceed instead of its proof. Nothing is delivered,
    // nobody is blamed, the socket closes.
    open(&b_, &sink_b_, kUidB, config(kKey1));
    const TcpControl forged[] = {TcpControl::kRedirect, TcpControl::kProceed, TcpControl::kAttach};
    for (TcpControl kind : forged) {
        SCOPED_TRACE(static_cast<int>(kind));
        int fd = raw_connect(*b_);
        ASSERT_GE(fd, 0);
        uint8_t nonce[kNonceSize] = {4, 5, 6};
        uint8_t hello[kHelloSize];
        encode_hello(hello, kUidA, nonce);
        send_all(fd, frame(kTcpControlAm, hello, sizeof(hello)));
        const uint8_t body = static_cast<uint8_t>(kind);
        send_all(fd, frame(kTcpControlAm, &body, 1));
        const uint8_t data[] = {1, 2, 3, 4};
        send_all(fd, frame(1, data, sizeof(data)));
        EXPECT_TRUE(progress_until({b_.get()}, [&] { return closed(fd); }));
        close(fd);
        EXPECT_TRUE(sink_b_.msgs.empty());
        EXPECT_TRUE(sink_b_.failures.empty());
        EXPECT_EQ(b_->open_connections(), 0u);
    }
}

TEST_F(TcpSetup, SettingAKeyClosesConnectionsNotAuthenticatedWithIt) {
    open(&a_, &sink_a_, kUidA, config());
    open(&b_, &sink_b_, kUidB, config());
    auto ep = connect(a_.get(), kUidB, b_->address());
    const uint8_t x = 1;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    b_->set_auth_key(key_of(kKey1));
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return !sink_a_.failures.empty(); }));
    EXPECT_EQ(b_->open_connections(), 0u);
    // With the key on both sides, a new connection works.
    a_->set_auth_key(key_of(kKey1));
    auto ep2 = connect(a_.get(), kUidB, b_->address());
    ASSERT_EQ(ep2->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 2; }));
    // The same key again changes nothing.
    b_->set_auth_key(key_of(kKey1));
    EXPECT_EQ(b_->open_connections(), 1u);
}

}  // namespace
}  // namespace swy::tl::tcp
