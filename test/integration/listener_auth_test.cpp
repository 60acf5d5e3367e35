// What the listener's handshake reveals, and its shared key (SWY_LISTENER_FLAG_AUTH_KEY,
// SWY_EP_FLAG_AUTH_KEY): an unauthenticated client learns nothing of the server (its worker
// address: pid, shared-memory fds, heap pointers, interface addresses) before the accept; a
// keyed listener serves only clients that prove its key, and a keyed client tells its address
// only to a server that proved the key first. Raw sockets stand in for hostile peers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "listener_util.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

std::vector<unsigned char> make_key(size_t length, unsigned char salt) {
    std::vector<unsigned char> k(length);
    for (size_t i = 0; i < length; ++i)
        k[i] = static_cast<unsigned char>(i * 31 + salt);
    return k;
}

/// Whether any @p window-byte run of @p needle occurs in @p hay.
bool contains_window(const std::vector<unsigned char>& hay,
                     const std::vector<unsigned char>& needle, size_t window = 8) {
    if (needle.size() < window || hay.size() < window) return false;
    for (size_t i = 0; i + window <= needle.size(); ++i) {
        for (size_t j = 0; j + window <= hay.size(); ++j) {
            if (std::memcmp(hay.data() + j, needle.data() + i, window) == 0) return true;
        }
    }
    return false;
}

bool contains_pid(const std::vector<unsigned char>& hay) {
    const uint32_t pid = static_cast<uint32_t>(getpid());
    unsigned char le[4];
    std::memcpy(le, &pid, 4);  // little-endian host, like the wire
    for (size_t j = 0; j + 4 <= hay.size(); ++j) {
        if (std::memcmp(hay.data() + j, le, 4) == 0) return true;
    }
    return false;
}

/// Read and keep everything until the peer closes, progressing @p worker meanwhile.
std::vector<unsigned char> read_all_until_closed(int fd, swy_worker_h worker,
                                                 double timeout_s = 15.0) {
    std::vector<unsigned char> all;
    auto deadline = deadline_in(timeout_s);
    unsigned char buf[4096];
    for (;;) {
        swy_worker_progress(worker);
        ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno == ECONNRESET)) return all;
        if (got > 0) all.insert(all.end(), buf, buf + got);
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "the peer kept the connection open");
    }
}

/// A listening socket in the test itself, standing in for a hostile server.
struct RawServer {
    int fd = -1;
    uint16_t port = 0;
    RawServer() {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        SockAddr a = loopback(Family::kV4, 0);
        ICHECK(bind(fd, a.get(), (socklen_t)a.length) == 0 && listen(fd, 4) == 0);
        socklen_t len = sizeof(a.ss);
        ICHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&a.ss), &len) == 0);
        port = ntohs(reinterpret_cast<sockaddr_in*>(&a.ss)->sin_port);
    }
    ~RawServer() { close(fd); }
    int accept_one(swy_worker_h worker) {
        auto deadline = deadline_in(15.0);
        for (;;) {
            swy_worker_progress(worker);
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 10) == 1) return accept(fd, nullptr, nullptr);
            ICHECK_MSG(Clock::now() < deadline, "the client never connected");
        }
    }
};

/// Sizes for the keyed exchange: empty, tiny, fragments and rendezvous.
const std::vector<size_t> kAuthSizes = {0, 1, 8, 4096, 65536, 1u << 20};

TEST(ListenerAuth, NothingTheServerSendsBeforeTheAcceptRevealsItsAddress) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        Server s;
        s.hold = true;
        const uint16_t port = s.listen(n.worker(), Family::kV4);
        const std::vector<unsigned char> addr = own_address(n.worker());
        ICHECK(addr.size() >= 16);
        int fd = raw_connect(port);
        // Hello → challenge; then a valid address (ours will do), so the request is offered.
        const std::vector<unsigned char> hello = raw_hello();
        ICHECK(send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) == (ssize_t)hello.size());
        std::vector<unsigned char> got = recv_exact(fd, kChallengeFrame, 15.0, n.worker());
        const std::vector<unsigned char> mine =
            frame(kConnMagic, kConnVersion, 5, (uint32_t)addr.size(), addr);
        ICHECK(send(fd, mine.data(), mine.size(), MSG_NOSIGNAL) == (ssize_t)mine.size());
        auto deadline = deadline_in(15.0);
        while (s.held.empty()) {
            swy_worker_progress(n.worker());
            ICHECK_MSG(Clock::now() < deadline, "the request was never offered");
        }
        // Offered, not answered: whatever the server sent until now is all a stranger gets.
        unsigned char buf[4096];
        for (int i = 0; i < 200; ++i) {
            swy_worker_progress(n.worker());
            ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (r > 0) got.insert(got.end(), buf, buf + r);
        }
        ICHECK_MSG(got.size() == kChallengeFrame, "%zu bytes before the accept", got.size());
        ICHECK_MSG(!contains_window(got, addr),
                   "8 bytes of the worker address went out "
                   "before the accept");
        ICHECK_MSG(!contains_pid(got), "the pid went out before the accept");
        // The control: the accept does carry the address, and the search finds it there.
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_CONN_REQUEST;
        p.flags = SWY_EP_FLAG_CONN_REQUEST;
        p.conn_request = s.held[0];
        swy_ep_h ep = nullptr;
        ICHECK_OK(swy_ep_create(n.worker(), &p, &ep));
        const std::vector<unsigned char> accept =
            recv_exact(fd, 12 + addr.size(), 15.0, n.worker());
        ICHECK(accept[5] == 2);
        ICHECK(contains_window(accept, addr) && contains_pid(accept));
        close(fd);
        close_ep(n.worker(), ep);
        swy_listener_destroy(s.listener);
    }));
}

TEST(ListenerAuth, KeyedListenerAndClientWithTheSameKeyCarryMessages) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        const std::vector<unsigned char> key = make_key(32, 1);
        if (w.rank() == 0) {
            Server s;
            publish_port(w, kPortSlot, s.listen(n.worker(), Family::kV4, key.data(), key.size()));
            s.wait_for_endpoints(1);
            ICHECK(s.offered == 1);
            for (size_t i = 0; i < kAuthSizes.size(); ++i) {
                std::vector<unsigned char> buf(kAuthSizes[i] + kGuardBytes, kGuardByte);
                Recv r = post_recv(n.worker(), buf.data(), kAuthSizes[i], kDataTag | i);
                ICHECK_OK(finish_recv(n.worker(), r));
                ICHECK(r.info.length == kAuthSizes[i]);
                ICHECK_PATTERN(buf.data(), kAuthSizes[i], pattern_seed(kAuthSizes[i], 1, i),
                               "size %zu", kAuthSizes[i]);
                ICHECK(guard_intact(buf.data() + kAuthSizes[i]));
            }
            std::vector<unsigned char> reply(70000);
            fill_pattern(reply.data(), reply.size(), pattern_seed(reply.size(), 0, 0));
            send_blocking(n.worker(), s.eps[0], reply.data(), reply.size(), kReplyTag);
            w.barrier(n.worker());
            close_ep(n.worker(), s.eps[0]);
            swy_listener_destroy(s.listener);
        } else {
            ErrorCount errors;
            swy_ep_h ep =
                connect_sockaddr(n.worker(), loopback(Family::kV4, wait_port(w, kPortSlot)),
                                 &errors, key.data(), key.size());
            std::vector<std::vector<unsigned char>> bufs;
            std::vector<Send> sends;
            for (size_t i = 0; i < kAuthSizes.size(); ++i) {
                bufs.emplace_back(kAuthSizes[i]);
                fill_pattern(bufs.back().data(), kAuthSizes[i], pattern_seed(kAuthSizes[i], 1, i));
                sends.push_back(post_send(ep, bufs.back().data(), kAuthSizes[i], kDataTag | i));
            }
            for (Send& snd : sends)
                ICHECK_OK(finish_send(n.worker(), snd));
            std::vector<unsigned char> in(70000 + kGuardBytes, kGuardByte);
            Recv r = post_recv(n.worker(), in.data(), 70000, kReplyTag);
            ICHECK_OK(finish_recv(n.worker(), r));
            ICHECK_PATTERN(in.data(), 70000, pattern_seed(70000, 0, 0), "reply");
            ICHECK(guard_intact(in.data() + 70000));
            w.barrier(n.worker());
            ICHECK_MSG(errors.calls == 0, "error callback: %s", swy_status_string(errors.last));
            close_ep(n.worker(), ep);
        }
    }));
}

TEST(ListenerAuth, KeyedListenerRefusesClientsWithoutTheKeyAndKeepsServing) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        const std::vector<unsigned char> key = make_key(32, 2);
        if (w.rank() == 0) {
            Server s;
            publish_port(w, kPortSlot, s.listen(n.worker(), Family::kV4, key.data(), key.size()));
            s.wait_for_endpoints(1, 60.0);  // the good client comes after the refused ones
            ICHECK_MSG(s.offered == 1, "on_connect ran %d times", s.offered);
            uint64_t v = 0;
            Recv r = post_recv(n.worker(), &v, sizeof(v), kDataTag);
            ICHECK_OK(finish_recv(n.worker(), r));
            ICHECK(v == 0xC0FFEE);
            w.barrier(n.worker());
            close_ep(n.worker(), s.eps[0]);
            swy_listener_destroy(s.listener);
        } else {
            const SockAddr a = loopback(Family::kV4, wait_port(w, kPortSlot));
            const std::vector<unsigned char> wrong = make_key(32, 3);
            const std::vector<unsigned char> longer = make_key(33, 2);  // the key and one more byte
            struct Try {
                const void* key;
                size_t length;
            };
            for (const Try& t : {Try{nullptr, 0}, Try{wrong.data(), wrong.size()},
                                 Try{longer.data(), longer.size()}}) {
                ErrorCount errors;
                swy_ep_h ep = connect_sockaddr(n.worker(), a, &errors, t.key, t.length);
                uint64_t v = 1;
                Send snd = post_send(ep, &v, sizeof(v), kDataTag);
                ICHECK_STATUS(finish_send(n.worker(), snd), SWY_ERR_CONNECTION_RESET);
                for (int i = 0; i < 100; ++i)
                    swy_worker_progress(n.worker());
                ICHECK(errors.calls == 1 && errors.last == SWY_ERR_CONNECTION_RESET);
                swy_ep_attr_t attr{};
                attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
                ICHECK_OK(swy_ep_query(ep, &attr));
                ICHECK(attr.connected == 0 && std::string(attr.transport).empty());
                close_ep(n.worker(), ep);
            }
            // A hostile client that answers the challenge with a forged proof: closed by the
            // listener itself, without a verdict.
            const std::vector<unsigned char> addr = own_address(n.worker());
            std::vector<unsigned char> forged(32, 0xEE);
            forged.insert(forged.end(), addr.begin(), addr.end());
            int fd = raw_connect(a.port());
            const std::vector<unsigned char> challenge =
                raw_hello_and_challenge(fd, kKeyedChallengeFrame);
            ICHECK(challenge[5] == 4);
            const std::vector<unsigned char> answer =
                frame(kConnMagic, kConnVersion, 5, (uint32_t)forged.size(), forged);
            ICHECK(send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) == (ssize_t)answer.size());
            ICHECK_MSG(read_until_closed(fd, 15.0) == 0, "a verdict for a forged proof");
            close(fd);
            ErrorCount errors;
            swy_ep_h ep = connect_sockaddr(n.worker(), a, &errors, key.data(), key.size());
            uint64_t v = 0xC0FFEE;
            send_blocking(n.worker(), ep, &v, sizeof(v), kDataTag);
            w.barrier(n.worker());
            ICHECK(errors.calls == 0);
            close_ep(n.worker(), ep);
        }
    }));
}

/// A keyed client meets a server that cannot prove the key: the client fails and the server
/// got nothing but the client's hello (a nonce), never its address.
TEST(ListenerAuth, KeyedClientNeverSendsItsAddressToAServerWithoutTheKey) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        const std::vector<unsigned char> key = make_key(64, 4);
        const std::vector<unsigned char> addr = own_address(n.worker());
        // The server's challenge: unkeyed (no proof), then keyed with a proof of another key.
        for (size_t body : {size_t{48}, size_t{80}}) {
            RawServer server;
            ErrorCount errors;
            swy_ep_h ep = connect_sockaddr(n.worker(), loopback(Family::kV4, server.port), &errors,
                                           key.data(), key.size());
            uint64_t v = 5;
            Send snd = post_send(ep, &v, sizeof(v), kDataTag);
            int fd = server.accept_one(n.worker());
            std::vector<unsigned char> got = recv_exact(fd, 12 + 16, 15.0, n.worker());
            ICHECK(got[5] == 1);  // a hello
            const std::vector<unsigned char> challenge =
                frame(kConnMagic, kConnVersion, 4, (uint32_t)body,
                      std::vector<unsigned char>(body, 0x33));
            ICHECK(send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL) ==
                   (ssize_t)challenge.size());
            ICHECK_STATUS(finish_send(n.worker(), snd), SWY_ERR_CONNECTION_RESET);
            ICHECK(errors.calls == 1 && errors.last == SWY_ERR_CONNECTION_RESET);
            const std::vector<unsigned char> rest = read_all_until_closed(fd, n.worker());
            got.insert(got.end(), rest.begin(), rest.end());
            ICHECK_MSG(got.size() == 12 + 16, "the client sent %zu bytes after its hello",
                       got.size() - 28);
            ICHECK(!contains_window(got, addr) && !contains_pid(got));
            close(fd);
            close_ep(n.worker(), ep);
        }
        // A real listener without a key: refused the same way, and never offered.
        Server s;
        const uint16_t port = s.listen(n.worker(), Family::kV4);
        ErrorCount errors;
        swy_ep_h ep = connect_sockaddr(n.worker(), loopback(Family::kV4, port), &errors, key.data(),
                                       key.size());
        uint64_t v = 6;
        Send snd = post_send(ep, &v, sizeof(v), kDataTag);
        ICHECK_STATUS(finish_send(n.worker(), snd), SWY_ERR_CONNECTION_RESET);
        for (int i = 0; i < 200; ++i)
            swy_worker_progress(n.worker());
        ICHECK(errors.calls == 1 && s.offered == 0);
        close_ep(n.worker(), ep);
        swy_listener_destroy(s.listener);
    }));
}

}  // namespace
}  // namespace swy_itest

namespace swy_itest {
namespace {

TEST(ListenerSettings, HandshakeTimeoutsAreSettings) {
    // SWY_SOCKADDR_CONNECT_TIMEOUT and SWY_LISTENER_HELLO_TIMEOUT were constants (30 s and
    // 10 s). Set to 300 ms, a silent server fails the client's endpoint with TIMED_OUT, and a
    // silent client is closed by the listener, both while this test's own bounded waits (5 s)
    // run; the defaults would outlast them.
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        NodeOptions opts;
        opts.config.push_back({"SOCKADDR_CONNECT_TIMEOUT", "300ms"});
        opts.config.push_back({"LISTENER_HELLO_TIMEOUT", "300ms"});
        Node n(w, opts);
        {
            RawServer server;  // accepts, then says nothing
            ErrorCount errors;
            swy_ep_h ep = connect_sockaddr(n.worker(), loopback(Family::kV4, server.port), &errors);
            uint64_t v = 5;
            Send snd = post_send(ep, &v, sizeof(v), kDataTag);
            int fd = server.accept_one(n.worker());
            ICHECK_STATUS(finish_send(n.worker(), snd, 5.0), SWY_ERR_TIMED_OUT);
            ICHECK(errors.calls == 1 && errors.last == SWY_ERR_TIMED_OUT);
            close(fd);
            close_ep(n.worker(), ep);
        }
        Server s;
        const uint16_t port = s.listen(n.worker(), Family::kV4);
        int fd = raw_connect(port);  // connects, then says nothing
        (void)read_all_until_closed(fd, n.worker(), 5.0);
        close(fd);
        ICHECK(s.offered == 0);
        swy_listener_destroy(s.listener);
    }));
}

TEST(ListenerAuth, KeysOfABadLengthAndMisusedFlagsAreRefused) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        SockAddr v4 = loopback(Family::kV4, 0);
        swy_listener_params_t lp{};
        lp.field_mask = SWY_LISTENER_PARAM_FIELD_FLAGS | SWY_LISTENER_PARAM_FIELD_SOCKADDR |
                        SWY_LISTENER_PARAM_FIELD_AUTH_KEY | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr = v4.get();
        lp.sockaddr_length = v4.length;
        lp.on_connect = &Server::on_connect;
        lp.flags = SWY_LISTENER_FLAG_AUTH_KEY;
        swy_listener_h l = nullptr;
        const std::vector<unsigned char> k15 = make_key(15, 0), k16 = make_key(16, 0),
                                         k256 = make_key(256, 0), k257 = make_key(257, 0);
        for (const auto* k : {&k15, &k257}) {
            lp.auth_key = k->data();
            lp.auth_key_length = k->size();
            ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        }
        lp.auth_key = nullptr;
        lp.auth_key_length = 32;
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        lp.flags = 1u << 7;  // unknown
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        // The flag without the key's field_mask bit: refused, not a listener without a key.
        lp.flags = SWY_LISTENER_FLAG_AUTH_KEY;
        lp.auth_key = k16.data();
        lp.auth_key_length = k16.size();
        lp.field_mask &= ~uint64_t{SWY_LISTENER_PARAM_FIELD_AUTH_KEY};
        ICHECK_STATUS(swy_listener_create(n.worker(), &lp, &l), SWY_ERR_INVALID_PARAM);
        // Neither the flags' nor the key's bit: both fields are ignored, whatever they hold
        // (a bad key included); the listener has no key.
        lp.field_mask &= ~uint64_t{SWY_LISTENER_PARAM_FIELD_FLAGS};
        lp.auth_key = k15.data();
        lp.auth_key_length = k15.size();
        ICHECK_OK(swy_listener_create(n.worker(), &lp, &l));
        swy_listener_destroy(l);
        lp.field_mask |= SWY_LISTENER_PARAM_FIELD_FLAGS | SWY_LISTENER_PARAM_FIELD_AUTH_KEY;
        for (const auto* k : {&k16, &k256}) {  // the bounds themselves are fine
            lp.auth_key = k->data();
            lp.auth_key_length = k->size();
            ICHECK_OK(swy_listener_create(n.worker(), &lp, &l));
            swy_listener_destroy(l);
            // The 0.1 name of the same call still works.
            ICHECK_OK(swy_listener_create_v2(n.worker(), &lp, &l));
            swy_listener_destroy(l);
        }

        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR |
                       SWY_EP_PARAM_FIELD_CONN_REQUEST | SWY_EP_PARAM_FIELD_AUTH_KEY;
        swy_ep_h ep = nullptr;
        p.flags = SWY_EP_FLAG_SOCKADDR | SWY_EP_FLAG_AUTH_KEY;
        p.sockaddr = v4.get();
        p.sockaddr_length = v4.length;
        for (const auto* k : {&k15, &k257}) {
            p.auth_key = k->data();
            p.auth_key_length = k->size();
            ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        }
        p.auth_key = nullptr;
        p.auth_key_length = 32;
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        // The key belongs to the client's side only.
        int junk = 0;
        p.flags = SWY_EP_FLAG_CONN_REQUEST | SWY_EP_FLAG_AUTH_KEY;
        p.conn_request = reinterpret_cast<swy_conn_request_h>(&junk);
        p.auth_key = k16.data();
        p.auth_key_length = k16.size();
        ICHECK_STATUS(swy_ep_create(n.worker(), &p, &ep), SWY_ERR_INVALID_PARAM);
        std::vector<unsigned char> addr = own_address(n.worker());
        swy_ep_params_t plain{};
        plain.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           SWY_EP_PARAM_FIELD_AUTH_KEY;
        plain.remote_address = addr.data();
        plain.remote_address_length = addr.size();
        plain.flags = SWY_EP_FLAG_AUTH_KEY;
        plain.auth_key = k16.data();
        plain.auth_key_length = k16.size();
        ICHECK_STATUS(swy_ep_create(n.worker(), &plain, &ep), SWY_ERR_INVALID_PARAM);
    }));
}

}  // namespace
}  // namespace swy_itest
