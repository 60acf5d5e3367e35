// Connection establishment through sockaddr (swy_listener_*, SWY_EP_FLAG_SOCKADDR,
// SWY_EP_FLAG_CONN_REQUEST), across forked processes: payloads verified byte for byte at sizes
// from empty to rendezvous, sends posted before the wire-up completes, one server with three
// clients, refusal and rejection, hostile handshake bytes, simultaneous connects, IPv6.
#include <cstring>
#include <string>
#include <vector>

#include "listener_util.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

/// Client: create the endpoint and post every size at once, before any progress, so they all
/// wait for the wire-up; then check they all complete, and that the lane is @p transport.
void client_sends(Node& n, swy_ep_h ep, int rank, const std::string& transport) {
    ICHECK_MSG(transport_of(ep).empty(), "the endpoint is wired before any progress");
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Send> sends;
    for (size_t i = 0; i < kSizes.size(); ++i) {
        bufs.emplace_back(kSizes[i]);
        fill_pattern(bufs.back().data(), kSizes[i], pattern_seed(kSizes[i], rank, i));
    }
    for (size_t i = 0; i < kSizes.size(); ++i) {
        sends.push_back(
            post_send(ep, bufs[i].data(), kSizes[i], kDataTag | (swy_tag_t(rank) << 16) | i));
        ICHECK_MSG(!sends.back().done, "send %zu completed before the wire-up", i);
    }
    for (size_t i = 0; i < sends.size(); ++i) {
        swy_status_t st = finish_send(n.worker(), sends[i]);
        ICHECK_MSG(st == SWY_OK, "send of %zu bytes: %s", kSizes[i], swy_status_string(st));
    }
    ICHECK_MSG(transport_of(ep) == transport, "wired over '%s', expected '%s'",
               transport_of(ep).c_str(), transport.c_str());
    char table[4096];
    ICHECK_OK(swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, table, sizeof(table)));
    ICHECK_MSG(std::strstr(table, "rndv") != nullptr, "no rendezvous range in:\n%s", table);
}

void server_receives(Node& n, int rank) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
        std::vector<unsigned char> buf(kSizes[i] + kGuardBytes, kGuardByte);
        Recv r =
            post_recv(n.worker(), buf.data(), kSizes[i], kDataTag | (swy_tag_t(rank) << 16) | i);
        ICHECK_OK(finish_recv(n.worker(), r));
        ICHECK(r.info.length == kSizes[i]);
        ICHECK_PATTERN(buf.data(), kSizes[i], pattern_seed(kSizes[i], rank, i),
                       "from rank %d, size %zu", rank, kSizes[i]);
        ICHECK(guard_intact(buf.data() + kSizes[i]));
    }
}

void send_replies(Node& n, swy_ep_h ep, int rank) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
        std::vector<unsigned char> buf(kSizes[i]);
        fill_pattern(buf.data(), kSizes[i], pattern_seed(kSizes[i], 100 + rank, i));
        send_blocking(n.worker(), ep, buf.data(), kSizes[i], kReplyTag | i);
    }
}

void receive_replies(Node& n, int rank) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
        std::vector<unsigned char> buf(kSizes[i] + kGuardBytes, kGuardByte);
        Recv r = post_recv(n.worker(), buf.data(), kSizes[i], kReplyTag | i);
        ICHECK_OK(finish_recv(n.worker(), r));
        ICHECK_PATTERN(buf.data(), kSizes[i], pattern_seed(kSizes[i], 100 + rank, i),
                       "reply to rank %d, size %zu", rank, kSizes[i]);
        ICHECK(guard_intact(buf.data() + kSizes[i]));
    }
}

/// One server (rank 0) and size-1 clients; every pair exchanges every size both ways.
void client_server(World& w, Family family, const NodeOptions& opts, const std::string& transport) {
    Node n(w, opts);
    if (w.rank() == 0) {
        Server s;
        publish_port(w, kPortSlot, s.listen(n.worker(), family));
        const size_t clients = static_cast<size_t>(w.size() - 1);
        s.wait_for_endpoints(clients);
        ICHECK(s.offered == static_cast<int>(clients));
        for (size_t a = 0; a < clients; ++a)
            for (size_t b = a + 1; b < clients; ++b)
                ICHECK(s.uids[a] != s.uids[b]);
        for (int r = 1; r < w.size(); ++r)
            server_receives(n, r);
        // Which endpoint reaches which rank: tell each its index, learn its rank back.
        std::vector<swy_ep_h> by_rank(w.size(), nullptr);
        for (size_t i = 0; i < clients; ++i) {
            uint64_t index = i;
            send_blocking(n.worker(), s.eps[i], &index, sizeof(index), kWhoTag);
        }
        for (size_t i = 0; i < clients; ++i) {
            uint64_t msg[2] = {0, 0};
            Recv r = post_recv(n.worker(), msg, sizeof(msg), kIamTag);
            ICHECK_OK(finish_recv(n.worker(), r));
            ICHECK(msg[0] >= 1 && msg[0] < (uint64_t)w.size() && msg[1] < clients);
            ICHECK_MSG(by_rank[msg[0]] == nullptr, "two endpoints reach rank %d", (int)msg[0]);
            by_rank[msg[0]] = s.eps[msg[1]];
        }
        for (int r = 1; r < w.size(); ++r)
            send_replies(n, by_rank[r], r);
        w.barrier(n.worker());
        for (swy_ep_h ep : s.eps)
            close_ep(n.worker(), ep);
        swy_listener_destroy(s.listener);
    } else {
        SockAddr a = loopback(family, wait_port(w, kPortSlot));
        ErrorCount errors;
        swy_ep_h ep = connect_sockaddr(n.worker(), a, &errors);
        client_sends(n, ep, w.rank(), transport);
        uint64_t index = ~0ull;
        Recv r = post_recv(n.worker(), &index, sizeof(index), kWhoTag);
        ICHECK_OK(finish_recv(n.worker(), r));
        uint64_t msg[2] = {(uint64_t)w.rank(), index};
        send_blocking(n.worker(), ep, msg, sizeof(msg), kIamTag);
        receive_replies(n, w.rank());
        w.barrier(n.worker());
        ICHECK_MSG(errors.calls == 0, "error callback: %s", swy_status_string(errors.last));
        close_ep(n.worker(), ep);
    }
    w.barrier(n.worker());
}

NodeOptions tls(const char* list) {
    NodeOptions o;
    o.config = {{"TLS", list}};
    return o;
}

TEST(Listener, TwoProcessesOverIpv4WireShmAndCarryEverySize) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { client_server(w, Family::kV4, tls("shm"), "shm"); }));
}

TEST(Listener, TwoProcessesWireTcpWhenOnlyTcpIsEnabled) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { client_server(w, Family::kV4, tls("tcp"), "tcp"); }));
}

TEST(Listener, OneServerThreeClients) {
    EXPECT_TRUE(run_ranks(4, [](World& w) { client_server(w, Family::kV4, tls("shm"), "shm"); }));
}

TEST(Listener, TwoProcessesOverIpv6Loopback) {
    if (!ipv6_loopback_available()) GTEST_SKIP() << "::1 is not available on this host";
    EXPECT_TRUE(run_ranks(2, [](World& w) { client_server(w, Family::kV6, tls("shm"), "shm"); }));
}

TEST(Listener, FourProcessesOverIpv6Loopback) {
    if (!ipv6_loopback_available()) GTEST_SKIP() << "::1 is not available on this host";
    EXPECT_TRUE(run_ranks(4, [](World& w) { client_server(w, Family::kV6, tls("tcp"), "tcp"); }));
}

TEST(Listener, ConnectionRefusedFailsQueuedSendsAndReportsOnce) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        // A bound socket that does not listen: its port refuses, and nobody else can take it.
        int holder = socket(AF_INET, SOCK_STREAM, 0);
        SockAddr a = loopback(Family::kV4, 0);
        ICHECK(bind(holder, a.get(), (socklen_t)a.length) == 0);
        socklen_t len = sizeof(a.ss);
        ICHECK(getsockname(holder, reinterpret_cast<sockaddr*>(&a.ss), &len) == 0);
        ErrorCount errors;
        swy_ep_h ep = connect_sockaddr(n.worker(), a, &errors);
        std::vector<unsigned char> buf(100000, 7);
        std::vector<Send> sends;
        for (size_t size : {size_t{0}, size_t{64}, buf.size()})
            sends.push_back(post_send(ep, buf.data(), size, 5));
        for (Send& s : sends) {
            ICHECK(!s.done);
            ICHECK_STATUS(finish_send(n.worker(), s, 10.0), SWY_ERR_UNREACHABLE);
        }
        for (int i = 0; i < 100; ++i)
            swy_worker_progress(n.worker());
        ICHECK_MSG(errors.calls == 1, "error callback ran %d times", errors.calls);
        ICHECK_STATUS(errors.last, SWY_ERR_UNREACHABLE);
        swy_request_h req = nullptr;
        ICHECK_STATUS(swy_tag_send_nb(ep, buf.data(), 8, 5, nullptr, &req), SWY_ERR_UNREACHABLE);
        swy_ep_attr_t attr{};
        attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        ICHECK_OK(swy_ep_query(ep, &attr));
        ICHECK(attr.connected == 0);
        close_ep(n.worker(), ep);
        close(holder);
    }));
}

TEST(Listener, RejectedRequestFailsTheClientEndpoint) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        if (w.rank() == 0) {
            Server s;
            s.reject = true;
            publish_port(w, kPortSlot, s.listen(n.worker(), Family::kV4));
            w.wait_scratch_at_least(kDoneSlot, 1, n.worker());
            ICHECK(s.offered == 1 && s.eps.empty());
            swy_listener_destroy(s.listener);
        } else {
            ErrorCount errors;
            swy_ep_h ep = connect_sockaddr(n.worker(),
                                           loopback(Family::kV4, wait_port(w, kPortSlot)), &errors);
            uint64_t v = 42;
            Send s = post_send(ep, &v, sizeof(v), 9);
            ICHECK_STATUS(finish_send(n.worker(), s), SWY_ERR_CONNECTION_RESET);
            ICHECK(errors.calls == 1 && errors.last == SWY_ERR_CONNECTION_RESET);
            close_ep(n.worker(), ep);
            w.scratch(kDoneSlot).store(1);
        }
    }));
}

TEST(Listener, MalformedHandshakesCloseThatConnectionAndTheListenerKeepsAccepting) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        if (w.rank() == 0) {
            Server s;
            publish_port(w, kPortSlot, s.listen(n.worker(), Family::kV4));
            s.wait_for_endpoints(1, 60.0);  // the good client comes after the hostile ones
            ICHECK_MSG(s.offered == 1, "%d requests offered", s.offered);
            server_receives(n, 1);
            w.barrier(n.worker());
            close_ep(n.worker(), s.eps[0]);
            swy_listener_destroy(s.listener);
        } else {
            const uint16_t port = wait_port(w, kPortSlot);
            const std::vector<unsigned char> good = own_address(n.worker());
            std::vector<unsigned char> corrupt = good;
            corrupt[0] ^= 0xFF;  // the address's own magic
            const uint32_t kMagic = kConnMagic;
            const std::vector<unsigned char> nonce(16, 7);
            // Refused at the first frame.
            const std::vector<std::vector<unsigned char>> hostile = {
                {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n',
                 '\r', '\n'},
                frame(kMagic, 99, 1, 16, nonce),                             // unknown version
                frame(kMagic, 1, 1, (uint32_t)good.size(), good),            // a version-1 hello
                frame(kMagic, 2, 7, 16, nonce),                              // unknown type
                frame(kMagic, 2, 1, 0x7FFFFFFF, {}),                         // absurd length
                frame(kMagic, 2, 1, 15, std::vector<unsigned char>(15, 7)),  // short nonce
                frame(kMagic, 2, 3, 0, {}),                        // verdict from a client
                frame(kMagic, 2, 5, (uint32_t)good.size(), good),  // address before hello
            };
            for (const auto& bytes : hostile) {
                int fd = raw_connect(port);
                ICHECK(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == (ssize_t)bytes.size());
                read_until_closed(fd, 15.0);
                close(fd);
            }
            // Refused at the second frame, after a valid hello and the server's challenge.
            const std::vector<std::vector<unsigned char>> hostile_second = {
                frame(kMagic, 2, 5, (uint32_t)corrupt.size(), corrupt),  // bad worker address
                frame(kMagic, 2, 5, (uint32_t)good.size() - 3,
                      std::vector<unsigned char>(good.begin(), good.end() - 3)),  // cut address
                frame(kMagic, 2, 1, 16, nonce),                                   // a second hello
            };
            for (const auto& bytes : hostile_second) {
                int fd = raw_connect(port);
                raw_hello_and_challenge(fd);
                ICHECK(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == (ssize_t)bytes.size());
                read_until_closed(fd, 15.0);
                close(fd);
            }
            // Truncated: half a valid hello, then EOF; a hello and half an address, then EOF.
            std::vector<unsigned char> hello = raw_hello();
            int fd = raw_connect(port);
            ICHECK(send(fd, hello.data(), hello.size() / 2, MSG_NOSIGNAL) > 0);
            shutdown(fd, SHUT_WR);
            read_until_closed(fd, 15.0);
            close(fd);
            std::vector<unsigned char> address = frame(kMagic, 2, 5, (uint32_t)good.size(), good);
            fd = raw_connect(port);
            raw_hello_and_challenge(fd);
            ICHECK(send(fd, address.data(), address.size() / 2, MSG_NOSIGNAL) > 0);
            shutdown(fd, SHUT_WR);
            read_until_closed(fd, 15.0);
            close(fd);
            // A real client is still accepted and served.
            swy_ep_h ep = connect_sockaddr(n.worker(), loopback(Family::kV4, port));
            client_sends(n, ep, 1, "shm");
            w.barrier(n.worker());
            close_ep(n.worker(), ep);
        }
        w.barrier(n.worker());
    }));
}

/// Both ranks listen and connect to each other at the same moment: each must end up with
/// exactly the endpoint it created, and no on_connect may run.
TEST(Listener, SimultaneousConnectLeavesOneEndpointPerSide) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        Server s;
        const int me = w.rank(), peer = 1 - me;
        publish_port(w, kPortSlot + 2 * me, s.listen(n.worker(), Family::kV4));
        const uint16_t port = wait_port(w, kPortSlot + 2 * peer);
        w.barrier(n.worker());
        ErrorCount errors;
        swy_ep_h ep = connect_sockaddr(n.worker(), loopback(Family::kV4, port), &errors);
        std::vector<unsigned char> out(70000), in(70000 + kGuardBytes, kGuardByte);
        fill_pattern(out.data(), out.size(), pattern_seed(out.size(), me, 0));
        Send snd = post_send(ep, out.data(), out.size(), kDataTag | me);
        Recv rcv = post_recv(n.worker(), in.data(), out.size(), kDataTag | peer);
        ICHECK_OK(finish_send(n.worker(), snd));
        ICHECK_OK(finish_recv(n.worker(), rcv));
        ICHECK_PATTERN(in.data(), out.size(), pattern_seed(out.size(), peer, 0), "from %d", peer);
        ICHECK(guard_intact(in.data() + out.size()));
        w.barrier(n.worker());
        for (int i = 0; i < 1000; ++i)
            swy_worker_progress(n.worker());
        ICHECK_MSG(s.offered == 0, "on_connect ran %d times", s.offered);
        ICHECK(errors.calls == 0);
        w.barrier(n.worker());
        close_ep(n.worker(), ep);
        swy_listener_destroy(s.listener);
        w.barrier(n.worker());
    }));
}

/// Rank 1 already has an endpoint to rank 0 (from its address blob) when rank 0 connects to
/// rank 1's listener: rank 1's existing endpoint serves, no second one is offered.
TEST(Listener, RequestFromAWorkerWithAnEndpointIsNotOffered) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.publish();
        Server s;
        swy_ep_h ep = nullptr;
        if (w.rank() == 1) {
            publish_port(w, kPort2Slot, s.listen(n.worker(), Family::kV4));
            ep = n.connect(0);
            n.forget(0);
            w.barrier(n.worker());
        } else {
            w.barrier(n.worker());
            ep = connect_sockaddr(n.worker(), loopback(Family::kV4, wait_port(w, kPort2Slot)));
        }
        const int peer = 1 - w.rank();
        uint64_t out = 0x1234 + w.rank(), in = 0;
        Send snd = post_send(ep, &out, sizeof(out), kDataTag | w.rank());
        Recv rcv = post_recv(n.worker(), &in, sizeof(in), kDataTag | peer);
        ICHECK_OK(finish_send(n.worker(), snd));
        ICHECK_OK(finish_recv(n.worker(), rcv));
        ICHECK(in == 0x1234u + peer);
        w.barrier(n.worker());
        ICHECK_MSG(s.offered == 0, "on_connect ran %d times", s.offered);
        close_ep(n.worker(), ep);
        if (s.listener != nullptr) swy_listener_destroy(s.listener);
        w.barrier(n.worker());
    }));
}

/// A server that sleeps in swy_worker_wait() must wake up for the connection, and a client
/// that sleeps must wake up for the accept.
TEST(Listener, BlockingWaitWakesUpForTheHandshake) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        auto start = Clock::now();
        if (w.rank() == 0) {
            Server s;
            publish_port(w, kPortSlot, s.listen(n.worker(), Family::kV4));
            while (s.eps.empty()) {
                swy_status_t st = swy_worker_wait(n.worker(), 20000);
                ICHECK(st == SWY_OK || st == SWY_ERR_TIMED_OUT);
                while (swy_worker_progress(n.worker()) != 0) {}
                swy_worker_progress(n.worker());
                exit_if_aborted();
            }
            uint64_t v = 0;
            Recv r = post_recv(n.worker(), &v, sizeof(v), 77);
            ICHECK_OK(finish_recv(n.worker(), r));
            ICHECK(v == 0xABCD);
            close_ep(n.worker(), s.eps[0]);
            swy_listener_destroy(s.listener);
        } else {
            swy_ep_h ep =
                connect_sockaddr(n.worker(), loopback(Family::kV4, wait_port(w, kPortSlot)));
            uint64_t v = 0xABCD;
            Send snd = post_send(ep, &v, sizeof(v), 77);
            while (swy_request_test(snd.req) == SWY_INPROGRESS) {
                swy_status_t st = swy_worker_wait(n.worker(), 20000);
                ICHECK(st == SWY_OK || st == SWY_ERR_TIMED_OUT);
                swy_worker_progress(n.worker());
                swy_worker_progress(n.worker());
                exit_if_aborted();
            }
            ICHECK_OK(finish_send(n.worker(), snd));
            close_ep(n.worker(), ep);
        }
        double took = std::chrono::duration<double>(Clock::now() - start).count();
        ICHECK_MSG(took < 10.0, "the handshake took %.1f s: a blocking wait did not wake up", took);
        w.barrier(n.worker());
    }));
}

TEST(Listener, BadArgumentsAreRefusedWithoutSideEffects) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        SockAddr v4 = loopback(Family::kV4, 0);
        swy_listener_params_t lp{};
        lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
        swy_listener_h l = nullptr;
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        lp.sockaddr = v4.get();
        lp.sockaddr_length = v4.length;
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);  // no cb
        lp.on_connect = &Server::on_connect;
        lp.sockaddr_length = 4;
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        sockaddr_storage unix_sa{};
        unix_sa.ss_family = AF_UNIX;
        lp.sockaddr = reinterpret_cast<sockaddr*>(&unix_sa);
        lp.sockaddr_length = sizeof(unix_sa);
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        // A port in use.
        Server s;
        SockAddr taken = loopback(Family::kV4, s.listen(n.worker(), Family::kV4));
        lp.sockaddr = taken.get();
        lp.sockaddr_length = taken.length;
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_IO);

        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR |
                       SWY_EP_PARAM_FIELD_CONN_REQUEST;
        swy_ep_h ep = nullptr;
        p.flags = SWY_EP_FLAG_SOCKADDR | SWY_EP_FLAG_CONN_REQUEST;
        p.sockaddr = taken.get();
        p.sockaddr_length = taken.length;
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        p.flags = SWY_EP_FLAG_SOCKADDR;
        p.sockaddr_length = 3;
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        p.flags = SWY_EP_FLAG_CONN_REQUEST;  // no request
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        int junk = 0;
        p.conn_request = reinterpret_cast<swy_conn_request_h>(&junk);  // not a request
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(swy_listener_reject(s.listener, reinterpret_cast<swy_conn_request_h>(&junk)),
                      SWY_ERR_INVALID_PARAM);
        swy_listener_destroy(s.listener);
    }));
}

}  // namespace
}  // namespace swy_itest
