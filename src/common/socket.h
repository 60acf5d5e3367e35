// The one TCP socket helper that the connection manager (listeners and sockaddr endpoints),
// the tcp transport and the verbs handshake are built on: addresses (IPv4 and IPv6 alike),
// non-blocking close-on-exec sockets, connect under a deadline, listen, accept, whole-buffer
// reads and writes under a deadline, and the common socket options.
//
// Setup-time code: calls may allocate (error strings) and make system calls; nothing here is
// on a message's hot path. Every failure comes back as a Status with a reason that names the
// operation, the address where there is one, and the errno text. Not thread-safe per socket;
// the functions themselves share no state.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/unique_fd.h"

namespace swy::common {

using SocketClock = std::chrono::steady_clock;
/// An absolute time limit for a blocking socket operation.
using SocketDeadline = SocketClock::time_point;

/// An IPv4 or IPv6 socket address with its length.
struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;  ///< 0: no address

    /// From raw address bytes: @p family 4 (@p ip holds 4 bytes) or 6 (16 bytes). Any other
    /// family gives an empty address.
    static SocketAddress from_ip(int family, const void* ip, uint16_t port);
    /// A copy of @p sa (AF_INET or AF_INET6 with a long enough @p length; else empty).
    static SocketAddress from_sockaddr(const sockaddr* sa, size_t length);
    /// The wildcard address of @p family (4 or 6) with @p port.
    static SocketAddress any(int family, uint16_t port);
    /// The loopback address of @p family (4 or 6) with @p port.
    static SocketAddress loopback(int family, uint16_t port);

    bool empty() const { return length == 0; }
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
    sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
    /// AF_INET, AF_INET6, or AF_UNSPEC when empty.
    int af() const { return empty() ? AF_UNSPEC : storage.ss_family; }
    /// 4, 6, or 0 when empty.
    int family() const;
    uint16_t port() const;
    /// The address bytes (4 or 16 of them; null when empty).
    const uint8_t* ip() const;
    /// "1.2.3.4:5", "[::1]:5" (for logs and error messages); "?" when empty.
    std::string text() const;
};

/// "ip:port" or "[ip6]:port" for logs; "?" or "(address family N)" for anything else.
std::string describe_sockaddr(const sockaddr* sa, socklen_t length);

/// Check a caller's sockaddr: AF_INET with length >= sizeof(sockaddr_in) or AF_INET6 with
/// length >= sizeof(sockaddr_in6). @return false with @p why.
bool valid_inet_sockaddr(const sockaddr* sa, size_t length, std::string* why);

/// Parse "host:port": a numeric IPv4 address ("10.0.0.1:80"), a bracketed IPv6 address
/// ("[::1]:80", "[fe80::1%eth0]:80"), or a name ("node7:80", resolved with getaddrinfo; the
/// first address, IPv4 or IPv6, wins). Port 0 is allowed (listen: the kernel picks one).
/// Errors: kInvalidParam (syntax, port out of range), kNotFound (the name does not resolve),
/// with @p why.
Status resolve_host_port(std::string_view text, SocketAddress* out, std::string* why);

/// Status for an errno of a socket call: kUnreachable (refused, no route, timed out),
/// kConnectionReset (reset, broken pipe), kIoError (anything else).
Status socket_errno_status(int error);

/// A non-blocking, close-on-exec TCP socket of @p af (AF_INET or AF_INET6).
/// Errors: kNoResource when out of descriptors or kernel memory (EMFILE, ENFILE, ENOBUFS,
/// ENOMEM), kIoError otherwise; @p why is "socket: <errno text>" and errno is kept.
Status open_stream_socket(int af, UniqueFd* out, std::string* why);

/// Start connecting @p fd (non-blocking) to @p to. kOk: connected already (loopback can);
/// kInProgress: wait for writability, then ask connect_result(); an error otherwise
/// (socket_errno_status of connect's errno, @p why "connect to ADDR: <errno text>").
Status connect_start(int fd, const SocketAddress& to, std::string* why);

/// The outcome of a connect started on @p fd, without waiting: kOk (connected), kInProgress
/// (still going), or the failure (SO_ERROR; @p error set to its errno, @p why its text).
Status connect_result(int fd, int* error, std::string* why);

/// Connect a new non-blocking socket to @p to, waiting until @p deadline at most.
/// Errors: kTimedOut (the deadline passed), kUnreachable / kConnectionReset / kIoError
/// (socket_errno_status), each with @p why naming the address and the errno text.
Status connect_with_deadline(const SocketAddress& to, SocketDeadline deadline, UniqueFd* out,
                             std::string* why);

/// How listen_on() sets up its socket.
struct ListenOptions {
    /// IPv6 sockets also take IPv4 clients (IPV6_V6ONLY off), whatever the host's default.
    bool dual_stack = false;
    /// SO_REUSEADDR: a fixed port can be bound again while old connections linger.
    bool reuse_address = false;
    int backlog = SOMAXCONN;
};

/// A non-blocking, close-on-exec listening socket bound to @p at (port 0: the kernel picks
/// one). @p bound (optional) receives the address actually bound.
/// Errors: kInvalidParam (empty address), kIoError ("cannot listen on ADDR: <errno text>").
Status listen_on(const SocketAddress& at, const ListenOptions& options, UniqueFd* out,
                 SocketAddress* bound, std::string* why);

/// Accept one pending connection of @p listen_fd as a non-blocking, close-on-exec socket.
/// kOk: @p out (and @p peer, if not null) set; kInProgress: none pending; kIoError: accept
/// failed (e.g. EMFILE: the connection stays in the backlog), @p why says why. EINTR and
/// ECONNABORTED (a client that left before we took it) are retried.
Status accept_one(int listen_fd, UniqueFd* out, SocketAddress* peer, std::string* why);

/// The local address @p fd is bound to (empty on failure).
SocketAddress local_address(int fd);
/// The address @p fd is connected to (empty on failure).
SocketAddress peer_address(int fd);

/// Write all of @p length bytes to the non-blocking socket @p fd, waiting for room until
/// @p deadline. Errors: kTimedOut, kConnectionReset (reset, broken pipe, or the peer
/// closed), kIoError; @p why says which (with the errno text).
Status write_all(int fd, const void* data, size_t length, SocketDeadline deadline,
                 std::string* why);
/// Read exactly @p length bytes from the non-blocking socket @p fd, waiting until
/// @p deadline. Errors: kTimedOut, kEndpointClosed (EOF first; @p why says after how many
/// bytes), kConnectionReset, kIoError.
Status read_all(int fd, void* data, size_t length, SocketDeadline deadline, std::string* why);

/// TCP_NODELAY: small handshake and protocol frames leave at once.
void set_nodelay(int fd);

/// Keepalive and user timeout: probes after @p idle_s seconds of silence, then @p count
/// probes @p interval_s apart; data unacknowledged for @p user_timeout_ms fails the
/// connection (0: the kernel default). Best effort: a refused option is not an error.
struct KeepAlive {
    int idle_s = 2;
    int interval_s = 1;
    int count = 4;
    unsigned user_timeout_ms = 0;
};
void set_keepalive(int fd, const KeepAlive& keepalive);

}  // namespace swy::common
