// One connection per pair of workers (tcp_iface.h, "Connections"): an endpoint to a worker
// that already connected to us rides on that connection; two workers that connect to each
// other at once keep the connection made by the one with the lower uid; and the handshake
// deadline of connections that never finish their hello.
//
// Every pairing decision (attach, redirect, dropping our own crossing connection) is taken
// on a connection whose peer has proven the key, and names the peer by the uid that
// connection verified: a hello alone only makes the acceptor ask the connector to hold
// (kHelloAckHold), and the verdict waits for the connector's proof. So a peer with another
// key fails the handshake on both of the crossing connections at once (each side's own
// connection reports it), and a forged verdict cannot steer or stall a connection.
#include <sys/epoll.h>

#include <algorithm>

#include "common/log.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

TcpInterface::Connection* TcpInterface::reusable_connection(uint64_t uid) const {
    for (uint16_t index : live_) {
        Connection* c = conns_[index].get();
        // The peer proved who it is, its endpoint uses the connection, and nobody is leaving.
        if (c->state == Connection::State::kOpen && c->handshake_done && c->peer_uid == uid &&
            c->owner_ep == nullptr && c->remote_owner && !c->goodbye_sent && !c->goodbye_received &&
            c->key_epoch == key_epoch_) {
            return c;
        }
    }
    return nullptr;
}

TcpInterface::Connection* TcpInterface::own_connection_to(uint64_t uid) const {
    for (const std::vector<uint16_t>* list : {&connecting_, &live_}) {
        for (uint16_t index : *list) {
            Connection* c = conns_[index].get();
            if (c->outgoing && c->peer_uid == uid && c->locally_owned() &&
                c->state != Connection::State::kClosed) {
                return c;
            }
        }
    }
    return nullptr;
}

void TcpInterface::attach_owner(Connection* c, TcpEndpoint* ep) {
    c->owner_ep = ep;
    // The peer keeps the connection open for our endpoint after its own goodbye.
    const uint8_t attach = static_cast<uint8_t>(TcpControl::kAttach);
    (void)send_control(c, &attach, 1);
    log_printf(LogLevel::kDebug, "tcp: endpoint to worker %016llx shares connection %u",
               static_cast<unsigned long long>(c->peer_uid), c->index);
}

void TcpInterface::move_owner(Connection* from, Connection* to) {
    TcpEndpoint* ep = from->owner_ep;
    from->owner_ep = nullptr;
    ep->conn_ = to->index;
    ep->generation_ = to->generation;
    attach_owner(to, ep);
    // Frames the endpoint queued while connecting: none has been written (data waits for the
    // handshake, which `from` never finished), so they go out whole, in order, on `to`.
    if (!from->sendq.empty()) {
        if (!to->sendq.append(from->sendq.data(), from->sendq.size())) {
            fail(to, Status::kNoMemory);
        } else {
            (void)flush(to);
        }
    }
    from->sendq.release();
    close_connection(from);  // quietly: its endpoint lives on, on `to`
}

void TcpInterface::adopt_accepted(Connection* accepted) {
    if (accepted->owner_ep != nullptr) return;
    Connection* mine = own_connection_to(accepted->peer_uid);
    // Ours already carries data (the peer accepted it before it connected to us): keep both,
    // moving now could reorder the endpoint's messages.
    if (mine == nullptr || mine->handshake_done) return;
    // The peer with the lower uid keeps its own connection and redirects ours; we drop ours
    // for its connection (nothing of ours has been written on our connection yet).
    if (uid_ < accepted->peer_uid) return;
    log_printf(LogLevel::kDebug,
               "tcp: worker %016llx connected to us while we connected to it: using its "
               "connection %u, closing ours (%u)",
               static_cast<unsigned long long>(accepted->peer_uid), accepted->index, mine->index);
    move_owner(mine, accepted);
}

Status TcpInterface::peer_verified(Connection* c) {
    c->peer_uid = c->claimed_uid;
    c->handshake_done = true;
    log_printf(LogLevel::kDebug, "tcp: connection %u accepted from worker %016llx", c->index,
               static_cast<unsigned long long>(c->peer_uid));
    if (c->verdict_owed) {
        c->verdict_owed = false;
        // We asked the connector to hold because we were connecting to it too. If we still
        // are, ours is the connection to keep (lower uid): "use mine", and this one closes.
        if (own_connection_to(c->peer_uid) != nullptr) {
            log_printf(LogLevel::kDebug,
                       "tcp: worker %016llx connected to us while we connect to it: redirecting "
                       "it to our connection",
                       static_cast<unsigned long long>(c->peer_uid));
            c->remote_owner = false;
            c->goodbye_sent = true;  // nobody owns it: it closes (orderly) once this is out
            const uint8_t body = static_cast<uint8_t>(TcpControl::kRedirect);
            return send_handshake(c, &body, 1);
        }
        const uint8_t body = static_cast<uint8_t>(TcpControl::kProceed);
        const Status s = send_handshake(c, &body, 1);
        if (s != Status::kOk) return s;
    }
    adopt_accepted(c);
    return Status::kOk;
}

Status TcpInterface::on_proceed(Connection* c) {
    c->held = false;
    c->handshake_done = true;
    log_printf(LogLevel::kDebug, "tcp: connection %u to worker %016llx is up", c->index,
               static_cast<unsigned long long>(c->peer_uid));
    // What the endpoint queued while we connected and waited leaves now.
    return flush(c) ? Status::kOk : Status::kConnectionReset;
}

Status TcpInterface::on_redirect(Connection* c) {
    // Only the worker with the lower uid keeps its connection; a verdict saying otherwise
    // comes from a confused peer.
    if (!(c->peer_uid < uid_)) return Status::kMalformed;
    c->held = false;
    // The peer may already have connected to us and finished its handshake.
    for (uint16_t index : live_) {
        Connection* theirs = conns_[index].get();
        if (theirs != c && !theirs->outgoing && theirs->handshake_done &&
            theirs->peer_uid == c->peer_uid && theirs->owner_ep == nullptr &&
            !theirs->goodbye_received) {
            if (c->locally_owned()) {
                move_owner(c, theirs);
            } else {
                close_connection(c);
            }
            return Status::kOk;
        }
    }
    if (!c->locally_owned()) {
        close_connection(c);
        return Status::kOk;
    }
    // Wait, without a socket, for the peer's connection: a whole SWY_TCP_CONNECT_TIMEOUT from
    // now, since the peer has just proven that it is alive and connecting to us (the time
    // our own connect took is no measure of how long the peer's may take: 256 ranks on two
    // cores waited longer than the rest of our deadline).
    drop_socket(c);
    c->hs_len = c->hs_off = 0;
    c->recvq.release();
    std::erase(live_, c->index);
    c->state = Connection::State::kConnecting;
    c->redirected = true;
    c->connect_deadline_ns = monotonic_ns() + config_.connect_timeout_ns;
    c->attempt_deadline_ns = c->connect_deadline_ns;
    connecting_.push_back(c->index);
    log_printf(LogLevel::kDebug, "tcp: worker %016llx connects to us itself: waiting for it",
               static_cast<unsigned long long>(c->peer_uid));
    return Status::kOk;
}

bool TcpInterface::hold_hello(uint64_t claimed_uid) const {
    // Only a hint that a redirect may follow: the decision waits for the connector's proof.
    // Only a connect that crosses ours is held: once ours finished its handshake the peer chose
    // to open another connection (ours is not free for its endpoint), and it would wait for a
    // connection of ours that is not coming (issue #18, bench/ep_idle_cost).
    const Connection* mine = own_connection_to(claimed_uid);
    return uid_ < claimed_uid && mine != nullptr && !mine->handshake_done;
}

void TcpInterface::watch_handshake(Connection* c) {
    c->handshake_deadline_ns = monotonic_ns() + config_.handshake_timeout_ns;
    handshaking_.push_back({c->index, c->generation});
}

void TcpInterface::check_handshakes() {
    const uint64_t now = monotonic_ns();
    // fail() does not touch the list: walk it in place, dropping what is settled.
    std::vector<std::pair<uint16_t, uint32_t>> pending;
    pending.swap(handshaking_);
    for (const auto& [index, generation] : pending) {
        Connection* c = lookup(index, generation);
        if (c == nullptr || c->state != Connection::State::kOpen || c->handshake_done ||
            c->goodbye_sent) {
            continue;
        }
        if (now < c->handshake_deadline_ns) {
            handshaking_.push_back({index, generation});
            continue;
        }
        log_printf(LogLevel::kWarn,
                   "tcp: connection %u (%s worker %016llx): no handshake within "
                   "SWY_TCP_HANDSHAKE_TIMEOUT: closing",
                   c->index, c->outgoing ? "to" : "from",
                   static_cast<unsigned long long>(c->outgoing ? c->peer_uid : c->claimed_uid));
        fail(c, Status::kTimedOut);
    }
}

}  // namespace swy::tl::tcp
