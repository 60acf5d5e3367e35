// Specification of the tcp transport: two interfaces in one process talking over loopback
// (127.0.0.1 / ::1 only), with a fake sink standing in for the worker.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/cost_figures.h"
#include "tcp_test_util.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

using test::pattern;
using test::progress_until;
using test::raw_connect;

struct FakeSink final : AmSink {
    struct Msg {
        AmId id;
        AmSource src;
        std::vector<uint8_t> data;
    };
    std::vector<Msg> msgs;
    std::vector<std::pair<uint64_t, Status>> failures;
    std::function<void(const Msg&)> hook;

    void on_am(AmId id, AmSource src, const uint8_t* data, size_t length) override {
        msgs.push_back({id, src, std::vector<uint8_t>(data, data + length)});
        if (hook) hook(msgs.back());
    }
    /// (peer key, status): the key names the connection, never just a claimed uid.
    void on_remote_failure(uint16_t, uint64_t key, Status why) override {
        failures.emplace_back(key, why);
    }
};

constexpr uint64_t kUidA = 0xA000000000000001ull;
constexpr uint64_t kUidB = 0xB000000000000002ull;

TcpConfig loopback_config(size_t sndbuf_limit = 4u << 20) {
    TcpConfig c;
    c.devices = {"lo"};
    c.sndbuf_limit = sndbuf_limit;
    c.keepalive_ns = 2'000'000'000;
    c.costs = tcp_lane_costs(swy::common::CostFigures{});
    return c;
}

class TcpTransport : public ::testing::Test {
protected:
    void SetUp() override { open_pair(loopback_config(), loopback_config()); }

    void open_pair(const TcpConfig& ca, const TcpConfig& cb) {
        a_.reset();
        b_.reset();
        std::string why;
        if (TcpInterface::open(ca, kUidA, 3, &sink_a_, &a_, &why) != Status::kOk) {
            GTEST_SKIP() << "no loopback interface: " << why;
        }
        ASSERT_EQ(TcpInterface::open(cb, kUidB, 5, &sink_b_, &b_, &why), Status::kOk) << why;
    }

    std::unique_ptr<Endpoint> connect_a_to_b() {
        std::unique_ptr<Endpoint> ep;
        std::string why;
        std::vector<uint8_t> addr = b_->address();
        EXPECT_EQ(a_->connect(kUidB, addr.data(), addr.size(), true, &ep, &why), Status::kOk)
            << why;
        return ep;
    }

    /// connect_a_to_b(), then progress both until the connection is up and the handshake
    /// done (one message went through; it is dropped from B's sink).
    std::unique_ptr<Endpoint> connect_a_to_b_ready() {
        auto ep = connect_a_to_b();
        if (!ep) return ep;
        const uint8_t x = 0;
        EXPECT_EQ(ep->am_send(9, &x, 1, nullptr, 0), Status::kOk);
        EXPECT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
        sink_b_.msgs.clear();
        return ep;
    }

    /// A plain socket connected to B's IPv4 loopback address.
    int raw_connect_to_b() { return raw_connect(*b_); }

    /// Progresses B until the raw socket sees the connection closed (EOF or reset).
    bool closed_by_b(int fd) {
        return progress_until({b_.get()}, [&] {
            uint8_t buf[256];
            ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        });
    }

    static void send_all(int fd, const std::vector<uint8_t>& bytes) {
        ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    static std::vector<uint8_t> frame(AmId id, const std::vector<uint8_t>& body) {
        // Sized once: GCC 12 at -O3 warns falsely (-Warray-bounds) on insert() into 8 bytes.
        std::vector<uint8_t> out(kFrameHeaderSize + body.size());
        encode_frame_header(out.data(), id, static_cast<uint32_t>(body.size()));
        if (!body.empty()) std::memcpy(out.data() + kFrameHeaderSize, body.data(), body.size());
        return out;
    }
    static std::vector<uint8_t> hello_frame(uint64_t uid) {
        std::vector<uint8_t> body(kHelloSize);
        const uint8_t nonce[kNonceSize] = {7};
        encode_hello(body.data(), uid, nonce);
        return frame(kTcpControlAm, body);
    }

    FakeSink sink_a_, sink_b_;
    std::unique_ptr<TcpInterface> a_, b_;
};

TEST_F(TcpTransport, ListensOnLoopbackAndPublishesADecodableAddress) {
    ASSERT_FALSE(b_->listen_addresses().empty());
    for (const TcpAddressEntry& e : b_->listen_addresses()) {
        EXPECT_TRUE(is_loopback(e));
        EXPECT_NE(e.port, 0);
    }
    std::vector<uint8_t> addr = b_->address();
    std::vector<TcpAddressEntry> decoded;
    ASSERT_TRUE(decode_tcp_address(addr.data(), addr.size(), &decoded));
    EXPECT_EQ(decoded.size(), b_->listen_addresses().size());
    EXPECT_STREQ(b_->name(), "tcp");
    EXPECT_GE(b_->event_fd(), 0);
}

TEST_F(TcpTransport, OpenRejectsUnknownDevicesAndAZeroLimit) {
    std::unique_ptr<TcpInterface> i;
    std::string why;
    TcpConfig c = loopback_config();
    c.devices = {"no-such-device0"};
    EXPECT_EQ(TcpInterface::open(c, 9, 0, &sink_a_, &i, &why), Status::kNotFound);
    EXPECT_NE(why.find("no-such-device0"), std::string::npos) << why;
    c = loopback_config(0);
    EXPECT_EQ(TcpInterface::open(c, 9, 0, &sink_a_, &i, &why), Status::kInvalidParam);
}

TEST_F(TcpTransport, LaneAttributes) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    const LaneAttr& la = ep->attr();
    EXPECT_STREQ(la.transport, "tcp");
    EXPECT_FALSE(la.pio);
    EXPECT_EQ(la.max_message, kMaxFrameBody);
    EXPECT_EQ(la.credits, (4u << 20) / kMaxFrameBody);
    EXPECT_FALSE(la.credits_shared);
    EXPECT_TRUE(la.rndv);
    EXPECT_EQ(la.caps & (swy::tl::cap::kGetZcopy | swy::tl::cap::kPutZcopy), 0u);
    EXPECT_FALSE(la.zcopy_reason.empty());
    // The costs the interface was opened with (tcp's own figures), on every lane.
    const swy::common::CostFigures figures;
    EXPECT_DOUBLE_EQ(la.costs.latency_s, figures.get("tcp_latency_s"));
    EXPECT_DOUBLE_EQ(la.costs.message_s, figures.get("tcp_overhead_s"));
    EXPECT_DOUBLE_EQ(la.costs.am_bcopy.per_byte_s, 1.0 / figures.get("tcp_bw_Bps"));
    EXPECT_EQ(ep->remote_uid(), kUidB);
}

TEST_F(TcpTransport, DeliversEverySizeByteExact) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    const std::vector<size_t> sizes = {0, 1, 8, 255 * 1024 + 17, kMaxFrameBody};
    for (size_t i = 0; i < sizes.size(); ++i) {
        // Header and payload split differently each time; the receiver sees them joined.
        std::vector<uint8_t> body = pattern(sizes[i], static_cast<uint32_t>(i));
        const size_t hdr_len = std::min<size_t>(body.size(), i * 3);
        Status s = ep->am_send(static_cast<AmId>(10 + i), body.data(), hdr_len,
                               body.data() + hdr_len, body.size() - hdr_len);
        ASSERT_EQ(s, Status::kOk) << sizes[i];
    }
    ASSERT_TRUE(
        progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == sizes.size(); }));
    for (size_t i = 0; i < sizes.size(); ++i) {
        const auto& m = sink_b_.msgs[i];
        EXPECT_EQ(m.id, 10 + i);
        EXPECT_EQ(m.src.iface, 5);
        EXPECT_EQ(m.data, pattern(sizes[i], static_cast<uint32_t>(i))) << sizes[i];
        EXPECT_EQ(b_->sender_uid(m.src.sender), kUidA);
    }
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

TEST_F(TcpTransport, RefusesAMessageAboveTheMaximum) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    std::vector<uint8_t> big(kMaxFrameBody + 1);
    EXPECT_EQ(ep->am_send(1, big.data(), 1, big.data() + 1, kMaxFrameBody), Status::kInvalidParam);
}

TEST_F(TcpTransport, KeepsTheOrderOfTenThousandMessages) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    constexpr uint32_t kCount = 10000;
    uint32_t sent = 0;
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        while (sent < kCount) {
            std::vector<uint8_t> payload = pattern(sent % 3000, sent);
            Status s = ep->am_send(1, &sent, sizeof(sent), payload.data(), payload.size());
            if (s == Status::kNoResource) break;
            EXPECT_EQ(s, Status::kOk);
            ++sent;
        }
        return sink_b_.msgs.size() == kCount;
    }));
    for (uint32_t i = 0; i < kCount; ++i) {
        const auto& m = sink_b_.msgs[i];
        uint32_t seq = 0;
        ASSERT_GE(m.data.size(), sizeof(seq));
        std::memcpy(&seq, m.data.data(), sizeof(seq));
        ASSERT_EQ(seq, i);
        ASSERT_EQ(std::vector<uint8_t>(m.data.begin() + 4, m.data.end()), pattern(i % 3000, i));
    }
}

TEST_F(TcpTransport, BackPressureReturnsNoResourceThenDeliversEverythingInOrder) {
    open_pair(loopback_config(64 * 1024), loopback_config());
    auto ep = connect_a_to_b_ready();
    ASSERT_TRUE(ep);
    constexpr size_t kSize = 32 * 1024;
    uint32_t accepted = 0;
    Status last = Status::kOk;
    // B never progresses: the kernel buffers fill, then our queue, then sends are refused.
    for (int i = 0; i < 100000 && last == Status::kOk; ++i) {
        std::vector<uint8_t> payload = pattern(kSize, accepted);
        last = ep->am_send(2, &accepted, sizeof(accepted), payload.data(), payload.size());
        if (last == Status::kOk) ++accepted;
    }
    ASSERT_EQ(last, Status::kNoResource);
    EXPECT_GT(accepted, 2u);
    std::vector<uint8_t> retry = pattern(kSize, accepted);
    EXPECT_EQ(ep->am_send(2, &accepted, sizeof(accepted), retry.data(), retry.size()),
              Status::kNoResource)
        << "still full while nobody reads";
    // Now B reads; everything accepted arrives, intact and in order, and sends work again.
    ASSERT_TRUE(
        progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == accepted; }));
    uint32_t more = accepted;
    std::vector<uint8_t> payload = pattern(kSize, more);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return ep->am_send(2, &more, sizeof(more), payload.data(), payload.size()) == Status::kOk;
    }));
    ASSERT_TRUE(
        progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == accepted + 1u; }));
    for (uint32_t i = 0; i <= accepted; ++i) {
        const auto& m = sink_b_.msgs[i];
        uint32_t seq = 0;
        std::memcpy(&seq, m.data.data(), sizeof(seq));
        ASSERT_EQ(seq, i);
        ASSERT_EQ(std::vector<uint8_t>(m.data.begin() + 4, m.data.end()), pattern(kSize, i));
    }
    EXPECT_TRUE(sink_a_.failures.empty());
}

TEST_F(TcpTransport, PackedSendsAndAFailedPackSendsNothing) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    struct Arg {
        std::vector<uint8_t> src;
    } arg{pattern(100000, 9)};
    auto pack = [](void* p, uint8_t* dst, size_t n) {
        auto* a = static_cast<Arg*>(p);
        std::memcpy(dst, a->src.data(), n);
        return Status::kOk;
    };
    auto failing = [](void*, uint8_t*, size_t) { return Status::kIoError; };
    uint64_t tag = 77;
    EXPECT_EQ(ep->am_send_packed(4, &tag, sizeof(tag), failing, &arg, 5000), Status::kIoError);
    EXPECT_EQ(ep->am_send_packed(4, &tag, sizeof(tag), pack, &arg, arg.src.size()), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    for (int i = 0; i < 100; ++i)
        b_->progress();
    ASSERT_EQ(sink_b_.msgs.size(), 1u);
    std::vector<uint8_t> expected(8 + arg.src.size());
    std::memcpy(expected.data(), &tag, 8);
    std::memcpy(expected.data() + 8, arg.src.data(), arg.src.size());
    EXPECT_EQ(sink_b_.msgs[0].data, expected);
}

TEST_F(TcpTransport, RepliesTravelBackOnTheSameConnection) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    const uint8_t ping[] = {1, 2, 3};
    ASSERT_EQ(ep->am_send(6, ping, sizeof(ping), nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    const AmSource from = sink_b_.msgs[0].src;
    Endpoint* reply = b_->reply_endpoint(from.sender);
    ASSERT_NE(reply, nullptr);
    EXPECT_EQ(reply->remote_uid(), kUidA);
    EXPECT_EQ(b_->reply_endpoint(from.sender), reply) << "one reply lane per connection";
    const uint8_t pong[] = {9, 8};
    ASSERT_EQ(reply->am_send(7, pong, sizeof(pong), nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == 1; }));
    EXPECT_EQ(sink_a_.msgs[0].id, 7);
    EXPECT_EQ(sink_a_.msgs[0].data, std::vector<uint8_t>(pong, pong + 2));
    EXPECT_EQ(sink_a_.msgs[0].src.iface, 3);
    EXPECT_EQ(a_->sender_uid(sink_a_.msgs[0].src.sender), kUidB);
    // A's reply lane for that sender writes on the same socket again.
    Endpoint* back = a_->reply_endpoint(sink_a_.msgs[0].src.sender);
    ASSERT_NE(back, nullptr);
    ASSERT_EQ(back->am_send(8, pong, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 2; }));
    EXPECT_EQ(sink_b_.msgs[1].src.sender, from.sender);
    EXPECT_EQ(a_->open_connections(), 1u);
    EXPECT_EQ(b_->open_connections(), 1u);
    EXPECT_EQ(b_->reply_endpoint(999), nullptr);
    EXPECT_EQ(b_->sender_uid(999), 0u);
}

// Every frame says how much of the other direction its sender had read (FrameHeader::read):
// a reply to a message completes that message's delivery wait as it arrives, without asking
// the kernel (a system call per message on the ping-pong path before).
TEST_F(TcpTransport, AReplyCompletesDeliveryWithoutAskingTheKernel) {
    auto ep = connect_a_to_b_ready();
    ASSERT_TRUE(ep);
    Endpoint* reply = nullptr;
    for (uint32_t i = 0; i < 40; ++i) {
        SCOPED_TRACE(i);
        const std::vector<uint8_t> ping = pattern(1 + i * 1499, i);  // 1 B .. ~57 KiB
        ASSERT_EQ(ep->am_send(1, nullptr, 0, ping.data(), ping.size()), Status::kOk);
        const uint64_t mark = ep->accepted_bytes();
        ASSERT_TRUE(
            progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == i + 1; }));
        EXPECT_EQ(sink_b_.msgs[i].data, ping);
        if (reply == nullptr) reply = b_->reply_endpoint(sink_b_.msgs[i].src.sender);
        ASSERT_NE(reply, nullptr);
        const std::vector<uint8_t> pong = pattern(8, 1000 + i);
        ASSERT_EQ(reply->am_send(2, nullptr, 0, pong.data(), pong.size()), Status::kOk);
        ASSERT_TRUE(
            progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == i + 1; }));
        EXPECT_EQ(sink_a_.msgs[i].data, pong);
        EXPECT_EQ(ep->acknowledged_bytes(mark), mark) << "the pong says the ping was read";
    }
    EXPECT_EQ(a_->kernel_ack_looks(), 0u);
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

// A peer that claims to have read more than was ever written to it is lying (or broken):
// the connection fails as malformed rather than complete sends that were not delivered.
TEST_F(TcpTransport, AClaimToHaveReadMoreThanWasWrittenIsMalformed) {
    int fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    send_all(fd, hello_frame(0x7778));
    send_all(fd, frame(1, {4, 5}));  // delivered
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    // B's hello-ack is handshake (not counted) and B sent no data: any read > 0 is a lie.
    std::vector<uint8_t> lie(kFrameHeaderSize + 1, 6);
    encode_frame_header(lie.data(), 1, 1, 1);
    send_all(fd, lie);
    EXPECT_TRUE(closed_by_b(fd));
    close(fd);
    ASSERT_EQ(sink_b_.msgs.size(), 1u) << "the lying frame is not delivered";
    ASSERT_EQ(sink_b_.failures.size(), 1u);
    EXPECT_EQ(sink_b_.failures[0].second, Status::kMalformed);
}

TEST_F(TcpTransport, RepliesFromInsideTheCallbackWork) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    sink_b_.hook = [&](const FakeSink::Msg& m) {
        Endpoint* r = b_->reply_endpoint(m.src.sender);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->am_send(m.id, m.data.data(), m.data.size(), nullptr, 0), Status::kOk);
    };
    for (uint32_t i = 0; i < 100; ++i)
        ASSERT_EQ(ep->am_send(1, &i, 4, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == 100; }));
    for (uint32_t i = 0; i < 100; ++i) {
        uint32_t v = 0;
        std::memcpy(&v, sink_a_.msgs[i].data.data(), 4);
        EXPECT_EQ(v, i);
    }
}

TEST_F(TcpTransport, AcceptorExitIsReportedOnceAsEndpointClosedAndSendsFail) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    uint8_t x = 1;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    b_.reset();  // B's worker goes away in order: a goodbye, then the close
    ASSERT_TRUE(progress_until({a_.get()}, [&] { return !sink_a_.failures.empty(); }));
    for (int i = 0; i < 1000; ++i)
        a_->progress();
    ASSERT_EQ(sink_a_.failures.size(), 1u);
    EXPECT_EQ(sink_a_.failures[0].first, ep->peer_key());
    EXPECT_EQ(sink_a_.failures[0].second, Status::kEndpointClosed) << "an exit, not a crash";
    EXPECT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
    for (int i = 0; i < 100; ++i)
        a_->progress();
    EXPECT_EQ(sink_a_.failures.size(), 1u) << "a failed send reports nothing new";
    EXPECT_EQ(a_->open_connections(), 0u);
}

TEST_F(TcpTransport, AcknowledgedBytesCatchUpWithAcceptedOnlyOnceThePeerTakesThem) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    EXPECT_TRUE(ep->attr().confirms_delivery);
    // B does not progress: its kernel takes what fits its receive buffer, then the window
    // closes; everything else waits with A. Accepted runs ahead of acknowledged.
    const std::vector<uint8_t> chunk = pattern(kMaxFrameBody - 16, 7);
    int sent = 0;
    for (int i = 0; i < 64; ++i) {
        Status s = ep->am_send(1, nullptr, 0, chunk.data(), chunk.size());
        if (s != Status::kOk) break;
        ++sent;
        a_->progress();
    }
    ASSERT_GT(sent, 0);
    for (int i = 0; i < 200; ++i)
        a_->progress();
    const uint64_t accepted = ep->accepted_bytes();
    EXPECT_GE(accepted, uint64_t(sent) * chunk.size());
    EXPECT_LT(ep->acknowledged_bytes(accepted), accepted)
        << "acknowledged before the peer could take it";
    // Once B reads, everything is acknowledged.
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return sink_b_.msgs.size() == static_cast<size_t>(sent) &&
               ep->acknowledged_bytes(accepted) == ep->accepted_bytes();
    }));
}

// A worker waiting for acknowledgements may block: armed, the event fd becomes readable by
// itself when the next look is due (a timer), and once nothing is awaited it stays quiet
// (no timer wake-ups for an idle interface).
TEST_F(TcpTransport, WaitingForAcknowledgementWakesABlockedWaitAndOnlyThen) {
    auto ep = connect_a_to_b_ready();
    ASSERT_TRUE(ep);
    const std::vector<uint8_t> msg = pattern(64, 3);
    ASSERT_EQ(ep->am_send(1, nullptr, 0, msg.data(), msg.size()), Status::kOk);
    const uint64_t mark = ep->accepted_bytes();
    // B never progresses here: its kernel acknowledges by itself, and A learns it only by
    // asking (no reply will come). Each round: ask, arm, block on the event fd.
    pollfd p{a_->event_fd(), POLLIN, 0};
    int wakeups = 0;
    while (ep->acknowledged_bytes(mark) < mark) {
        a_->progress();
        if (ep->acknowledged_bytes(mark) >= mark) break;
        // False: a look due at arm learnt something; the next round sees it.
        if (!a_->arm()) {
            a_->disarm();
            continue;
        }
        ASSERT_EQ(poll(&p, 1, 5000), 1) << "waiting for an acknowledgement, the fd never woke";
        a_->disarm();
        a_->progress();
        ASSERT_LT(++wakeups, 200) << "a wake-up per look, backing off: not a spin";
    }
    // Nothing awaited any more: armed, the fd stays quiet.
    for (int i = 0; i < 4; ++i)
        a_->progress();
    ASSERT_TRUE(a_->arm());
    EXPECT_EQ(poll(&p, 1, 200), 0) << "a timer kept waking an interface nobody waits on";
    a_->disarm();
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    EXPECT_EQ(sink_b_.msgs[0].data, msg);
}

TEST_F(TcpTransport, ConnectorExitClosesTheAcceptorsSideQuietly) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    uint8_t x = 1;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    const uint16_t sender = sink_b_.msgs[0].src.sender;
    const uint64_t key = b_->sender_key(sender);
    EXPECT_NE(key, 0u);
    a_.reset();  // the endpoint outlives its interface: it must stay harmless
    EXPECT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kConnectionReset);
    ep.reset();
    // The interface said goodbye on its way out: as after a disconnect, the acceptor (which
    // holds no endpoint on the connection) closes it without reporting a failure. A crash
    // (no goodbye) is a reset: TruncatedFrameThenCloseIsAResetWithNothingDelivered.
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return b_->open_connections() == 0; }));
    for (int i = 0; i < 1000; ++i)
        b_->progress();
    EXPECT_TRUE(sink_b_.failures.empty());
    EXPECT_NE(key, 0u);
    EXPECT_EQ(b_->reply_endpoint(sender), nullptr);
}

TEST_F(TcpTransport, DisconnectClosesInOrderWithoutReportingAFailure) {
    auto ep = connect_a_to_b();
    ASSERT_TRUE(ep);
    for (uint32_t i = 0; i < 50; ++i)
        ASSERT_EQ(ep->am_send(1, &i, 4, nullptr, 0), Status::kOk);
    ep->disconnect();
    EXPECT_EQ(ep->am_send(1, "x", 1, nullptr, 0), Status::kConnectionReset);
    ep.reset();
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return a_->open_connections() == 0 && b_->open_connections() == 0;
    }));
    EXPECT_EQ(sink_b_.msgs.size(), 50u) << "everything sent before the disconnect arrives";
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

TEST_F(TcpTransport, ConnectingToTheWrongWorkerIsReported) {
    std::unique_ptr<Endpoint> ep;
    std::string why;
    std::vector<uint8_t> addr = b_->address();
    constexpr uint64_t kSomeoneElse = 0x1234;
    ASSERT_EQ(a_->connect(kSomeoneElse, addr.data(), addr.size(), false, &ep, &why), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return !sink_a_.failures.empty(); }));
    EXPECT_EQ(sink_a_.failures[0].first, ep->peer_key());
    EXPECT_EQ(sink_a_.failures[0].second, Status::kUnreachable);
}

TEST_F(TcpTransport, ConnectRejectsBadSectionsAndUnreachablePeers) {
    std::unique_ptr<Endpoint> ep;
    std::string why;
    const uint8_t junk[] = {9, 9, 9};
    EXPECT_EQ(a_->connect(kUidB, junk, sizeof(junk), false, &ep, &why), Status::kMalformed);
    EXPECT_EQ(a_->connect(kUidB, nullptr, 0, false, &ep, &why), Status::kMalformed);
    // A port on loopback that nobody listens on: refused at once.
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    getsockname(s, reinterpret_cast<sockaddr*>(&sin), &len);
    close(s);
    TcpAddressEntry e;
    e.family = 4;
    e.port = ntohs(sin.sin_port);
    e.ip[0] = 127;
    e.ip[3] = 1;
    std::vector<uint8_t> dead = encode_tcp_address({e});
    // Refused: connect() itself returns at once, and the failure comes from progress.
    Status s2 = a_->connect(kUidB, dead.data(), dead.size(), false, &ep, &why);
    if (s2 == Status::kUnreachable) {
        EXPECT_NE(why.find("127.0.0.1"), std::string::npos) << why;  // refused synchronously
        return;
    }
    ASSERT_EQ(s2, Status::kOk) << why;
    ASSERT_TRUE(progress_until({a_.get()}, [&] { return !sink_a_.failures.empty(); }));
    EXPECT_EQ(sink_a_.failures[0].first, ep->peer_key());
    EXPECT_EQ(sink_a_.failures[0].second, Status::kUnreachable);
    EXPECT_EQ(sink_a_.failures.size(), 1u);
    EXPECT_EQ(ep->am_send(1, "x", 1, nullptr, 0), Status::kConnectionReset);
}

TEST_F(TcpTransport, GarbageMagicClosesTheConnectionQuietly) {
    int fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    send_all(fd, {0xDE, 0xAD, 0xBE, 0xEF, 1, 0, 0, 0, 0xAA});
    EXPECT_TRUE(closed_by_b(fd));
    close(fd);
    EXPECT_TRUE(sink_b_.msgs.empty());
    EXPECT_TRUE(sink_b_.failures.empty()) << "nobody to report before a hello";
    EXPECT_EQ(b_->open_connections(), 0u);
}

TEST_F(TcpTransport, MessageBeforeHelloClosesTheConnection) {
    int fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    send_all(fd, frame(1, {1, 2, 3}));
    EXPECT_TRUE(closed_by_b(fd));
    close(fd);
    EXPECT_TRUE(sink_b_.msgs.empty());
}

TEST_F(TcpTransport, OversizedLengthIsReportedAsMalformed) {
    int fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    constexpr uint64_t kRaw = 0x7777;
    send_all(fd, hello_frame(kRaw));
    send_all(fd, frame(1, {4, 5}));  // a good message first: delivered
    std::vector<uint8_t> bad(kFrameHeaderSize);
    encode_frame_header(bad.data(), 1, kMaxFrameBody + 1);
    send_all(fd, bad);
    EXPECT_TRUE(closed_by_b(fd));
    close(fd);
    ASSERT_EQ(sink_b_.msgs.size(), 1u);
    EXPECT_EQ(sink_b_.msgs[0].data, (std::vector<uint8_t>{4, 5}));
    ASSERT_EQ(sink_b_.failures.size(), 1u);
    EXPECT_NE(sink_b_.failures[0].first, 0u) << "reported under the connection's key";
    EXPECT_EQ(sink_b_.failures[0].second, Status::kMalformed);
}

TEST_F(TcpTransport, BadVersionAndSecondHelloAreMalformed) {
    for (int variant = 0; variant < 2; ++variant) {
        SCOPED_TRACE(variant);
        sink_b_.failures.clear();
        int fd = raw_connect_to_b();
        ASSERT_GE(fd, 0);
        send_all(fd, hello_frame(0x99));
        if (variant == 0) {
            std::vector<uint8_t> f = frame(1, {1});
            f[2] = kFrameVersion + 1;
            send_all(fd, f);
        } else {
            send_all(fd, hello_frame(0x99));
        }
        EXPECT_TRUE(closed_by_b(fd));
        close(fd);
        ASSERT_EQ(sink_b_.failures.size(), 1u);
        EXPECT_EQ(sink_b_.failures[0].second, Status::kMalformed);
    }
}

TEST_F(TcpTransport, TruncatedFrameThenCloseIsAResetWithNothingDelivered) {
    int fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    send_all(fd, hello_frame(0x42));
    std::vector<uint8_t> f = frame(1, pattern(1000, 1));
    f.resize(500);  // header promises 1000 bytes; 492 come
    send_all(fd, f);
    // Let B read the partial frame before the close.
    for (int i = 0; i < 100; ++i)
        b_->progress();
    close(fd);
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return !sink_b_.failures.empty(); }));
    EXPECT_TRUE(sink_b_.msgs.empty());
    EXPECT_NE(sink_b_.failures[0].first, 0u);
    EXPECT_EQ(sink_b_.failures[0].second, Status::kConnectionReset);
    // And a header cut short by the close.
    fd = raw_connect_to_b();
    ASSERT_GE(fd, 0);
    send_all(fd, hello_frame(0x43));
    send_all(fd, std::vector<uint8_t>(f.begin(), f.begin() + 5));
    close(fd);
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return sink_b_.failures.size() == 2; }));
    EXPECT_NE(sink_b_.failures[1].first, 0u);
    EXPECT_NE(sink_b_.failures[1].first, sink_b_.failures[0].first) << "one key per connection";
    EXPECT_TRUE(sink_b_.msgs.empty());
}

TEST_F(TcpTransport, EventFdWakesOnTrafficAndArmReportsWaitingWork) {
    auto ep = connect_a_to_b_ready();
    ASSERT_TRUE(ep);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return b_->open_connections() == 1; }));
    for (int i = 0; i < 10; ++i)
        b_->progress();
    EXPECT_TRUE(b_->arm());
    pollfd pfd{b_->event_fd(), POLLIN, 0};
    EXPECT_EQ(poll(&pfd, 1, 0), 0) << "nothing pending";
    uint8_t x = 5;
    ASSERT_EQ(ep->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    EXPECT_EQ(poll(&pfd, 1, 5000), 1);
    b_->disarm();
    ASSERT_TRUE(progress_until({b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    EXPECT_TRUE(b_->arm());
}

TEST_F(TcpTransport, SimultaneousConnectsEndWithOneConnectionCarryingBoth) {
    auto ab = connect_a_to_b();
    std::unique_ptr<Endpoint> ba;
    std::string why;
    std::vector<uint8_t> addr = a_->address();
    ASSERT_EQ(b_->connect(kUidA, addr.data(), addr.size(), false, &ba, &why), Status::kOk) << why;
    uint8_t x = 1, y = 2;
    ASSERT_EQ(ab->am_send(1, &x, 1, nullptr, 0), Status::kOk);
    ASSERT_EQ(ba->am_send(1, &y, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return sink_a_.msgs.size() == 1 && sink_b_.msgs.size() == 1;
    }));
    EXPECT_EQ(sink_a_.msgs[0].data[0], 2);
    EXPECT_EQ(sink_b_.msgs[0].data[0], 1);
    // The connection of the lower uid (A) is kept; B's endpoint moved onto it.
    ASSERT_TRUE(
        progress_until({a_.get(), b_.get()},
                       [&] { return a_->open_connections() == 1 && b_->open_connections() == 1; }))
        << a_->open_connections() << " and " << b_->open_connections() << " connections";
    EXPECT_EQ(ab->peer_key(), a_->sender_key(sink_a_.msgs[0].src.sender));
    EXPECT_EQ(ba->peer_key(), b_->sender_key(sink_b_.msgs[0].src.sender));
    // Many more, both ways, in order.
    for (uint32_t i = 0; i < 200; ++i) {
        ASSERT_EQ(ab->am_send(2, &i, 4, nullptr, 0), Status::kOk);
        ASSERT_EQ(ba->am_send(2, &i, 4, nullptr, 0), Status::kOk);
    }
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return sink_a_.msgs.size() == 201 && sink_b_.msgs.size() == 201;
    }));
    for (uint32_t i = 0; i < 200; ++i) {
        uint32_t x = 0, y = 0;
        std::memcpy(&x, sink_a_.msgs[i + 1].data.data(), 4);
        std::memcpy(&y, sink_b_.msgs[i + 1].data.data(), 4);
        ASSERT_EQ(x, i);
        ASSERT_EQ(y, i);
    }
    // Each side leaves in turn; the connection closes after the second goodbye, quietly.
    ab->disconnect();
    ASSERT_EQ(ba->am_send(3, &y, 1, nullptr, 0), Status::kOk) << "B's endpoint outlives A's";
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == 202; }));
    ba->disconnect();
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return a_->open_connections() == 0 && b_->open_connections() == 0;
    }));
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

TEST_F(TcpTransport, AnEndpointToAWorkerThatConnectedFirstUsesItsConnection) {
    auto ab = connect_a_to_b_ready();
    ASSERT_TRUE(ab);
    std::unique_ptr<Endpoint> ba;
    std::string why;
    std::vector<uint8_t> addr = a_->address();
    ASSERT_EQ(b_->connect(kUidA, addr.data(), addr.size(), false, &ba, &why), Status::kOk) << why;
    EXPECT_EQ(b_->open_connections(), 1u) << "no second socket";
    const uint8_t z = 42;
    ASSERT_EQ(ba->am_send(4, &z, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_a_.msgs.size() == 1; }));
    EXPECT_EQ(sink_a_.msgs[0].data[0], 42);
    EXPECT_EQ(ab->peer_key(), a_->sender_key(sink_a_.msgs[0].src.sender));
    EXPECT_EQ(a_->open_connections(), 1u);
    ba->disconnect();
    ASSERT_EQ(ab->am_send(4, &z, 1, nullptr, 0), Status::kOk) << "A's endpoint outlives B's";
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] { return sink_b_.msgs.size() == 1; }));
    ab->disconnect();
    ASSERT_TRUE(progress_until({a_.get(), b_.get()}, [&] {
        return a_->open_connections() == 0 && b_->open_connections() == 0;
    }));
    EXPECT_TRUE(sink_a_.failures.empty());
    EXPECT_TRUE(sink_b_.failures.empty());
}

}  // namespace
}  // namespace swy::tl::tcp
