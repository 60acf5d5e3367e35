// Helpers shared by the listener integration tests (listener_test.cpp,
// listener_auth_test.cpp): loopback sockaddrs, a server whose on_connect accepts or rejects
// every request, sockaddr clients, and raw sockets for hostile clients.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {

// Scratch words: 0 the server's port, 1.. per-test signals.
constexpr int kPortSlot = 0;
constexpr int kDoneSlot = 1;
constexpr int kPort2Slot = 2;

constexpr swy_tag_t kDataTag = swy_tag_t{1} << 40;   // client → server: | rank << 16 | index
constexpr swy_tag_t kReplyTag = swy_tag_t{2} << 40;  // server → client: | index
constexpr swy_tag_t kWhoTag = swy_tag_t{3} << 40;    // server → client: the endpoint's index
constexpr swy_tag_t kIamTag = swy_tag_t{4} << 40;    // client → server: {rank, index}

// Empty, tiny, around fragment sizes, and rendezvous sizes (the table check below proves the
// largest ones go by rendezvous).
inline const std::vector<size_t> kSizes = {0,    1,     8,      200,      4096,
                                           9000, 65536, 300000, 1u << 20, 4u << 20};

enum class Family { kV4, kV6 };

struct SockAddr {
    sockaddr_storage ss{};
    size_t length = 0;
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&ss); }
    uint16_t port() const { return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port); }
};

inline SockAddr loopback(Family f, uint16_t port) {
    SockAddr a;
    if (f == Family::kV4) {
        auto* in = reinterpret_cast<sockaddr_in*>(&a.ss);
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.length = sizeof(sockaddr_in);
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        in6->sin6_addr = in6addr_loopback;
        a.length = sizeof(sockaddr_in6);
    }
    return a;
}

inline bool ipv6_loopback_available() {
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0) return false;
    SockAddr a = loopback(Family::kV6, 0);
    bool ok = bind(fd, a.get(), static_cast<socklen_t>(a.length)) == 0;
    close(fd);
    return ok;
}

/// The server side: a listener whose callback accepts (or rejects) every request.
struct Server {
    swy_worker_h worker = nullptr;
    swy_listener_h listener = nullptr;
    bool reject = false;
    bool hold = false;  ///< answer nothing: keep the requests in `held`
    int offered = 0;
    std::vector<swy_conn_request_h> held;
    std::vector<swy_ep_h> eps;
    std::vector<uint64_t> uids;

    static void on_connect(swy_conn_request_h req, void* arg) {
        auto* s = static_cast<Server*>(arg);
        ++s->offered;
        if (s->hold) {
            s->held.push_back(req);
            return;
        }
        if (s->reject) {
            ICHECK_OK(swy_listener_reject(s->listener, req));
            // Answered: a second answer is refused, not a crash.
            ICHECK_STATUS(swy_listener_reject(s->listener, req), SWY_ERR_INVALID_PARAM);
            return;
        }
        swy_conn_request_attr_t a{};
        a.field_mask =
            SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR | SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_UID;
        ICHECK_OK(swy_conn_request_query(req, &a));
        ICHECK(a.client_worker_uid != 0);
        ICHECK(a.client_sockaddr_length > 0);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_CONN_REQUEST;
        p.flags = SWY_EP_FLAG_CONN_REQUEST;
        p.conn_request = req;
        swy_ep_h ep = nullptr;
        ICHECK_OK(swy_ep_create(s->worker, &p, &ep));
        ICHECK(ep != nullptr);
        s->eps.push_back(ep);
        s->uids.push_back(a.client_worker_uid);
        ICHECK_STATUS(swy_ep_create(s->worker, &p, &ep), SWY_ERR_INVALID_PARAM);  // consumed
    }

    /// Listen on the loopback of @p f, port chosen by the kernel; @return the port.
    uint16_t listen(swy_worker_h w, Family f, const void* key = nullptr, size_t key_length = 0) {
        worker = w;
        SockAddr a = loopback(f, 0);
        swy_listener_params_t lp{};
        lp.field_mask = SWY_LISTENER_PARAM_FIELD_FLAGS | SWY_LISTENER_PARAM_FIELD_SOCKADDR |
                        SWY_LISTENER_PARAM_FIELD_AUTH_KEY | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr = a.get();
        lp.sockaddr_length = a.length;
        lp.on_connect = &Server::on_connect;
        lp.arg = this;
        if (key != nullptr) {
            lp.flags = SWY_LISTENER_FLAG_AUTH_KEY;
            lp.auth_key = key;
            lp.auth_key_length = key_length;
        }
        ICHECK_OK(swy_listener_create(w, &lp, &listener));
        swy_listener_attr_t attr{};
        attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
        ICHECK_OK(swy_listener_query(listener, &attr));
        ICHECK(attr.port != 0);
        ICHECK((int)attr.sockaddr.ss_family == (f == Family::kV4 ? AF_INET : AF_INET6));
        return attr.port;
    }

    void wait_for_endpoints(size_t n, double timeout_s = 30.0) {
        auto deadline = deadline_in(timeout_s);
        while (eps.size() < n) {
            swy_worker_progress(worker);
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out with %zu of %zu clients", eps.size(), n);
        }
    }
};

struct ErrorCount {
    int calls = 0;
    swy_status_t last = SWY_OK;
    static void cb(void* arg, swy_ep_h, swy_status_t status) {
        auto* e = static_cast<ErrorCount*>(arg);
        ++e->calls;
        e->last = status;
    }
};

inline swy_ep_h connect_sockaddr(swy_worker_h worker, const SockAddr& a,
                                 ErrorCount* errors = nullptr, const void* key = nullptr,
                                 size_t key_length = 0) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_ERR_HANDLER |
                   SWY_EP_PARAM_FIELD_SOCKADDR | SWY_EP_PARAM_FIELD_AUTH_KEY;
    p.flags = SWY_EP_FLAG_SOCKADDR;
    p.sockaddr = a.get();
    p.sockaddr_length = a.length;
    if (key != nullptr) {
        p.flags |= SWY_EP_FLAG_AUTH_KEY;
        p.auth_key = key;
        p.auth_key_length = key_length;
    }
    if (errors != nullptr) {
        p.err_cb = &ErrorCount::cb;
        p.err_arg = errors;
    }
    swy_ep_h ep = nullptr;
    ICHECK_OK(swy_ep_create(worker, &p, &ep));
    ICHECK(ep != nullptr);
    return ep;
}

inline void close_ep(swy_worker_h worker, swy_ep_h ep) {
    swy_request_h req = nullptr;
    swy_status_t st = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req);
    if (st == SWY_INPROGRESS) {
        st = wait_request(worker, req, "endpoint close");
        swy_request_free(req);
    }
    ICHECK_OK(st);
}

inline std::string transport_of(swy_ep_h ep) {
    swy_ep_attr_t a{};
    a.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    ICHECK_OK(swy_ep_query(ep, &a));
    return a.transport;
}

inline void publish_port(World& w, int slot, uint16_t port) {
    w.scratch(slot).store(port, std::memory_order_release);
}

inline uint16_t wait_port(World& w, int slot) {
    w.wait_scratch_at_least(slot, 1);
    return static_cast<uint16_t>(w.scratch(slot).load(std::memory_order_acquire));
}

// Raw socket helpers for the hostile-client tests.
inline int raw_connect(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    SockAddr a = loopback(Family::kV4, port);
    ICHECK(connect(fd, a.get(), (socklen_t)a.length) == 0);
    return fd;
}

/// Read until the server closes (it must, within @p timeout_s); @return bytes read.
inline size_t read_until_closed(int fd, double timeout_s) {
    auto deadline = deadline_in(timeout_s);
    size_t total = 0;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        poll(&p, 1, 100);
        ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno == ECONNRESET)) return total;
        if (got > 0) total += (size_t)got;
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "the listener kept a hostile connection open");
    }
}

inline std::vector<unsigned char> frame(uint32_t magic, uint8_t version, uint8_t type,
                                        uint32_t length, const std::vector<unsigned char>& body) {
    std::vector<unsigned char> f(12 + body.size());
    memcpy(f.data(), &magic, 4);  // the test runs on little-endian hosts like the wire
    f[4] = version;
    f[5] = type;
    memcpy(f.data() + 8, &length, 4);
    if (!body.empty()) memcpy(f.data() + 12, body.data(), body.size());
    return f;
}

constexpr uint32_t kConnMagic = 0x48595753;  // "SWYH"
constexpr uint8_t kConnVersion = 2;
constexpr size_t kChallengeFrame = 12 + 16 + 32;  // header, server nonce, uid commitment
constexpr size_t kKeyedChallengeFrame = kChallengeFrame + 32;  // and the server's proof

/// Read exactly @p n bytes (or fail the rank after @p timeout_s), progressing @p worker (if
/// any) meanwhile; @return them.
inline std::vector<unsigned char> recv_exact(int fd, size_t n, double timeout_s = 15.0,
                                             swy_worker_h worker = nullptr) {
    std::vector<unsigned char> out(n);
    size_t got = 0;
    auto deadline = deadline_in(timeout_s);
    while (got < n) {
        if (worker != nullptr) {
            swy_worker_progress(worker);
        } else {
            pollfd p{fd, POLLIN, 0};
            poll(&p, 1, 100);
        }
        ssize_t r = recv(fd, out.data() + got, n - got, MSG_DONTWAIT);
        ICHECK_MSG(r != 0, "the peer closed after %zu of %zu bytes", got, n);
        if (r > 0) got += static_cast<size_t>(r);
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "%zu of %zu bytes in %.0f s", got, n, timeout_s);
    }
    return out;
}

/// A client's hello (any nonce will do).
inline std::vector<unsigned char> raw_hello() {
    return frame(kConnMagic, kConnVersion, 1, 16, std::vector<unsigned char>(16, 0x5A));
}

/// Send a hello on @p fd and read the listener's challenge (unkeyed: kChallengeFrame bytes).
inline std::vector<unsigned char> raw_hello_and_challenge(int fd,
                                                          size_t challenge = kChallengeFrame) {
    const std::vector<unsigned char> hello = raw_hello();
    ICHECK(send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) == (ssize_t)hello.size());
    return recv_exact(fd, challenge);
}

/// This worker's address blob.
inline std::vector<unsigned char> own_address(swy_worker_h worker) {
    void* addr = nullptr;
    size_t len = 0;
    ICHECK_OK(swy_worker_get_address(worker, &addr, &len));
    std::vector<unsigned char> v(static_cast<unsigned char*>(addr),
                                 static_cast<unsigned char*>(addr) + len);
    swy_worker_release_address(worker, addr);
    return v;
}

}  // namespace swy_itest
