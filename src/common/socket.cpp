// The socket helper (see socket.h).
#include "common/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace swy::common {

namespace {

std::string errno_text(int error) { return std::strerror(error); }

/// "'text': problem". Built with appends: GCC 12 warns falsely (-Wrestrict) on chained
/// operator+ that starts with a short literal.
std::string quoted(std::string_view text, std::string_view problem) {
    std::string out;
    out.reserve(text.size() + problem.size() + 4);
    out.push_back('\'');
    out.append(text).append("': ").append(problem);
    return out;
}

/// Milliseconds left until @p deadline for poll(): 0 once it passed, rounded up otherwise
/// (so that a wait never ends just before the deadline and spins).
int poll_ms(SocketDeadline deadline) {
    const auto left = deadline - SocketClock::now();
    if (left <= SocketClock::duration::zero()) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<long long>(ms, 1 << 30));
}

/// Wait until @p fd has @p events or the deadline passes. kOk: ready (or an error the next
/// call will report); kTimedOut.
Status wait_for(int fd, short events, SocketDeadline deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, poll_ms(deadline));
        if (n > 0) return Status::kOk;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Status::kIoError;
        if (SocketClock::now() >= deadline) return Status::kTimedOut;
    }
}

}  // namespace

// ---- addresses -----------------------------------------------------------------------------

SocketAddress SocketAddress::from_ip(int family, const void* ip, uint16_t port) {
    SocketAddress a;
    if (family == 4) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&a.storage);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        std::memcpy(&sin->sin_addr, ip, 4);
        a.length = sizeof(sockaddr_in);
    } else if (family == 6) {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        std::memcpy(&sin6->sin6_addr, ip, 16);
        a.length = sizeof(sockaddr_in6);
    }
    return a;
}

SocketAddress SocketAddress::from_sockaddr(const sockaddr* sa, size_t length) {
    SocketAddress a;
    std::string unused;
    if (!valid_inet_sockaddr(sa, length, &unused)) return a;
    a.length = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&a.storage, sa, a.length);
    return a;
}

SocketAddress SocketAddress::any(int family, uint16_t port) {
    const uint8_t zero[16] = {};
    return from_ip(family, zero, port);
}

SocketAddress SocketAddress::loopback(int family, uint16_t port) {
    if (family == 4) {
        const uint32_t lo = htonl(INADDR_LOOPBACK);
        return from_ip(4, &lo, port);
    }
    return from_ip(family, &in6addr_loopback, port);
}

int SocketAddress::family() const {
    switch (af()) {
        case AF_INET: return 4;
        case AF_INET6: return 6;
        default: return 0;
    }
}

uint16_t SocketAddress::port() const {
    switch (af()) {
        case AF_INET: return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
        case AF_INET6: return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
        default: return 0;
    }
}

const uint8_t* SocketAddress::ip() const {
    switch (af()) {
        case AF_INET:
            return reinterpret_cast<const uint8_t*>(
                &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr);
        case AF_INET6: return reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr.s6_addr;
        default: return nullptr;
    }
}

std::string SocketAddress::text() const { return empty() ? "?" : describe_sockaddr(get(), length); }

std::string describe_sockaddr(const sockaddr* sa, socklen_t length) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa == nullptr) return "?";
    if (sa->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (sa->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        // Appended piecewise: GCC 12 at -O3 raises a false -Wrestrict on "[" + std::string.
        std::string text("[");
        text.append(ip).append("]:").append(std::to_string(ntohs(in6->sin6_port)));
        return text;
    }
    return "(address family " + std::to_string(sa->sa_family) + ")";
}

bool valid_inet_sockaddr(const sockaddr* sa, size_t length, std::string* why) {
    if (sa == nullptr || length < sizeof(sa_family_t)) {
        *why = "sockaddr is NULL or shorter than its family field";
        return false;
    }
    if (sa->sa_family == AF_INET) {
        if (length >= sizeof(sockaddr_in)) return true;
        *why = "sockaddr_length is shorter than a sockaddr_in";
        return false;
    }
    if (sa->sa_family == AF_INET6) {
        if (length >= sizeof(sockaddr_in6)) return true;
        *why = "sockaddr_length is shorter than a sockaddr_in6";
        return false;
    }
    *why = "sockaddr family must be AF_INET or AF_INET6";
    return false;
}

Status resolve_host_port(std::string_view text, SocketAddress* out, std::string* why) {
    std::string host;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *why = quoted(text, "expected [IPv6 address]:port");
            return Status::kInvalidParam;
        }
        host = std::string(text.substr(1, close - 1));
        port_text = text.substr(close + 2);
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos || text.find(':') != colon) {
            *why = quoted(text, "expected host:port (IPv6 addresses in brackets)");
            return Status::kInvalidParam;
        }
        host = std::string(text.substr(0, colon));
        port_text = text.substr(colon + 1);
    }
    unsigned port = 0;
    bool digits = !port_text.empty() && port_text.size() <= 5;
    for (char ch : port_text) {
        if (ch < '0' || ch > '9') digits = false;
        if (digits) port = port * 10 + static_cast<unsigned>(ch - '0');
    }
    if (host.empty() || !digits || port > 65535) {
        *why = quoted(text, host.empty() ? "no host" : "bad port");
        return Status::kInvalidParam;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* list = nullptr;
    const std::string service = std::to_string(port);
    const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
    if (rc != 0) {
        *why = "cannot resolve " + quoted(host, gai_strerror(rc));
        return rc == EAI_SYSTEM ? Status::kIoError : Status::kNotFound;
    }
    SocketAddress a;
    for (addrinfo* ai = list; ai != nullptr && a.empty(); ai = ai->ai_next) {
        a = SocketAddress::from_sockaddr(ai->ai_addr, ai->ai_addrlen);
    }
    freeaddrinfo(list);
    if (a.empty()) {
        *why = quoted(host, "no IPv4 or IPv6 address");
        return Status::kNotFound;
    }
    *out = a;
    return Status::kOk;
}

// ---- sockets -------------------------------------------------------------------------------

Status socket_errno_status(int error) {
    switch (error) {
        case ECONNREFUSED:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case EADDRNOTAVAIL:
        case ETIMEDOUT: return Status::kUnreachable;
        case ECONNRESET:
        case EPIPE: return Status::kConnectionReset;
        default: return Status::kIoError;
    }
}

Status open_stream_socket(int af, UniqueFd* out, std::string* why) {
    const int fd = ::socket(af, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        const int error = errno;
        *why = "socket: " + errno_text(error);
        errno = error;
        // Out of descriptors or kernel memory: a resource limit (ulimit -n), not a network
        // failure, and the caller's status says so.
        const bool exhausted =
            error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
        return exhausted ? Status::kNoResource : Status::kIoError;
    }
    out->reset(fd);
    return Status::kOk;
}

Status connect_start(int fd, const SocketAddress& to, std::string* why) {
    if (::connect(fd, to.get(), to.length) == 0) return Status::kOk;
    // EINTR: the connection goes on in the background, exactly as with EINPROGRESS.
    if (errno == EINPROGRESS || errno == EINTR) return Status::kInProgress;
    const int error = errno;
    *why = "connect to " + to.text() + ": " + errno_text(error);
    return socket_errno_status(error);
}

Status connect_result(int fd, int* error, std::string* why) {
    *error = 0;
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, 0);
    if (ready == 0) return Status::kInProgress;
    if (ready < 0) {
        *error = errno;
        if (*error == EINTR) return Status::kInProgress;
    } else {
        socklen_t length = sizeof(*error);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, error, &length) != 0) *error = errno;
    }
    if (*error == 0) return Status::kOk;
    *why = errno_text(*error);
    return socket_errno_status(*error);
}

Status connect_with_deadline(const SocketAddress& to, SocketDeadline deadline, UniqueFd* out,
                             std::string* why) {
    if (to.empty()) {
        *why = "connect: no address";
        return Status::kInvalidParam;
    }
    UniqueFd fd;
    Status s = open_stream_socket(to.af(), &fd, why);
    if (s != Status::kOk) return s;
    s = connect_start(fd.get(), to, why);
    while (s == Status::kInProgress) {
        if (wait_for(fd.get(), POLLOUT, deadline) == Status::kTimedOut) {
            *why = "connect to " + to.text() + ": no answer before the deadline";
            return Status::kTimedOut;
        }
        int error = 0;
        std::string text;
        s = connect_result(fd.get(), &error, &text);
        if (is_error(s)) *why = "connect to " + to.text() + ": " + text;
    }
    if (s != Status::kOk) return s;
    *out = std::move(fd);
    return Status::kOk;
}

Status listen_on(const SocketAddress& at, const ListenOptions& options, UniqueFd* out,
                 SocketAddress* bound, std::string* why) {
    if (at.empty()) {
        *why = "listen: no address";
        return Status::kInvalidParam;
    }
    UniqueFd fd;
    Status s = open_stream_socket(at.af(), &fd, why);
    if (s != Status::kOk) return s;
    if (options.reuse_address) {
        const int one = 1;
        setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    }
    if (at.af() == AF_INET6) {
        const int v6only = options.dual_stack ? 0 : 1;
        setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    }
    if (::bind(fd.get(), at.get(), at.length) != 0 || ::listen(fd.get(), options.backlog) != 0) {
        const int error = errno;
        *why = "cannot listen on " + at.text() + ": " + errno_text(error);
        errno = error;  // callers that log errno themselves still see the cause
        return Status::kIoError;
    }
    if (bound != nullptr) *bound = local_address(fd.get());
    *out = std::move(fd);
    return Status::kOk;
}

Status accept_one(int listen_fd, UniqueFd* out, SocketAddress* peer, std::string* why) {
    for (;;) {
        sockaddr_storage ss{};
        socklen_t length = sizeof(ss);
        const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &length,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            out->reset(fd);
            if (peer != nullptr) {
                *peer = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), length);
            }
            return Status::kOk;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::kInProgress;
        *why = "accept: " + errno_text(errno);
        return Status::kIoError;
    }
}

SocketAddress local_address(int fd) {
    SocketAddress a;
    socklen_t length = sizeof(a.storage);
    if (fd < 0 || getsockname(fd, a.get(), &length) != 0) return SocketAddress{};
    return SocketAddress::from_sockaddr(a.get(), length);
}

SocketAddress peer_address(int fd) {
    SocketAddress a;
    socklen_t length = sizeof(a.storage);
    if (fd < 0 || getpeername(fd, a.get(), &length) != 0) return SocketAddress{};
    return SocketAddress::from_sockaddr(a.get(), length);
}

Status write_all(int fd, const void* data, size_t length, SocketDeadline deadline,
                 std::string* why) {
    const auto* p = static_cast<const uint8_t*>(data);
    size_t done = 0;
    while (done < length) {
        const ssize_t n = ::send(fd, p + done, length - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_for(fd, POLLOUT, deadline) == Status::kTimedOut) {
                *why = "write: " + std::to_string(done) + " of " + std::to_string(length) +
                       " bytes written before the deadline";
                return Status::kTimedOut;
            }
            continue;
        }
        const int error = n < 0 ? errno : EPIPE;
        *why = "write: " + errno_text(error);
        return socket_errno_status(error) == Status::kUnreachable ? Status::kConnectionReset
                                                                  : socket_errno_status(error);
    }
    return Status::kOk;
}

Status read_all(int fd, void* data, size_t length, SocketDeadline deadline, std::string* why) {
    auto* p = static_cast<uint8_t*>(data);
    size_t done = 0;
    while (done < length) {
        const ssize_t n = ::recv(fd, p + done, length - done, 0);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n == 0) {
            *why = "read: the peer closed the connection after " + std::to_string(done) + " of " +
                   std::to_string(length) + " bytes";
            return Status::kEndpointClosed;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_for(fd, POLLIN, deadline) == Status::kTimedOut) {
                *why = "read: " + std::to_string(done) + " of " + std::to_string(length) +
                       " bytes arrived before the deadline";
                return Status::kTimedOut;
            }
            continue;
        }
        const int error = errno;
        *why = "read: " + errno_text(error);
        return socket_errno_status(error) == Status::kUnreachable ? Status::kConnectionReset
                                                                  : socket_errno_status(error);
    }
    return Status::kOk;
}

void set_nodelay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void set_keepalive(int fd, const KeepAlive& k) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &k.idle_s, sizeof(k.idle_s));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &k.interval_s, sizeof(k.interval_s));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &k.count, sizeof(k.count));
    if (k.user_timeout_ms != 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &k.user_timeout_ms,
                   sizeof(k.user_timeout_ms));
    }
}

}  // namespace swy::common
