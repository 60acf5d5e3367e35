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
#include <functional>

#include "common/log.h"
#include "common/socket.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

std::string entry_text(const TcpAddressEntry& e) {
    return common::SocketAddress::from_ip(e.family, e.ip, e.port).text();
}

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

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

/// A listening socket on @p at; the bound port in @p port. kIoError with @p why.
Status open_listener(const common::SocketAddress& at, bool dual_stack, common::UniqueFd* out,
                     uint16_t* port, std::string* why) {
    common::ListenOptions options;
    options.dual_stack = dual_stack;
    common::SocketAddress bound;
    const Status s = common::listen_on(at, options, out, &bound, why);
    if (s == Status::kOk) *port = bound.port();
    return s;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Endpoint
// ------------------------------------------------------------------------------------------

TcpEndpoint::TcpEndpoint(TcpInterface* iface, uint16_t conn, uint32_t generation,
                         uint64_t remote_uid, bool owner)
    : iface_(iface),
      conn_(conn),
      generation_(generation),
      remote_uid_(remote_uid),
      owner_(owner),
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

Status TcpEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                                   size_t length) {
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
    attr_ = std::make_shared<const LaneAttr>(lane_attr(config));
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
    a.caps = cap::kAmBcopy;  // no zero-copy: rendezvous runs as the pipeline
    a.zcopy_reason = "tcp: the peer may be on another host";
    a.rndv = true;
    a.confirms_delivery = true;  // a send completes once the peer acknowledged its bytes
    return a;
}

Status TcpInterface::open(const TcpConfig& config, uint64_t worker_uid, uint16_t iface_index,
                          AmSink* sink, std::unique_ptr<TcpInterface>* out, std::string* why) {
    if (config.sndbuf_limit == 0) {
        *why = "tcp: SWY_TCP_SNDBUF_LIMIT must be at least 1 byte";
        return Status::kInvalidParam;
    }
    if (config.connect_timeout_ns == 0 || config.connect_attempt_ns == 0 ||
        config.handshake_timeout_ns == 0) {
        *why =
            "tcp: SWY_TCP_CONNECT_TIMEOUT, SWY_TCP_CONNECT_ATTEMPT_TIMEOUT and "
            "SWY_TCP_HANDSHAKE_TIMEOUT must be longer than 0";
        return Status::kInvalidParam;
    }
    std::unique_ptr<TcpInterface> iface(new TcpInterface(config, worker_uid, iface_index, sink));
    iface->spare_rx_ = std::make_unique<SpareBuffer>();
    iface->spare_tx_ = std::make_unique<SpareBuffer>();
    iface->epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
    if (!iface->epoll_fd_) {
        *why = std::string("tcp: epoll_create1: ") + std::strerror(errno);
        return Status::kIoError;
    }
    iface->timer_fd_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!iface->timer_fd_) {
        *why = std::string("tcp: timerfd_create: ") + std::strerror(errno);
        return Status::kIoError;
    }
    epoll_event tev{};
    tev.events = EPOLLIN;
    tev.data.u64 = kTimerTag;
    if (epoll_ctl(iface->epoll_fd_.get(), EPOLL_CTL_ADD, iface->timer_fd_.get(), &tev) != 0) {
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
        if (epoll_ctl(iface->epoll_fd_.get(), EPOLL_CTL_ADD, iface->listen_fds_[i].get(), &ev) !=
            0) {
            *why = std::string("tcp: epoll_ctl: ") + std::strerror(errno);
            return Status::kIoError;
        }
    }
    *out = std::move(iface);
    return Status::kOk;
}

Status check_devices(const std::vector<std::string>& devices,
                     const std::function<bool(const std::string&)>& claimed_by_other,
                     std::string* why) {
    if (wants_all(devices)) return Status::kOk;
    const std::vector<LocalAddress> local = local_addresses();
    std::string here;  // the interfaces that are up, for the message
    for (const LocalAddress& a : local) {
        if (here.find(" " + a.device + ",") == std::string::npos) here += " " + a.device + ",";
    }
    if (!here.empty()) here.pop_back();
    bool usable = false, only_others = true;
    for (const std::string& d : devices) {
        const bool up = std::any_of(local.begin(), local.end(),
                                    [&](const LocalAddress& a) { return a.device == d; });
        const bool other = claimed_by_other(d);
        usable = usable || up;
        only_others = only_others && other;
        if (!up && !other) {
            log_printf(LogLevel::kWarn,
                       "SWY_NET_DEVICES: '%s' is neither a network interface that is up here "
                       "(%s) nor an RDMA device: tcp does not use it",
                       d.c_str(), here.empty() ? "none" : here.c_str() + 1);
        }
    }
    if (usable || only_others) return Status::kOk;
    std::string list;
    for (const std::string& d : devices)
        list += (list.empty() ? "" : ",") + d;
    *why = "SWY_NET_DEVICES=" + list + ": no network interface here that is up has this name " +
           "(interfaces:" + (here.empty() ? std::string(" none") : here) + ")";
    return Status::kInvalidParam;
}

Status TcpInterface::listen_on_devices(std::string* why) {
    std::vector<LocalAddress> local = local_addresses();
    if (wants_all(config_.devices)) {
        // One dual-stack wildcard socket serves every interface, including ones that come up
        // later; the address lists what is up now. Fall back to IPv4 where IPv6 is missing.
        bool v6 = true;
        common::UniqueFd fd;
        uint16_t port = 0;
        std::string error;
        if (open_listener(common::SocketAddress::any(6, 0), true, &fd, &port, &error) !=
            Status::kOk) {
            v6 = false;
            if (open_listener(common::SocketAddress::any(4, 0), false, &fd, &port, &error) !=
                Status::kOk) {
                *why = "tcp: " + error;
                return Status::kIoError;
            }
        }
        listen_fds_.push_back(std::move(fd));
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
            common::UniqueFd fd;
            uint16_t port = 0;
            std::string error;
            if (open_listener(common::SocketAddress::from_ip(a.entry.family, a.entry.ip, 0), false,
                              &fd, &port, &error) != Status::kOk) {
                log_printf(LogLevel::kWarn, "tcp: %s (%s)", error.c_str(), a.device.c_str());
                continue;
            }
            listen_fds_.push_back(std::move(fd));
            TcpAddressEntry e = a.entry;
            e.port = port;
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
    // Every open connection gets a goodbye first (best effort), so that its peer reports
    // kEndpointClosed rather than a crash. The worker closes its endpoints first; one that outlives us anyway only returns
    // kConnectionReset from then on.
    for (auto& c : conns_) {
        c->reply_ep.reset();
        if (c->owner_ep != nullptr) c->owner_ep->iface_ = nullptr;
    }
    say_goodbye_all();  // peers tell an orderly exit from a crash (tcp_liveness.cpp)
    // Sockets, listeners and timer close with their owners, the epoll set last. Queues free
    // their own storage (not into the spare slots, which go after them).
    for (auto& c : conns_) {
        c->sendq.set_spare(nullptr);
        c->recvq.set_spare(nullptr);
    }
    conns_.clear();
    listen_fds_.clear();
}

std::vector<uint8_t> TcpInterface::address() const { return encode_tcp_address(addresses_); }

size_t TcpInterface::open_connections() const { return live_.size() + connecting_.size(); }

size_t TcpInterface::buffer_bytes() const {
    size_t n = spare_rx_->cap + spare_tx_->cap;
    for (const std::unique_ptr<Connection>& c : conns_) {
        if (c) n += c->sendq.capacity() + c->recvq.capacity();
    }
    return n;
}

void TcpInterface::setup_socket(int fd) const {
    common::set_nodelay(fd);
    // Probes after `keepalive` idle, then 4 probes half a period apart: a peer that vanished
    // silently is declared dead after about 3x keepalive. The kernel counts in whole seconds.
    const uint64_t ka_ms = std::max<uint64_t>(config_.keepalive_ns / 1'000'000, 1);
    common::KeepAlive ka;
    ka.idle_s = static_cast<int>(std::clamp<uint64_t>((ka_ms + 999) / 1000, 1, 32767));
    ka.interval_s = std::max(1, ka.idle_s / 2);
    ka.count = 4;
    // Keepalive only runs while nothing is unacknowledged; a peer that vanishes while we have
    // data in flight is caught by check_liveness() (SWY_TCP_USER_TIMEOUT). No kernel
    // TCP_USER_TIMEOUT: it also aborts a connection whose peer answers every window probe
    // but reads nothing for that long (a busy process), and the data queued would be lost.
    ka.user_timeout_ms = 0;
    common::set_keepalive(fd, ka);
}

TcpInterface::Connection* TcpInterface::new_slot() {
    Connection* c = new_slot_raw();
    if (c != nullptr) {
        c->sendq.set_spare(spare_tx_.get());
        c->recvq.set_spare(spare_rx_.get());
    }
    return c;
}

TcpInterface::Connection* TcpInterface::new_slot_raw() {
    // Slots are not reused until all 65535 have been handed out once, and then the one closed
    // longest ago first (common/conn_table.h): the worker may still hold a sender index of a
    // closed connection (queued control replies), and a late reply must find a closed
    // connection, not a stranger. A failure not yet reported, or a receive buffer a sink
    // callback is reading, keeps its slot.
    return conns_.add(
        [this](const Connection& c) {
            return c.state == Connection::State::kClosed && !c.awaiting_report() &&
                   &c != delivering_;
        },
        [](Connection& old) {
            // Its endpoint may live on: no later generation of the slot may ever match it.
            if (old.owner_ep != nullptr) {
                old.owner_ep->generation_ = common::ConnTable<Connection>::kNoGeneration;
            }
        });
}

TcpInterface::Connection* TcpInterface::add_connection(common::UniqueFd fd, bool outgoing,
                                                       uint64_t peer_uid, uint16_t* index) {
    Connection* c = new_slot();
    if (c == nullptr) return nullptr;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = (uint64_t{c->generation} << 16) | c->index;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
        log_printf(LogLevel::kError, "tcp: epoll_ctl ADD: %s", std::strerror(errno));
        c->state = Connection::State::kClosed;
        conns_.release(c->index);
        return nullptr;
    }
    c->fd = std::move(fd);
    c->state = Connection::State::kOpen;
    c->outgoing = outgoing;
    c->peer_uid = peer_uid;
    *index = c->index;
    live_.push_back(c->index);
    watch_handshake(c);
    // The connector speaks first; an accepted connection waits for its hello. No deadline:
    // a connector busy computing sends it at its next progress call.
    return c;
}

TcpInterface::Connection* TcpInterface::lookup(uint16_t index, uint32_t generation) const {
    return conns_.lookup(index, generation);
}

// ------------------------------------------------------------------------------------------
// Interface: senders (connecting to peers: tcp_connect.cpp)
// ------------------------------------------------------------------------------------------

Endpoint* TcpInterface::reply_endpoint(uint16_t sender) {
    if (sender >= conns_.size()) return nullptr;
    Connection* c = conns_[sender].get();
    if (c->state != Connection::State::kOpen || c->closing() || !c->handshake_done) {
        return nullptr;
    }
    if (!c->reply_ep) {
        c->reply_ep =
            std::make_unique<TcpEndpoint>(this, c->index, c->generation, c->peer_uid, false);
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
