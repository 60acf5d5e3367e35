// TCP transport: set-up (listening sockets, address), connecting, and the send path.
#include "transports/tcp/tcp_iface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::LogLevel;
using common::log_printf;

namespace {
constexpr size_t kMaxConnections = 0xFFFF;  // sender indices 0..65534
}  // namespace

socklen_t to_sockaddr(const TcpAddressEntry& e, uint16_t port, sockaddr_storage* ss) {
    std::memset(ss, 0, sizeof(*ss));
    if (e.family == 4) {
        auto* sin = reinterpret_cast<sockaddr_in*>(ss);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        std::memcpy(&sin->sin_addr, e.ip, 4);
        return sizeof(sockaddr_in);
    }
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, e.ip, 16);
    return sizeof(sockaddr_in6);
}

std::string entry_text(const TcpAddressEntry& e) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(e.family == 4 ? AF_INET : AF_INET6, e.ip, buf, sizeof(buf));
    // Built with appends: GCC 12 warns falsely (-Wrestrict) on chained operator+ here.
    std::string out;
    if (e.family == 6) out.push_back('[');
    out.append(buf);
    if (e.family == 6) out.push_back(']');
    out.push_back(':');
    out.append(std::to_string(e.port));
    return out;
}

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

uint16_t bound_port(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

struct LocalAddress {
    std::string device;
    TcpAddressEntry entry;
};

/// Addresses of interfaces that are up. IPv6 link-local addresses are left out: they need a
/// scope id, which means nothing on another host.
std::vector<LocalAddress> local_addresses() {
    std::vector<LocalAddress> out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) continue;
        LocalAddress a;
        a.device = ifa->ifa_name;
        if (ifa->ifa_addr->sa_family == AF_INET) {
            a.entry.family = 4;
            std::memcpy(a.entry.ip, &reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr, 4);
        } else if (ifa->ifa_addr->sa_family == AF_INET6) {
            const auto* sin6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
            if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) continue;
            a.entry.family = 6;
            std::memcpy(a.entry.ip, &sin6->sin6_addr, 16);
        } else {
            continue;
        }
        out.push_back(a);
    }
    freeifaddrs(list);
    return out;
}

bool wants_all(const std::vector<std::string>& devices) {
    return devices.empty() || (devices.size() == 1 && devices[0] == "all");
}

int open_listener(int family, const sockaddr* addr, socklen_t len, bool dual_stack) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (family == AF_INET6) {
        int v6only = dual_stack ? 0 : 1;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    }
    if (bind(fd, addr, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Endpoint
// ------------------------------------------------------------------------------------------

TcpEndpoint::TcpEndpoint(TcpInterface* iface, uint16_t conn, uint32_t generation,
                         uint64_t remote_uid, bool owner)
    : iface_(iface), conn_(conn), generation_(generation), remote_uid_(remote_uid), owner_(owner),
      attr_(iface->attr_) {}

TcpEndpoint::~TcpEndpoint() {
    disconnect();
    if (owner_ && iface_ != nullptr) {
        TcpInterface::Connection* c = iface_->lookup(conn_, generation_);
        if (c != nullptr && c->owner_ep == this) c->owner_ep = nullptr;
    }
}

Status TcpEndpoint::am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                            size_t length) {
    if (__builtin_expect(iface_ == nullptr || disconnected_, 0)) return Status::kConnectionReset;
    TcpInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (__builtin_expect(c == nullptr, 0)) return Status::kConnectionReset;
    return iface_->send(c, id, hdr, hdr_len, payload, length);
}

Status TcpEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack,
                                   void* arg, size_t length) {
    if (iface_ == nullptr || disconnected_) return Status::kConnectionReset;
    TcpInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (c == nullptr) return Status::kConnectionReset;
    return iface_->send_packed(c, id, hdr, hdr_len, pack, arg, length);
}

void TcpEndpoint::disconnect() {
    if (disconnected_ || !owner_) return;
    disconnected_ = true;
    if (iface_ == nullptr) return;
    if (TcpInterface::Connection* c = iface_->lookup(conn_, generation_)) iface_->disconnect(c);
}

// ------------------------------------------------------------------------------------------
// Interface: set-up
// ------------------------------------------------------------------------------------------

TcpInterface::TcpInterface(const TcpConfig& config, uint64_t uid, uint16_t index, AmSink* sink)
    : config_(config), uid_(uid), index_(index), sink_(sink) {
    attr_ = lane_attr(config);
}

LaneAttr lane_attr(const TcpConfig& config) {
    LaneAttr a;
    a.transport = "tcp";
    a.pio = false;  // nothing is mapped: every send is a system call
    a.max_message = kMaxFrameBody;
    const size_t credits = config.sndbuf_limit / kMaxFrameBody;
    a.credits = static_cast<uint32_t>(std::clamp<size_t>(credits, 1, UINT32_MAX));
    a.credits_shared = false;  // each connection has its own queue
    a.costs = config.costs;
    a.zcopy_cma = false;
    a.cma_reason = "tcp: the peer may be on another host";
    a.rndv = true;
    a.remote_pid = 0;
    return a;
}

Status TcpInterface::open(const TcpConfig& config, uint64_t worker_uid, uint16_t iface_index,
                          AmSink* sink, std::unique_ptr<TcpInterface>* out, std::string* why) {
    if (config.sndbuf_limit == 0) {
        *why = "tcp: SWY_TCP_SNDBUF_LIMIT must be at least 1 byte";
        return Status::kInvalidParam;
    }
    if (config.connect_timeout_ns == 0) {
        *why = "tcp: SWY_TCP_CONNECT_TIMEOUT must be longer than 0";
        return Status::kInvalidParam;
    }
    std::unique_ptr<TcpInterface> iface(new TcpInterface(config, worker_uid, iface_index, sink));
    iface->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (iface->epoll_fd_ < 0) {
        *why = std::string("tcp: epoll_create1: ") + std::strerror(errno);
        return Status::kIoError;
    }
    iface->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (iface->timer_fd_ < 0) {
        *why = std::string("tcp: timerfd_create: ") + std::strerror(errno);
        return Status::kIoError;
    }
    epoll_event tev{};
    tev.events = EPOLLIN;
    tev.data.u64 = kTimerTag;
    if (epoll_ctl(iface->epoll_fd_, EPOLL_CTL_ADD, iface->timer_fd_, &tev) != 0) {
        *why = std::string("tcp: epoll_ctl: ") + std::strerror(errno);
        return Status::kIoError;
    }
    Status s = iface->listen_on_devices(why);
    if (s != Status::kOk) return s;
    iface->prepare_receive();
    for (size_t i = 0; i < iface->listen_fds_.size(); ++i) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kListenTag | i;
        if (epoll_ctl(iface->epoll_fd_, EPOLL_CTL_ADD, iface->listen_fds_[i], &ev) != 0) {
            *why = std::string("tcp: epoll_ctl: ") + std::strerror(errno);
            return Status::kIoError;
        }
    }
    *out = std::move(iface);
    return Status::kOk;
}

Status TcpInterface::listen_on_devices(std::string* why) {
    std::vector<LocalAddress> local = local_addresses();
    if (wants_all(config_.devices)) {
        // One dual-stack wildcard socket serves every interface, including ones that come up
        // later; the address lists what is up now. Fall back to IPv4 where IPv6 is missing.
        sockaddr_in6 any6{};
        any6.sin6_family = AF_INET6;
        any6.sin6_addr = in6addr_any;
        bool v6 = true;
        int fd = open_listener(AF_INET6, reinterpret_cast<sockaddr*>(&any6), sizeof(any6), true);
        if (fd < 0) {
            v6 = false;
            sockaddr_in any4{};
            any4.sin_family = AF_INET;
            any4.sin_addr.s_addr = htonl(INADDR_ANY);
            fd = open_listener(AF_INET, reinterpret_cast<sockaddr*>(&any4), sizeof(any4), false);
        }
        if (fd < 0) {
            *why = std::string("tcp: cannot listen on the wildcard address: ") +
                   std::strerror(errno);
            return Status::kIoError;
        }
        listen_fds_.push_back(fd);
        const uint16_t port = bound_port(fd);
        for (LocalAddress& a : local) {
            if (a.entry.family == 6 && !v6) continue;
            a.entry.port = port;
            addresses_.push_back(a.entry);
        }
    } else {
        for (const LocalAddress& a : local) {
            if (std::find(config_.devices.begin(), config_.devices.end(), a.device) ==
                config_.devices.end()) {
                continue;
            }
            sockaddr_storage ss{};
            socklen_t len = to_sockaddr(a.entry, 0, &ss);
            int fd = open_listener(a.entry.family == 4 ? AF_INET : AF_INET6,
                                   reinterpret_cast<sockaddr*>(&ss), len, false);
            if (fd < 0) {
                log_printf(LogLevel::kWarn, "tcp: cannot listen on %s (%s): %s",
                           entry_text(a.entry).c_str(), a.device.c_str(), std::strerror(errno));
                continue;
            }
            listen_fds_.push_back(fd);
            TcpAddressEntry e = a.entry;
            e.port = bound_port(fd);
            addresses_.push_back(e);
        }
    }
    if (addresses_.empty()) {
        std::string list;
        for (const std::string& d : config_.devices) {
            if (!list.empty()) list.push_back(',');
            list.append(d);
        }
        *why = "tcp: no usable address on the devices in SWY_NET_DEVICES (" + list + ")";
        return Status::kNotFound;
    }
    // A peer on another host should try our real addresses first; loopback entries only help
    // peers on this host, and come last.
    std::stable_partition(addresses_.begin(), addresses_.end(),
                          [](const TcpAddressEntry& e) { return !is_loopback(e); });
    if (addresses_.size() > kMaxTcpAddresses) addresses_.resize(kMaxTcpAddresses);
    return Status::kOk;
}

TcpInterface::~TcpInterface() {
    // Abrupt: peers see the connections drop and report us failed, as if the process died.
    // The worker closes its endpoints first; one that outlives us anyway only returns
    // kConnectionReset from then on.
    for (auto& c : conns_) {
        c->reply_ep.reset();
        if (c->owner_ep != nullptr) c->owner_ep->iface_ = nullptr;
        if (c->fd >= 0) close(c->fd);
    }
    for (int fd : listen_fds_) close(fd);
    if (timer_fd_ >= 0) close(timer_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
}

std::vector<uint8_t> TcpInterface::address() const { return encode_tcp_address(addresses_); }

size_t TcpInterface::open_connections() const {
    return live_.size() + connecting_.size();
}

void TcpInterface::setup_socket(int fd) const {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    // Probes after `keepalive` idle, then 4 probes half a period apart: a peer that vanished
    // silently is declared dead after about 3x keepalive. The kernel counts in whole seconds.
    const uint64_t ka_ms = std::max<uint64_t>(config_.keepalive_ns / 1'000'000, 1);
    int idle = static_cast<int>(std::clamp<uint64_t>((ka_ms + 999) / 1000, 1, 32767));
    int intvl = std::max(1, idle / 2);
    int cnt = 4;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    // Keepalive only runs while nothing is unacknowledged; the user timeout covers a peer that
    // vanishes while we have data in flight.
    unsigned user_timeout = static_cast<unsigned>(std::min<uint64_t>(3 * ka_ms, UINT32_MAX));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

TcpInterface::Connection* TcpInterface::new_slot() {
    // Indices are not reused until all 65535 have been handed out once: the worker may still
    // hold a sender index of a closed connection (queued control replies), and a late reply
    // must find a closed connection, not a stranger.
    Connection* c = nullptr;
    if (conns_.size() < kMaxConnections) {
        conns_.push_back(std::make_unique<Connection>());
        c = conns_.back().get();
        c->index = static_cast<uint16_t>(conns_.size() - 1);
        return c;
    }
    for (size_t n = 0; n < conns_.size() && c == nullptr; ++n) {
        Connection* cand = conns_[reuse_cursor_].get();
        reuse_cursor_ = (reuse_cursor_ + 1) % conns_.size();
        if (cand->state == Connection::State::kClosed && !cand->awaiting_report() &&
            cand != delivering_) {
            c = cand;
        }
    }
    if (c == nullptr) return nullptr;
    const uint16_t idx = c->index;
    const uint32_t gen = c->generation + 1;
    if (c->owner_ep != nullptr) c->owner_ep->generation_ = UINT32_MAX;  // can never match
    conns_[idx] = std::make_unique<Connection>();
    c = conns_[idx].get();
    c->index = idx;
    c->generation = gen == UINT32_MAX ? 0 : gen;
    return c;
}

TcpInterface::Connection* TcpInterface::add_connection(int fd, bool outgoing, uint64_t peer_uid,
                                                       uint16_t* index) {
    Connection* c = new_slot();
    if (c == nullptr) return nullptr;
    c->fd = fd;
    c->state = Connection::State::kOpen;
    c->outgoing = outgoing;
    c->peer_uid = peer_uid;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = (uint64_t{c->generation} << 16) | c->index;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        log_printf(LogLevel::kError, "tcp: epoll_ctl ADD: %s", std::strerror(errno));
        c->fd = -1;
        c->state = Connection::State::kClosed;
        return nullptr;
    }
    *index = c->index;
    live_.push_back(c->index);
    // The connector speaks first; an accepted connection waits for its hello. No deadline:
    // a connector busy computing sends it at its next progress call.
    return c;
}

TcpInterface::Connection* TcpInterface::lookup(uint16_t index, uint32_t generation) const {
    if (index >= conns_.size()) return nullptr;
    Connection* c = conns_[index].get();
    return c->generation == generation ? c : nullptr;
}

// ------------------------------------------------------------------------------------------
// Interface: senders (connecting to peers: tcp_connect.cpp)
// ------------------------------------------------------------------------------------------

Endpoint* TcpInterface::reply_endpoint(uint16_t sender) {
    if (sender >= conns_.size()) return nullptr;
    Connection* c = conns_[sender].get();
    if (c->state != Connection::State::kOpen || c->goodbye_sent || !c->handshake_done) {
        return nullptr;
    }
    if (!c->reply_ep) {
        c->reply_ep = std::make_unique<TcpEndpoint>(this, c->index, c->generation, c->peer_uid,
                                                    false);
    }
    return c->reply_ep.get();
}

uint64_t TcpInterface::sender_uid(uint16_t sender) const {
    if (sender >= conns_.size()) return 0;
    const Connection* c = conns_[sender].get();
    return c->handshake_done ? c->peer_uid : 0;
}

uint64_t TcpInterface::sender_key(uint16_t sender) const {
    if (sender >= conns_.size()) return 0;
    const Connection* c = conns_[sender].get();
    return c->handshake_done ? connection_key(c->index, c->generation) : 0;
}

}  // namespace swy::tl::tcp
