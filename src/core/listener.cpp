// Server side of connection establishment: listening sockets, accepted connections, the
// one-endpoint-per-pair rule and the application's answer (see listener.h).
#include "core/listener.h"

#include <cerrno>
#include <cstring>

#include "common/auth.h"
#include "common/log.h"
#include "common/socket.h"
#include "core/address.h"
#include "core/worker.h"

namespace swy::core {

using common::log_printf;
using common::LogLevel;

Status ConnManager::listen(const swy_listener_params_t& params, Listener** out, std::string* why) {
    if (!valid_inet_sockaddr(params.sockaddr, params.sockaddr_length, why)) {
        return Status::kInvalidParam;
    }
    if (params.on_connect == nullptr) {
        *why = "on_connect is required";
        return Status::kInvalidParam;
    }
    if ((params.flags & ~uint32_t{SWY_LISTENER_FLAG_AUTH_KEY}) != 0) {
        *why = "unknown listener flags";
        return Status::kInvalidParam;
    }
    common::AuthKey key;
    if ((params.flags & SWY_LISTENER_FLAG_AUTH_KEY) != 0) {
        Status ks = common::AuthKey::from_bytes(params.auth_key, params.auth_key_length, &key, why);
        if (ks != Status::kOk) return ks;
    }
    const auto at = common::SocketAddress::from_sockaddr(params.sockaddr, params.sockaddr_length);
    common::ListenOptions options;
    options.dual_stack = true;  // the IPv6 wildcard takes IPv4 clients too
    options.reuse_address = true;
    options.backlog = 128;
    common::UniqueFd fd;
    common::SocketAddress bound;
    Status ls = common::listen_on(at, options, &fd, &bound, why);
    if (ls != Status::kOk) return ls;
    std::unique_ptr<Listener, ArenaDelete<Listener>> l(listener_slots_.make(),
                                                       ArenaDelete<Listener>{&listener_slots_});
    l->manager = this;
    l->on_connect = params.on_connect;
    l->arg = params.arg;
    l->key = std::move(key);
    l->bound = bound.storage;
    l->bound_length = bound.length;
    l->name = bound.text();
    bool unused = false;
    watch(fd.get(), false, &unused, true);
    l->fd = std::move(fd);
    log_printf(LogLevel::kDebug, "listener on %s%s", l->name.c_str(),
               l->key.empty() ? "" : " (clients must prove the key)");
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
        if (r->state == ConnRequest::State::kAwaitHello ||
            r->state == ConnRequest::State::kAwaitAddress) {
            close_request(r.get());
        } else if (r->state == ConnRequest::State::kHeld ||
                   r->state == ConnRequest::State::kOffered) {
            send_verdict(r.get(), false);
        }
    }
    unwatch(listener->fd.get());
    std::erase_if(listeners_, [listener](const auto& l) { return l.get() == listener; });
}

unsigned ConnManager::accept_all(Listener* l) {
    unsigned n = 0;
    for (;;) {
        common::UniqueFd fd;
        common::SocketAddress peer;
        std::string why;
        const Status s = common::accept_one(l->fd.get(), &fd, &peer, &why);
        if (s != Status::kOk) {
            // EMFILE and friends: the connection stays in the backlog; retried next time.
            if (s != Status::kInProgress) {
                log_printf(LogLevel::kWarn, "listener on %s: %s", l->name.c_str(), why.c_str());
            }
            return n;
        }
        const int raw = fd.get();
        std::unique_ptr<ConnRequest, ArenaDelete<ConnRequest>> r(
            request_slots_.make(), ArenaDelete<ConnRequest>{&request_slots_});
        r->listener = l;
        r->manager = this;
        r->sock.adopt(std::move(fd), peer.text());
        r->peer = peer.storage;
        r->peer_length = peer.length;
        r->deadline = ConnClock::now() + hello_timeout_;
        // Nothing is sent before the client's hello: it gets our challenge, never our address,
        // until its request is accepted.
        watch(raw, false, &r->watching_out, true);
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
    if (accept) {
        const std::vector<uint8_t> mine = worker_->address();
        r->sock.queue(encode_conn_frame(ConnFrameType::kAccept, mine.data(), mine.size()));
    } else {
        r->sock.queue(encode_conn_frame(ConnFrameType::kReject, nullptr, 0));
    }
    r->state = ConnRequest::State::kClosing;
    r->deadline = ConnClock::now() + linger_timeout_;
    watch(r->sock.fd(), true, &r->watching_out, false);
}

void ConnManager::malformed_request(ConnRequest* r, const std::string& why) {
    log_printf(LogLevel::kError, "listener: malformed handshake from %s: %s; closing it",
               r->sock.peer().c_str(), why.c_str());
    close_request(r);
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
    if (s == Status::kOk && r->sock.buffered() != 0) {
        s = Status::kMalformed;
        why = "bytes after the hello";  // the client must wait for our challenge
    }
    if (s != Status::kOk) return malformed_request(r, why);
    std::memcpy(r->client_nonce, body.data(), kConnNonceSize);
    if (common::auth_nonce(r->server_nonce) != Status::kOk) {
        log_printf(LogLevel::kError,
                   "listener: no random nonce for %s (getrandom failed); "
                   "closing it",
                   r->sock.peer().c_str());
        close_request(r);
        return;
    }
    ConnChallenge c;
    std::memcpy(c.nonce, r->server_nonce, kConnNonceSize);
    conn_uid_commitment(r->client_nonce, r->server_nonce, worker_->uid(), c.commitment);
    c.keyed = !r->listener->key.empty();  // requests awaiting a hello outlive no listener
    if (c.keyed) {
        conn_server_proof(r->listener->key, r->client_nonce, r->server_nonce, c.commitment,
                          c.proof);
    }
    r->sock.queue(encode_challenge(c));
    r->state = ConnRequest::State::kAwaitAddress;
}

void ConnManager::read_address(ConnRequest* r) {
    ConnFrameHeader h;
    std::vector<uint8_t> body;
    std::string why;
    Status s = r->sock.next_frame(&h, &body, &why);
    if (s == Status::kInProgress) return;
    if (s == Status::kOk && h.type != ConnFrameType::kAddress) {
        s = Status::kMalformed;
        why = "the second frame is not an address";
    }
    if (s == Status::kOk && r->sock.buffered() != 0) {
        s = Status::kMalformed;
        why = "bytes after the address";
    }
    if (s != Status::kOk) return malformed_request(r, why);
    const common::AuthKey& key = r->listener->key;  // requests outlive no listener here
    if (!key.empty()) {
        // Checked before anything else of the body is looked at; a client without the key
        // (its address where the proof should be) fails here too.
        bool proven = body.size() > kConnProofSize;
        if (proven) {
            const std::vector<uint8_t> claimed(body.begin() + kConnProofSize, body.end());
            uint8_t expected[kConnProofSize];
            conn_client_proof(key, r->client_nonce, r->server_nonce, claimed, expected);
            proven = common::auth_proof_equal(body.data(), expected);
        }
        if (!proven) {
            log_printf(LogLevel::kError,
                       "listener on %s: authentication failed from %s; "
                       "closing it",
                       r->listener->name.c_str(), r->sock.peer().c_str());
            close_request(r);
            return;
        }
    }
    uint8_t proof[kConnProofSize];
    WorkerAddress a;
    std::vector<uint8_t> address;
    s = decode_client_address(body.data(), body.size(), !key.empty(), proof, &address, &a, &why);
    if (s != Status::kOk) return malformed_request(r, "bad worker address: " + why);
    r->peer_address = std::move(address);
    r->peer_uid = a.worker_uid;
    r->state = ConnRequest::State::kHeld;
}

unsigned ConnManager::progress_request(ConnRequest* r, ConnClock::time_point now) {
    using State = ConnRequest::State;
    if (r->state == State::kDone || r->state == State::kOffered || r->state == State::kHeld)
        return 0;
    Status fs = r->sock.flush();
    Status rs = is_error(fs) ? fs : r->sock.receive();
    if (r->state == State::kAwaitHello || r->state == State::kAwaitAddress) {
        const State before = r->state;
        if (is_ok_or_pending(rs) || rs == Status::kEndpointClosed) {
            if (r->state == State::kAwaitHello) read_hello(r);
            if (r->state == State::kAwaitAddress) read_address(r);
        }
        if (r->state == State::kAwaitAddress && r->sock.send_pending()) {
            Status again = r->sock.flush();  // the challenge, at once
            if (is_error(again)) rs = again;
        }
        if (r->state != before && r->state != State::kAwaitAddress) return 1;
        if (rs == Status::kEndpointClosed && r->state == State::kAwaitAddress &&
            r->sock.buffered() == 0 && !r->sock.send_pending()) {
            // A client that got our challenge and left checked the key itself: keyed clients
            // leave when we prove another key or none, unkeyed ones when we ask for one.
            if (r->listener != nullptr && !r->listener->key.empty()) {
                log_printf(LogLevel::kError,
                           "listener on %s: authentication failed from %s "
                           "(it closed after the challenge: it holds no key or another); "
                           "closing it",
                           r->listener->name.c_str(), r->sock.peer().c_str());
            } else {
                log_printf(LogLevel::kError,
                           "listener: %s closed after the challenge (a "
                           "client that requires a key, which this listener does not hold?); "
                           "closing it",
                           r->sock.peer().c_str());
            }
            close_request(r);
        } else if (rs == Status::kEndpointClosed) {
            log_printf(LogLevel::kError,
                       "listener: truncated handshake from %s (%zu bytes, then EOF); closing it",
                       r->sock.peer().c_str(), r->sock.buffered());
            close_request(r);
        } else if (is_error(rs)) {
            log_printf(LogLevel::kError,
                       "listener: connection from %s failed during the "
                       "handshake (%s); closing it",
                       r->sock.peer().c_str(), status_text(rs));
            close_request(r);
        } else if (now >= r->deadline) {
            log_printf(
                LogLevel::kError,
                "listener: no complete hello and address from %s in "
                "%lld ms (SWY_LISTENER_HELLO_TIMEOUT); closing it",
                r->sock.peer().c_str(),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(hello_timeout_).count()));
            close_request(r);
        } else {
            watch(r->sock.fd(), r->sock.send_pending(), &r->watching_out, false);
        }
        return r->state != before ? 1 : 0;
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
        if (c->state != Connector::State::kDone && c->reaches(r->peer_uid)) {
            return Decision::kAutoAccept;
        }
    }
    for (const auto& c : connectors_) {
        if (c->state != Connector::State::kDone && c->ep != nullptr && !c->challenged) {
            return Decision::kWait;
        }
    }
    for (const auto& o : requests_) {
        if (o.get() != r && o->state == ConnRequest::State::kOffered &&
            o->peer_uid == r->peer_uid) {
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
                log_printf(LogLevel::kDebug,
                           "listener: %016llx already has an endpoint here; "
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
        r->listener->on_connect(static_cast<swy_conn_request_h>(handle_of(r)), r->listener->arg);
    }
    return static_cast<unsigned>(offer.size());
}

ConnRequest* ConnManager::offered_request(const void* handle) const {
    // The handle may be anything the application passed: nothing it points at is read until
    // its address is known to be one of this worker's requests (then its generation says
    // whether the handle is still current).
    const auto h = reinterpret_cast<uintptr_t>(handle);
    const ConnRequest* named = handle::address<ConnRequest>(h);
    if (named == nullptr) return nullptr;
    for (const auto& r : requests_) {
        if (r.get() != named) continue;
        if (SlotArena<ConnRequest>::resolve(h) == nullptr) return nullptr;  // finished, reused
        return r->state == ConnRequest::State::kOffered ? r.get() : nullptr;
    }
    return nullptr;
}

Status ConnManager::accept_request(ConnRequest* r, const swy_ep_params_t& params, Endpoint** out,
                                   std::string* why) {
    swy_ep_params_t p = params;
    p.flags &= ~uint32_t{SWY_EP_FLAG_CONN_REQUEST};
    p.conn_request = nullptr;
    p.field_mask = (p.field_mask & ~uint64_t{SWY_EP_PARAM_FIELD_CONN_REQUEST}) |
                   SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = r->peer_address.data();
    p.remote_address_length = r->peer_address.size();
    Status s = worker_->create_endpoint(p, out, why);
    send_verdict(r, s == Status::kOk);
    return s;
}

void ConnManager::reject_request(ConnRequest* r) { send_verdict(r, false); }

}  // namespace swy::core
