// Specification of the C++ Listener wrapper and Endpoint::connect/accept (switchyard.hpp):
// two workers of one process, one listening on 127.0.0.1 and one connecting to it.
#include <switchyard/switchyard.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

namespace {

static_assert(!std::is_copy_constructible_v<swy::Listener>);
static_assert(std::is_nothrow_move_constructible_v<swy::Listener>);
static_assert(std::is_nothrow_move_assignable_v<swy::Listener>);

sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

TEST(CppListener, AcceptsAConnectionAndCarriesAMessageBothWays) {
    swy::Context ctx({{"TLS", "shm,self"}});
    swy::Worker server_worker(ctx);
    swy::Worker client_worker(ctx);
    std::optional<swy::Endpoint> accepted;
    sockaddr_in any = loopback(0);
    swy::Listener listener(server_worker, reinterpret_cast<sockaddr*>(&any), sizeof(any),
                           [&](swy_conn_request_h req) {
                               accepted.emplace(swy::Endpoint::accept(server_worker, req));
                           });
    swy::Listener moved = std::move(listener);  // the callback survives a move
    ASSERT_NE(moved.port(), 0);
    EXPECT_EQ(listener.get(), nullptr);

    sockaddr_in to = loopback(moved.port());
    swy::Endpoint client =
        swy::Endpoint::connect(client_worker, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    std::vector<int> out(1000), in(1000, 0);
    std::iota(out.begin(), out.end(), 0);
    swy::Request send = client.send(out.data(), out.size() * sizeof(int), 11);
    swy::Request recv = server_worker.recv(in.data(), in.size() * sizeof(int), 11);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((!recv.done() || !send.done()) && std::chrono::steady_clock::now() < deadline) {
        server_worker.progress();
        client_worker.progress();
    }
    ASSERT_EQ(recv.test(), SWY_OK);
    ASSERT_EQ(send.test(), SWY_OK);
    EXPECT_EQ(in, out);
    ASSERT_TRUE(accepted.has_value());

    uint64_t reply = 0, value = 0x5151;
    swy::Request back = accepted->send(&value, sizeof(value), 12);
    swy::Request got = client_worker.recv(&reply, sizeof(reply), 12);
    while ((!got.done() || !back.done()) && std::chrono::steady_clock::now() < deadline) {
        server_worker.progress();
        client_worker.progress();
    }
    EXPECT_EQ(got.test(), SWY_OK);
    EXPECT_EQ(reply, value);
}

TEST(CppListener, BindingAPortInUseThrows) {
    swy::Context ctx({{"TLS", "self"}});
    swy::Worker worker(ctx);
    sockaddr_in any = loopback(0);
    swy::Listener first(worker, reinterpret_cast<sockaddr*>(&any), sizeof(any),
                        [](swy_conn_request_h) {});
    sockaddr_in same = loopback(first.port());
    try {
        swy::Listener second(worker, reinterpret_cast<sockaddr*>(&same), sizeof(same),
                             [](swy_conn_request_h) {});
        FAIL() << "a second listener bound the same port";
    } catch (const swy::StatusError& e) {
        EXPECT_EQ(e.status(), SWY_ERR_IO);
    }
}

}  // namespace

namespace {

// A worker that connects to its own listener already "has an endpoint" to itself (the one it
// is connecting): the request is accepted without on_connect and the endpoint wires to self.
TEST(CppListener, ConnectingToOwnListenerWiresSelfWithoutOnConnect) {
    swy::Context ctx({{"TLS", "self,shm"}});
    swy::Worker worker(ctx);
    int offered = 0;
    sockaddr_in any = loopback(0);
    swy::Listener listener(worker, reinterpret_cast<sockaddr*>(&any), sizeof(any),
                           [&](swy_conn_request_h) { ++offered; });
    sockaddr_in to = loopback(listener.port());
    swy::Endpoint ep = swy::Endpoint::connect(worker, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    uint64_t out = 0x600D, in = 0;
    swy::Request send = ep.send(&out, sizeof(out), 3);
    swy::Request recv = worker.recv(&in, sizeof(in), 3);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((!recv.done() || !send.done()) && std::chrono::steady_clock::now() < deadline) {
        worker.progress();
    }
    ASSERT_EQ(recv.test(), SWY_OK);
    EXPECT_EQ(send.test(), SWY_OK);
    EXPECT_EQ(in, out);
    EXPECT_EQ(offered, 0);
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    ASSERT_EQ(ep.query(&attr), SWY_OK);
    EXPECT_STREQ(attr.transport, "self");
}

}  // namespace

namespace {

// The key variants: a listener with a key serves a client with the same key, refuses one with
// another (whose endpoint fails), and a key of a bad length throws.
TEST(CppListener, KeyedListenerServesTheSameKeyAndRefusesAnother) {
    swy::Context ctx({{"TLS", "shm,self"}});
    swy::Worker server_worker(ctx);
    swy::Worker client_worker(ctx);
    const std::vector<unsigned char> key(32, 0x4B), other(32, 0x4C);
    std::vector<swy::Endpoint> accepted;
    sockaddr_in any = loopback(0);
    swy::Listener listener(
        server_worker, reinterpret_cast<sockaddr*>(&any), sizeof(any),
        [&](swy_conn_request_h req) {
            accepted.push_back(swy::Endpoint::accept(server_worker, req));
        },
        key.data(), key.size());
    sockaddr_in to = loopback(listener.port());
    const auto* sa = reinterpret_cast<sockaddr*>(&to);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);

    swy::Endpoint wrong =
        swy::Endpoint::connect(client_worker, sa, sizeof(to), other.data(), other.size());
    uint64_t value = 7;
    swy::Request refused = wrong.send(&value, sizeof(value), 4);
    while (!refused.done() && std::chrono::steady_clock::now() < deadline) {
        server_worker.progress();
        client_worker.progress();
    }
    EXPECT_EQ(refused.test(), SWY_ERR_CONNECTION_RESET);
    EXPECT_TRUE(accepted.empty());

    swy::Endpoint right =
        swy::Endpoint::connect(client_worker, sa, sizeof(to), key.data(), key.size());
    uint64_t in = 0, out = 0x4B4B;
    swy::Request send = right.send(&out, sizeof(out), 5);
    swy::Request recv = server_worker.recv(&in, sizeof(in), 5);
    while ((!recv.done() || !send.done()) && std::chrono::steady_clock::now() < deadline) {
        server_worker.progress();
        client_worker.progress();
    }
    ASSERT_EQ(recv.test(), SWY_OK);
    EXPECT_EQ(send.test(), SWY_OK);
    EXPECT_EQ(in, out);
    EXPECT_EQ(accepted.size(), 1u);

    const std::vector<unsigned char> short_key(15, 1);
    try {
        swy::Listener bad(
            server_worker, reinterpret_cast<sockaddr*>(&any), sizeof(any),
            [](swy_conn_request_h) {}, short_key.data(), short_key.size());
        FAIL() << "a 15-byte key was taken";
    } catch (const swy::StatusError& e) {
        EXPECT_EQ(e.status(), SWY_ERR_INVALID_PARAM);
    }
    EXPECT_THROW(
        swy::Endpoint::connect(client_worker, sa, sizeof(to), short_key.data(), short_key.size()),
        swy::StatusError);
}

}  // namespace
