// The tcp transport's connection set-up seen from the public API (issue #12): swy_ep_create
// never waits for a peer whose addresses hang, and workers with SWY_AUTH_KEY talk only to
// workers holding the same key. Two workers in this process, over loopback (SWY_TLS=tcp,self).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/address.h"
#include "protocols/wire.h"
#include "tcp_test_util.h"
#include "test_context.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kKey1 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const char* const kKey2 = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";

swy_context_h tcp_context(const swy::test::Settings& extra = {}) {
    swy::test::Settings all{{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}};
    all.insert(all.end(), extra.begin(), extra.end());
    return swy::test::make_context(all);
}

std::vector<uint8_t> address_of(swy_worker_h w) {
    void* a = nullptr;
    size_t n = 0;
    EXPECT_EQ(swy_worker_get_address(w, &a, &n), SWY_OK);
    std::vector<uint8_t> out(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
    swy_worker_release_address(w, a);
    return out;
}

swy_ep_h make_ep(swy_worker_h from, const std::vector<uint8_t>& address,
                 swy_ep_error_cb_t cb = nullptr, void* arg = nullptr) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = address.data();
    p.remote_address_length = address.size();
    p.err_cb = cb;
    p.err_arg = arg;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from, &p, &ep), SWY_OK);
    return ep;
}

bool progress_until(std::initializer_list<swy_worker_h> ws, const std::function<bool()>& done,
                    int seconds = 10) {
    const auto deadline = Clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
        if (Clock::now() > deadline) return false;
        for (swy_worker_h w : ws)
            swy_worker_progress(w);
    }
    return true;
}

/// Status of a request made by a non-blocking call (immediately finished: its status).
struct Op {
    swy_status_t rc = SWY_OK;
    swy_request_h req = nullptr;
    swy_status_t status() const { return req == nullptr ? rc : swy_request_test(req); }
    ~Op() {
        if (req != nullptr) swy_request_free(req);
    }
};

void close_ep(swy_worker_h w, swy_ep_h ep) {
    swy_request_h r = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &r) == SWY_INPROGRESS) {
        swy_request_wait(w, r);
        swy_request_free(r);
    }
}

struct Errors {
    int calls = 0;
    swy_status_t status = SWY_OK;
};
void on_error(void* arg, swy_ep_h, swy_status_t status) {
    auto* e = static_cast<Errors*>(arg);
    ++e->calls;
    e->status = status;
}

TEST(TcpWorker, BlackholedPeerBlocksNeitherEpCreateNorOtherEndpoints) {
    // Long enough that the live exchange below finishes first even on a loaded machine or
    // under a sanitizer: what is checked is the order of events, not a speed.
    swy_context_h ctx = tcp_context({{"TCP_CONNECT_TIMEOUT", "3s"}});
    ASSERT_NE(ctx, nullptr);
    swy_worker_h a = nullptr, b = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &a), SWY_OK);
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &b), SWY_OK);

    // A peer whose 32 published addresses never answer.
    test::Blackholes holes(kMaxTcpAddresses);
    ASSERT_EQ(holes.entries().size(), kMaxTcpAddresses);
    core::WorkerAddress fake;
    std::string why;
    const std::vector<uint8_t> b_address = address_of(b);
    ASSERT_EQ(core::decode_address(b_address.data(), b_address.size(), &fake, &why), Status::kOk);
    fake.worker_uid ^= 0x5A5A;
    for (auto& s : fake.sections) {
        if (s.transport == tl::tcp::kAddressSection) s.bytes = holes.section();
    }
    const std::vector<uint8_t> hole_address = core::encode_address(fake);

    Errors errors;
    const auto t0 = Clock::now();
    swy_ep_h dead = make_ep(a, hole_address, &on_error, &errors);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2)) << "swy_ep_create waited";
    ASSERT_NE(dead, nullptr);
    // A rendezvous-size send waits for the peer (an eager one would complete locally).
    std::vector<uint8_t> msg(1u << 20, 0x77);
    Op to_dead;
    to_dead.rc = swy_tag_send_nb(dead, msg.data(), msg.size(), 1, nullptr, &to_dead.req);
    EXPECT_EQ(to_dead.rc, SWY_INPROGRESS);

    // Meanwhile the same worker talks to a live peer.
    swy_ep_h live = make_ep(a, b_address);
    for (int i = 0; i < 10; ++i) {
        std::vector<uint8_t> out = test::pattern(100 + 1000 * i, i), in(out.size() + 8, 0xEE);
        Op recv, send;
        recv.rc = swy_tag_recv_nb(b, in.data(), in.size(), 7, ~0ull, nullptr, &recv.req);
        send.rc = swy_tag_send_nb(live, out.data(), out.size(), 7, nullptr, &send.req);
        ASSERT_TRUE(progress_until({a, b}, [&] {
            return recv.status() != SWY_INPROGRESS && send.status() != SWY_INPROGRESS;
        }));
        ASSERT_EQ(recv.status(), SWY_OK);
        ASSERT_EQ(std::vector<uint8_t>(in.begin(), in.begin() + out.size()), out);
    }
    EXPECT_EQ(errors.calls, 0) << "failed before its deadline, or the live peer waited for it";

    // Then the blackholed endpoint fails within the deadline, once.
    ASSERT_TRUE(progress_until(
        {a, b}, [&] { return errors.calls != 0; }, 10));
    const auto elapsed = Clock::now() - t0;
    EXPECT_GE(elapsed, std::chrono::milliseconds(2900)) << "failed before its deadline";
    EXPECT_LT(elapsed, std::chrono::seconds(3 + 3)) << "not failed at its deadline";
    EXPECT_EQ(errors.status, SWY_ERR_TIMED_OUT);
    EXPECT_EQ(to_dead.status(), SWY_ERR_TIMED_OUT);
    for (int i = 0; i < 1000; ++i)
        swy_worker_progress(a);
    EXPECT_EQ(errors.calls, 1);

    swy_request_free(std::exchange(to_dead.req, nullptr));  // before its worker goes
    close_ep(a, dead);
    close_ep(a, live);
    swy_worker_destroy(a);
    swy_worker_destroy(b);
    swy_context_destroy(ctx);
}

/// Two workers, each in its own context with its own SWY_AUTH_KEY (null: none).
struct KeyedPair {
    KeyedPair(const char* key_a, const char* key_b) {
        swy::test::Settings ea, eb;
        if (key_a != nullptr) ea.push_back({"AUTH_KEY", key_a});
        if (key_b != nullptr) eb.push_back({"AUTH_KEY", key_b});
        ctx_a = tcp_context(ea);
        ctx_b = tcp_context(eb);
        EXPECT_EQ(swy_worker_create(ctx_a, nullptr, &a), SWY_OK);
        EXPECT_EQ(swy_worker_create(ctx_b, nullptr, &b), SWY_OK);
    }
    ~KeyedPair() {
        if (a != nullptr) swy_worker_destroy(a);
        if (b != nullptr) swy_worker_destroy(b);
        swy_context_destroy(ctx_a);
        swy_context_destroy(ctx_b);
    }
    swy_context_h ctx_a = nullptr, ctx_b = nullptr;
    swy_worker_h a = nullptr, b = nullptr;
};

TEST(TcpWorker, WorkersWithTheSameKeyExchangeEagerAndRendezvousMessages) {
    KeyedPair p(kKey1, kKey1);
    ASSERT_NE(p.b, nullptr);
    swy_ep_h ep = make_ep(p.a, address_of(p.b));
    const size_t sizes[] = {0, 1, 200, 8192, 70000, 1u << 20, 5u << 20};
    uint64_t i = 0;
    for (size_t n : sizes) {
        SCOPED_TRACE(n);
        std::vector<uint8_t> out = test::pattern(n, static_cast<uint32_t>(i));
        std::vector<uint8_t> in(n + 16, 0xEE);
        Op recv, send;
        recv.rc = swy_tag_recv_nb(p.b, in.data(), in.size(), i, ~0ull, nullptr, &recv.req);
        send.rc = swy_tag_send_nb(ep, out.data(), out.size(), i, nullptr, &send.req);
        ASSERT_TRUE(progress_until({p.a, p.b}, [&] {
            return recv.status() != SWY_INPROGRESS && send.status() != SWY_INPROGRESS;
        }));
        ASSERT_EQ(send.status(), SWY_OK);
        ASSERT_EQ(recv.status(), SWY_OK);
        ASSERT_EQ(std::vector<uint8_t>(in.begin(), in.begin() + n), out);
        ASSERT_EQ(std::vector<uint8_t>(in.begin() + n, in.end()), std::vector<uint8_t>(16, 0xEE));
        ++i;
    }
    close_ep(p.a, ep);
}

TEST(TcpWorker, DifferentKeysFailTheEndpointAndDeliverNothing) {
    const char* keys[][2] = {{kKey1, kKey2}, {kKey1, nullptr}, {nullptr, kKey1}};
    for (auto& k : keys) {
        SCOPED_TRACE(std::string(k[0] ? "key" : "none") + "/" + (k[1] ? "key" : "none"));
        KeyedPair p(k[0], k[1]);
        ASSERT_NE(p.b, nullptr);
        Errors errors;
        swy_ep_h ep = make_ep(p.a, address_of(p.b), &on_error, &errors);
        std::vector<uint8_t> in(64);
        Op recv, send;
        recv.rc = swy_tag_recv_nb(p.b, in.data(), in.size(), 0, 0, nullptr, &recv.req);  // any
        // A small send completes once the lane took a copy (the local completion of every
        // eager send); a rendezvous send waits for the peer, so it must fail.
        send.rc = swy_tag_send_nb(ep, "secret", 6, 3, nullptr, &send.req);
        std::vector<uint8_t> big(1u << 20, 0x33);
        Op large;
        large.rc = swy_tag_send_nb(ep, big.data(), big.size(), 4, nullptr, &large.req);
        ASSERT_TRUE(progress_until({p.a, p.b}, [&] { return errors.calls != 0; }));
        for (int n = 0; n < 20000; ++n) {
            swy_worker_progress(p.a);
            swy_worker_progress(p.b);
        }
        EXPECT_EQ(errors.calls, 1);
        EXPECT_NE(errors.status, SWY_OK);
        EXPECT_LT(large.status(), 0);
        EXPECT_EQ(recv.status(), SWY_INPROGRESS) << "a message from an unauthenticated peer";
        swy_request_cancel(p.b, recv.req);
        progress_until({p.b}, [&] { return recv.status() != SWY_INPROGRESS; });
        close_ep(p.a, ep);
    }
}

TEST(TcpWorker, RawPeerWithoutTheProofNeverReachesAReceive) {
    // The same bytes (a hello and one eager message) are delivered by a worker without a key,
    // which shows that they would match the receive, and never by a keyed one.
    for (bool keyed : {false, true}) {
        SCOPED_TRACE(keyed);
        KeyedPair p(nullptr, keyed ? kKey1 : nullptr);
        ASSERT_NE(p.b, nullptr);
        core::WorkerAddress wa;
        std::string why;
        const std::vector<uint8_t> addr = address_of(p.b);
        ASSERT_EQ(core::decode_address(addr.data(), addr.size(), &wa, &why), Status::kOk);
        std::vector<TcpAddressEntry> entries;
        const core::AddressSection* sec = wa.find(tl::tcp::kAddressSection);
        ASSERT_NE(sec, nullptr);
        ASSERT_TRUE(decode_tcp_address(sec->bytes.data(), sec->bytes.size(), &entries));
        int fd = -1;
        for (const TcpAddressEntry& e : entries) {
            if (e.family != 4) continue;
            fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in sin{};
            sin.sin_family = AF_INET;
            sin.sin_port = htons(e.port);
            std::memcpy(&sin.sin_addr, e.ip, 4);
            if (::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0) break;
            close(fd);
            fd = -1;
        }
        ASSERT_GE(fd, 0);
        std::vector<uint8_t> in(64);
        Op recv;
        recv.rc = swy_tag_recv_nb(p.b, in.data(), in.size(), 0, 0, nullptr, &recv.req);
        std::vector<uint8_t> bytes;
        const auto add_frame = [&](AmId id, const std::vector<uint8_t>& body) {
            const size_t at = bytes.size();
            bytes.resize(at + kFrameHeaderSize + body.size());
            encode_frame_header(bytes.data() + at, id, static_cast<uint32_t>(body.size()));
            std::memcpy(bytes.data() + at + kFrameHeaderSize, body.data(), body.size());
        };
        std::vector<uint8_t> hello(kHelloSize);
        const uint8_t nonce[kNonceSize] = {4, 5, 6};
        encode_hello(hello.data(), 0x1234, nonce);
        add_frame(kTcpControlAm, hello);
        add_frame(proto::kAmEagerOnly, std::vector<uint8_t>(8 + 5, 0x41));
        ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
        if (!keyed) {
            EXPECT_TRUE(progress_until({p.b}, [&] { return recv.status() != SWY_INPROGRESS; }));
        } else {
            bool closed = false;
            EXPECT_TRUE(progress_until({p.b}, [&] {
                uint8_t buf[256];
                ssize_t n;
                while ((n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {}
                closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
                return closed;
            })) << "the keyed worker must close the connection";
            for (int n = 0; n < 20000; ++n)
                swy_worker_progress(p.b);
            EXPECT_EQ(recv.status(), SWY_INPROGRESS) << "delivered without a proof";
            swy_request_cancel(p.b, recv.req);
            progress_until({p.b}, [&] { return recv.status() != SWY_INPROGRESS; });
        }
        close(fd);
    }
}

TEST(TcpWorker, AnInvalidAuthKeyFailsContextCreation) {
    // Refused when the context is created (issue #18), before any worker could try it.
    for (const char* bad : {"xyz", "0011", "abc"}) {
        SCOPED_TRACE(bad);
        swy_config_h cfg = nullptr;
        ASSERT_EQ(swy_config_read(&cfg), SWY_OK);
        for (const auto& [name, value] :
             swy::test::Settings{{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}, {"AUTH_KEY", bad}}) {
            ASSERT_EQ(swy_config_set(cfg, name.c_str(), value.c_str()), SWY_OK);
        }
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        swy_context_h ctx = nullptr;
        EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_ERR_INVALID_PARAM);
        EXPECT_EQ(ctx, nullptr);
        swy_config_release(cfg);
    }
}

}  // namespace
}  // namespace swy::tl::tcp
