// The socket helper (common/socket.h) and the owned fd (common/unique_fd.h): IPv4 and IPv6
// connect/accept over loopback, deadlines, whole-buffer reads and writes, address parsing.
#include "common/socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

using namespace swy;
using namespace swy::common;
using namespace std::chrono_literals;

namespace {

bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

SocketDeadline in(std::chrono::milliseconds ms) { return SocketClock::now() + ms; }

/// A listener on @p at, a client connected to it and the accepted server side.
struct Pair {
    UniqueFd listener, client, server;
    SocketAddress bound, peer;
};

void connect_pair(const SocketAddress& at, Pair* p, bool dual_stack = false) {
    std::string why;
    ListenOptions opt;
    opt.dual_stack = dual_stack;
    ASSERT_EQ(listen_on(at, opt, &p->listener, &p->bound, &why), Status::kOk) << why;
    ASSERT_NE(p->bound.port(), 0) << "port 0 asks the kernel for one";
    SocketAddress to = p->bound;
    if (dual_stack) to = SocketAddress::loopback(4, p->bound.port());
    ASSERT_EQ(connect_with_deadline(to, in(2000ms), &p->client, &why), Status::kOk) << why;
    // The connection may still sit in the backlog for a moment after connect returned.
    Status s = Status::kInProgress;
    for (int i = 0; i < 200 && s == Status::kInProgress; ++i) {
        s = accept_one(p->listener.get(), &p->server, &p->peer, &why);
        if (s == Status::kInProgress) usleep(1000);
    }
    ASSERT_EQ(s, Status::kOk) << why;
}

void expect_round_trip(Pair& p) {
    std::vector<uint8_t> out(1 << 20);
    std::iota(out.begin(), out.end(), uint8_t{0});
    std::vector<uint8_t> back(out.size());
    std::string why;
    // 1 MiB does not fit in the socket buffers at once: write_all must wait for room while
    // the other side reads. Both are non-blocking, so interleave through a thread.
    std::thread reader([&] {
        std::string rwhy;
        EXPECT_EQ(read_all(p.server.get(), back.data(), back.size(), in(5000ms), &rwhy),
                  Status::kOk)
            << rwhy;
    });
    EXPECT_EQ(write_all(p.client.get(), out.data(), out.size(), in(5000ms), &why), Status::kOk)
        << why;
    reader.join();
    EXPECT_EQ(out, back);
}

}  // namespace

TEST(UniqueFd, ClosesOnDestructionAndResetButNotAfterRelease) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    {
        UniqueFd owned(fds[0]);
        EXPECT_TRUE(owned.valid());
        EXPECT_EQ(owned.get(), fds[0]);
    }
    EXPECT_FALSE(fd_open(fds[0])) << "destruction closes";

    UniqueFd w(fds[1]);
    const int raw = w.release();
    EXPECT_FALSE(w.valid());
    EXPECT_TRUE(fd_open(raw)) << "release gives it up without closing";
    w.reset(raw);
    w.reset();
    EXPECT_FALSE(fd_open(raw)) << "reset closes the old descriptor";
}

TEST(UniqueFd, MoveTransfersOwnershipOnce) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    UniqueFd a(fds[0]);
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the point of the test
    EXPECT_EQ(b.get(), fds[0]);
    UniqueFd c(fds[1]);
    c = std::move(b);  // closes fds[1], takes fds[0]
    EXPECT_FALSE(fd_open(fds[1]));
    EXPECT_EQ(c.get(), fds[0]);
    EXPECT_TRUE(fd_open(fds[0]));
}

TEST(Socket, Ipv4ConnectAcceptAndRoundTrip) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(4, 0), &p));
    EXPECT_EQ(p.bound.family(), 4);
    EXPECT_EQ(p.peer.family(), 4);
    EXPECT_EQ(p.peer.text().rfind("127.0.0.1:", 0), 0u) << p.peer.text();
    EXPECT_TRUE(fcntl(p.server.get(), F_GETFL) & O_NONBLOCK);
    EXPECT_TRUE(fcntl(p.server.get(), F_GETFD) & FD_CLOEXEC);
    expect_round_trip(p);
}

TEST(Socket, Ipv6ConnectAcceptAndRoundTrip) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(6, 0), &p));
    EXPECT_EQ(p.bound.family(), 6);
    EXPECT_EQ(p.peer.family(), 6);
    EXPECT_EQ(p.peer.text().rfind("[::1]:", 0), 0u) << p.peer.text();
    expect_round_trip(p);
}

TEST(Socket, DualStackListenerTakesIpv4Clients) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::any(6, 0), &p, true));
    expect_round_trip(p);
}

TEST(Socket, AcceptWithNothingPendingIsInProgress) {
    UniqueFd l;
    std::string why;
    ASSERT_EQ(listen_on(SocketAddress::loopback(4, 0), {}, &l, nullptr, &why), Status::kOk);
    UniqueFd fd;
    EXPECT_EQ(accept_one(l.get(), &fd, nullptr, &why), Status::kInProgress);
    EXPECT_FALSE(fd.valid());
}

TEST(Socket, ListenOnABusyPortNamesAddressAndErrno) {
    UniqueFd a, b;
    SocketAddress bound;
    std::string why;
    ASSERT_EQ(listen_on(SocketAddress::loopback(4, 0), {}, &a, &bound, &why), Status::kOk);
    EXPECT_EQ(listen_on(bound, {}, &b, nullptr, &why), Status::kIoError);
    EXPECT_NE(why.find(bound.text()), std::string::npos) << why;
    EXPECT_NE(why.find(std::strerror(EADDRINUSE)), std::string::npos) << why;
}

TEST(Socket, ConnectToAClosedPortIsUnreachableWithTheErrnoText) {
    for (int family : {4, 6}) {
        // Bind a port, then close it: nothing listens there any more.
        SocketAddress bound;
        {
            UniqueFd l;
            std::string why;
            ASSERT_EQ(listen_on(SocketAddress::loopback(family, 0), {}, &l, &bound, &why),
                      Status::kOk);
        }
        UniqueFd fd;
        std::string why;
        EXPECT_EQ(connect_with_deadline(bound, in(2000ms), &fd, &why), Status::kUnreachable);
        EXPECT_FALSE(fd.valid());
        EXPECT_NE(why.find(bound.text()), std::string::npos) << why;
        EXPECT_NE(why.find(std::strerror(ECONNREFUSED)), std::string::npos) << why;
    }
}

TEST(Socket, ReadAllStopsAtTheDeadline) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(4, 0), &p));
    ASSERT_EQ(::send(p.client.get(), "abc", 3, 0), 3);
    char buf[8];
    std::string why;
    const auto t0 = SocketClock::now();
    EXPECT_EQ(read_all(p.server.get(), buf, sizeof(buf), in(100ms), &why), Status::kTimedOut);
    const auto waited = SocketClock::now() - t0;
    EXPECT_GE(waited, 100ms);
    EXPECT_LT(waited, 2000ms);
    EXPECT_NE(why.find("3 of 8"), std::string::npos) << why;
}

TEST(Socket, WriteAllStopsAtTheDeadlineWhenThePeerDoesNotRead) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(6, 0), &p));
    std::vector<uint8_t> big(16 << 20);
    std::string why;
    const auto t0 = SocketClock::now();
    EXPECT_EQ(write_all(p.client.get(), big.data(), big.size(), in(100ms), &why),
              Status::kTimedOut);
    EXPECT_GE(SocketClock::now() - t0, 100ms);
    EXPECT_NE(why.find("before the deadline"), std::string::npos) << why;
}

TEST(Socket, ReadAllReportsEofWithTheCount) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(4, 0), &p));
    ASSERT_EQ(::send(p.client.get(), "ab", 2, 0), 2);
    p.client.reset();
    char buf[4];
    std::string why;
    EXPECT_EQ(read_all(p.server.get(), buf, sizeof(buf), in(2000ms), &why),
              Status::kEndpointClosed);
    EXPECT_NE(why.find("2 of 4"), std::string::npos) << why;
}

TEST(Socket, WriteAllToAClosedPeerIsAReset) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(SocketAddress::loopback(4, 0), &p));
    p.server.reset();
    std::vector<uint8_t> data(1 << 20);
    std::string why;
    Status s = Status::kOk;
    // The first write may still be taken by the kernel; the peer's reset fails a later one.
    for (int i = 0; i < 50 && s == Status::kOk; ++i) {
        s = write_all(p.client.get(), data.data(), data.size(), in(1000ms), &why);
    }
    EXPECT_EQ(s, Status::kConnectionReset) << why;
}

TEST(SocketAddress, ParsesIpv4Ipv6AndNames) {
    SocketAddress a;
    std::string why;
    ASSERT_EQ(resolve_host_port("10.1.2.3:80", &a, &why), Status::kOk) << why;
    EXPECT_EQ(a.family(), 4);
    EXPECT_EQ(a.port(), 80);
    EXPECT_EQ(a.text(), "10.1.2.3:80");
    ASSERT_EQ(resolve_host_port("[::1]:0", &a, &why), Status::kOk) << why;
    EXPECT_EQ(a.family(), 6);
    EXPECT_EQ(a.port(), 0);
    EXPECT_EQ(a.text(), "[::1]:0");
    ASSERT_EQ(resolve_host_port("[2001:db8::7]:65535", &a, &why), Status::kOk) << why;
    EXPECT_EQ(a.text(), "[2001:db8::7]:65535");
    ASSERT_EQ(resolve_host_port("localhost:5", &a, &why), Status::kOk) << why;
    EXPECT_NE(a.family(), 0);
    EXPECT_EQ(a.port(), 5);
}

TEST(SocketAddress, RejectsMalformedText) {
    SocketAddress a;
    std::string why;
    for (const char* bad : {"10.1.2.3", "::1:80", "[::1]80", "[::1:80", "host:", ":80",
                            "host:99999", "host:8x", "host:-1", ""}) {
        EXPECT_EQ(resolve_host_port(bad, &a, &why), Status::kInvalidParam) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
    EXPECT_EQ(resolve_host_port("no-such-host.invalid:1", &a, &why), Status::kNotFound);
}

TEST(SocketAddress, FromIpRoundTripsBothFamilies) {
    const uint8_t v4[4] = {192, 168, 0, 9};
    SocketAddress a = SocketAddress::from_ip(4, v4, 4242);
    EXPECT_EQ(a.text(), "192.168.0.9:4242");
    EXPECT_EQ(std::memcmp(a.ip(), v4, 4), 0);
    uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8};
    v6[15] = 1;
    a = SocketAddress::from_ip(6, v6, 1);
    EXPECT_EQ(a.text(), "[2001:db8::1]:1");
    EXPECT_EQ(std::memcmp(a.ip(), v6, 16), 0);
    EXPECT_TRUE(SocketAddress::from_ip(5, v6, 1).empty());
    EXPECT_EQ(SocketAddress{}.text(), "?");
}
