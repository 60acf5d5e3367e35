// Server side of connection establishment: listening sockets, accepted connections, the
// one-endpoint-per-pair rule and the application's answer (see listener.h).
#include "core/listener.h"

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "core/address.h"
#include "core/worker.h"

namespace swy::core {

using common::LogLevel;
using common::log_printf;

Status ConnManager::listen(const swy_listener_params_t& params, Listener** out, std::string* why) {
    if (!valid_inet_sockaddr(params.sockaddr, params.sockaddr_length, why)) {
        return Status::kInvalidParam;
    }
    if (params.on_connect == nullptr) {
        *why = "on_connect is required";
        return Status::kInvalidParam;
    }
    const int family = params.sockaddr->sa_family;
    const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    const std::string where = describe_sockaddr(params.sockaddr, len);
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *why = "socket: " + std::string(std::strerror(errno));
        return Status::kIoError;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    // The IPv6 wildcard takes IPv4 clients too, whatever the host's bindv6only default.
    if (family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (::bind(fd, params.sockaddr, len) != 0 || ::listen(fd, 128) != 0) {
        *why = "cannot listen on " + where + ": " + std::strerror(errno);
        ::close(fd);
        return Status::kIoError;
    }
    auto l = std::make_unique<Listener>();
    l->manager = this;
    l->fd = fd;
    l->on_connect = params.on_connect;
    l->arg = params.arg;
    l->bound_length = sizeof(l->bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&l->bound), &l->bound_length);
    l->name = describe_sockaddr(reinterpret_cast<sockaddr*>(&l->bound), l->bound_length);
    bool unused = false;
    watch(fd, false, &unused, true);
    log_printf(LogLevel::kDebug, "listener on %s", l->name.c_str());
    *out = l.get();
    listeners_.push_back(std::move(l));
    return Status::kOk;
}

bool ConnManager::owns(const Listener* listener) const {
    for (const auto& l : listeners_) {
        if (l.get() == listener) return true;
    }
    return false;
}

void ConnManager::destroy_listener(Listener* listener) {
    for (auto& r : requests_) {
        if (r->listener != listener) continue;
        r->listener = nullptr;
        if (r->state == ConnRequest::State::kAwaitHello) {
            close_request(r.get());
        } else if (r->state == ConnRequest::State::kHeld || r->state == ConnRequest::State::kOffered) {
            send_verdict(r.get(), false);
        }
    }
    unwatch(listener->fd);
    ::close(listener->fd);
    std::erase_if(listeners_, [listener](const auto& l) { return l.get() == listener; });
}

unsigned ConnManager::accept_all(Listener* l) {
    unsigned n = 0;
    for (;;) {
        sockaddr_storage peer{};
        socklen_t peer_len = sizeof(peer);
        int fd = ::accept4(l->fd, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                log_printf(LogLevel::kWarn, "listener on %s: accept: %s", l->name.c_str(),
                           std::strerror(errno));
            }
            return n;
        }
        auto r = std::make_unique<ConnRequest>();
        r->listener = l;
        r->sock.adopt(fd, describe_sockaddr(reinterpret_cast<sockaddr*>(&peer), peer_len));
        r->peer = peer;
        r->peer_length = peer_len;
        r->deadline = ConnClock::now() + kHelloTimeout;
        // Our hello goes first: a client connecting to us at the same time as we connect to it
        // learns who we are without waiting for any application.
        const std::vector<uint8_t> mine = worker_->address();
        r->sock.queue(encode_conn_frame(ConnFrameType::kHello, mine.data(), mine.size()));
        watch(fd, true, &r->watching_out, true);
        requests_.push_back(std::move(r));
        ++n;
    }
}

void ConnManager::close_request(ConnRequest* r) {
    unwatch(r->sock.fd());
    r->sock.close();
    r->state = ConnRequest::State::kDone;
}

void ConnManager::send_verdict(ConnRequest* r, bool accept) {
    r->sock.queue(encode_conn_frame(accept ? ConnFrameType::kAccept : ConnFrameType::kReject,
                                    nullptr, 0));
    r->state = ConnRequest::State::kClosing;
    r->deadline = ConnClock::now() + kLingerTimeout;
    watch(r->sock.fd(), true, &r->watching_out, false);
}

void ConnManager::read_hello(ConnRequest* r) {
    ConnFrameHeader h;
    std::vector<uint8_t> body;
    std::string why;
    Status s = r->sock.next_frame(&h, &body, &why);
    if (s == Status::kInProgress) return;
    if (s == Status::kOk && h.type != ConnFrameType::kHello) {
        s = Status::kMalformed;
        why = "the first frame is not a hello";
    }
    WorkerAddress a;
    if (s == Status::kOk) s = decode_address(body.data(), body.size(), &a, &why);
    if (s == Status::kOk && r->sock.buffered() != 0) {
        s = Status::kMalformed;
        why = "bytes after the hello";
    }
    if (s != Status::kOk) {
        log_printf(LogLevel::kError, "listener: malformed handshake from %s: %s; closing it",
                   r->sock.peer().c_str(), why.c_str());
        close_request(r);
        return;
    }
    r->peer_address = std::move(body);
    r->peer_uid = a.worker_uid;
    r->state = ConnRequest::State::kHeld;
}

unsigned ConnManager::progress_request(ConnRequest* r, ConnClock::time_point now) {
    using State = ConnRequest::State;
    if (r->state == State::kDone || r->state == State::kOffered || r->state == State::kHeld) return 0;
    Status fs = r->sock.flush();
    Status rs = is_error(fs) ? fs : r->sock.receive();
    if (r->state == State::kAwaitHello) {
        if (is_ok_or_pending(rs) || rs == Status::kEndpointClosed) read_hello(r);
        if (r->state != State::kAwaitHello) return 1;
        if (rs == Status::kEndpointClosed) {
            log_printf(LogLevel::kError,
                       "listener: truncated handshake from %s (%zu bytes, then EOF); closing it",
                       r->sock.peer().c_str(), r->sock.buffered());
            close_request(r);
        } else if (is_error(rs)) {
            log_printf(LogLevel::kError, "listener: connection from %s failed during the "
                       "handshake (%s); closing it", r->sock.peer().c_str(), status_text(rs));
            close_request(r);
        } else if (now >= r->deadline) {
            log_printf(LogLevel::kError, "listener: no complete hello from %s in %lld s; closing it",
                       r->sock.peer().c_str(), static_cast<long long>(kHelloTimeout.count()));
            close_request(r);
        } else {
            watch(r->sock.fd(), r->sock.send_pending(), &r->watching_out, false);
        }
        return r->state == State::kDone ? 1 : 0;
    }
    // kClosing: the verdict is written, then we stop writing and wait for the client to close
    // (closing first with its bytes unread could turn our verdict into a reset).
    if (fs == Status::kOk) r->sock.shutdown_write();
    if (rs != Status::kOk || is_error(fs) || now >= r->deadline) {
        close_request(r);
        return 1;
    }
    watch(r->sock.fd(), r->sock.send_pending(), &r->watching_out, false);
    return 0;
}

ConnManager::Decision ConnManager::decide(const ConnRequest* r) const {
    if (worker_->has_live_endpoint_to(r->peer_uid)) return Decision::kAutoAccept;
    for (const auto& c : connectors_) {
        if (c->state != Connector::State::kDone && c->peer_uid == r->peer_uid) {
            return Decision::kAutoAccept;
        }
    }
    for (const auto& c : connectors_) {
        if (c->state != Connector::State::kDone && c->ep != nullptr && c->peer_uid == 0) {
            return Decision::kWait;
        }
    }
    for (const auto& o : requests_) {
        if (o.get() != r && o->state == ConnRequest::State::kOffered && o->peer_uid == r->peer_uid) {
            return Decision::kWait;
        }
    }
    return Decision::kOffer;
}

unsigned ConnManager::decide_held() {
    std::vector<ConnRequest*> offer;
    for (auto& r : requests_) {
        if (r->state != ConnRequest::State::kHeld) continue;
        if (r->listener == nullptr) {
            send_verdict(r.get(), false);
            continue;
        }
        switch (decide(r.get())) {
            case Decision::kWait: break;
            case Decision::kAutoAccept:
                log_printf(LogLevel::kDebug, "listener: %016llx already has an endpoint here; "
                           "accepted without on_connect",
                           static_cast<unsigned long long>(r->peer_uid));
                send_verdict(r.get(), true);
                break;
            case Decision::kOffer:
                r->state = ConnRequest::State::kOffered;
                offer.push_back(r.get());
                break;
        }
    }
    // Callbacks last: they may answer, destroy the listener or create more endpoints. The
    // requests stay allocated until the next progress, so the pointers remain valid.
    for (ConnRequest* r : offer) {
        if (r->state != ConnRequest::State::kOffered || r->listener == nullptr) continue;
        r->listener->on_connect(reinterpret_cast<swy_conn_request_h>(r), r->listener->arg);
    }
    return static_cast<unsigned>(offer.size());
}

ConnRequest* ConnManager::offered_request(const void* handle) const {
    for (const auto& r : requests_) {
        if (r.get() == handle) {
            return r->state == ConnRequest::State::kOffered ? r.get() : nullptr;
        }
    }
    return nullptr;
}

Status ConnManager::accept_request(ConnRequest* r, const swy_ep_params_t& params, Endpoint** out,
                                   std::string* why) {
    swy_ep_params_t p = params;
    p.flags &= ~uint32_t{SWY_EP_FLAG_CONN_REQUEST};
    p.conn_request = nullptr;
    p.remote_address = r->peer_address.data();
    p.remote_address_length = r->peer_address.size();
    Status s = worker_->create_endpoint(p, out, why);
    send_verdict(r, s == Status::kOk);
    return s;
}

void ConnManager::reject_request(ConnRequest* r) { send_verdict(r, false); }

}  // namespace swy::core
