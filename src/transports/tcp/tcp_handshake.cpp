// The hello handshake of the tcp transport (tcp_wire.h, docs/security-tcp.md): who the peer
// is, and with a key, proof that it holds the same key. Nothing a peer sends is acted on
// (delivered, replied to, blamed in a failure report) before this has checked out.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

namespace {

/// The peer's address as text, for log lines ("?" if the socket no longer knows).
std::string peer_text(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
    TcpAddressEntry e;
    if (ss.ss_family == AF_INET) {
        const auto* sin = reinterpret_cast<const sockaddr_in*>(&ss);
        e.family = 4;
        e.port = ntohs(sin->sin_port);
        std::memcpy(e.ip, &sin->sin_addr, 4);
    } else {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
        e.family = 6;
        e.port = ntohs(sin6->sin6_port);
        std::memcpy(e.ip, &sin6->sin6_addr, 16);
    }
    return entry_text(e);
}

}  // namespace

Status TcpInterface::send_handshake(Connection* c, const uint8_t* body, size_t length) {
    // Handshake frames go into their own small buffer, ahead of the send queue: data queued
    // while connecting must not overtake the proof.
    const size_t frame = kFrameHeaderSize + length;
    if (c->hs_len + frame > sizeof(c->hs_buf)) return Status::kNoMemory;
    encode_frame_header(c->hs_buf + c->hs_len, kTcpControlAm, static_cast<uint32_t>(length),
                        c->rx_data);
    std::memcpy(c->hs_buf + c->hs_len + kFrameHeaderSize, body, length);
    c->hs_len = static_cast<uint8_t>(c->hs_len + frame);
    return flush(c) ? Status::kOk : Status::kConnectionReset;
}

Status TcpInterface::handle_control(Connection* c, const uint8_t* data, size_t length) {
    if (length < 1) return Status::kMalformed;
    switch (static_cast<TcpControl>(data[0])) {
        case TcpControl::kHello:
            if (c->outgoing || c->hello_received) return Status::kMalformed;
            return handle_hello(c, data, length);
        case TcpControl::kHelloAck:
            if (!c->outgoing || c->handshake_done || c->held) return Status::kMalformed;
            return handle_hello_ack(c, data, length);
        case TcpControl::kProof:
            if (c->outgoing || !c->hello_received || c->handshake_done) return Status::kMalformed;
            if (!authenticated()) return Status::kMalformed;  // we asked for no proof
            return handle_proof(c, data, length);
        case TcpControl::kGoodbye:
            if (length != 1 || !c->handshake_done) return Status::kMalformed;
            c->goodbye_received = true;
            c->remote_owner = false;
            // We left first and kept the connection open for the peer's endpoint: now
            // nobody uses it, and our write side shuts once the queue is out.
            if (c->goodbye_sent) (void)flush(c);
            return Status::kOk;
        case TcpControl::kAttach:
            if (length != 1) return Status::kMalformed;
            if (!c->handshake_done) return unproven_pairing(c);
            if (c->goodbye_received) return Status::kMalformed;
            c->remote_owner = true;
            if (c->write_shut) {
                // We said goodbye and shut down before we heard of it: the peer's endpoint
                // sees the connection close and fails (a race of close with attach).
                log_printf(LogLevel::kInfo,
                           "tcp: worker %016llx attached to connection %u after we closed it",
                           static_cast<unsigned long long>(c->peer_uid), c->index);
            }
            return Status::kOk;
        case TcpControl::kRedirect:
        case TcpControl::kProceed:
            if (length != 1) return Status::kMalformed;
            // A verdict is only ever the answer to our proof on a connection the acceptor
            // asked to hold, after its own proof checked out (handle_hello_ack).
            if (!c->outgoing || !c->held) return unproven_pairing(c);
            return data[0] == static_cast<uint8_t>(TcpControl::kRedirect) ? on_redirect(c)
                                                                          : on_proceed(c);
    }
    return Status::kMalformed;
}

Status TcpInterface::handle_hello(Connection* c, const uint8_t* data, size_t length) {
    uint64_t uid = 0;
    if (!decode_hello(data, length, &uid, c->peer_nonce)) return Status::kMalformed;
    c->claimed_uid = uid;
    c->hello_received = true;
    // Both of us connect at once and ours may be the connection to keep: nothing is decided on
    // an unproven hello; the connector waits for our verdict, which follows its proof.
    c->verdict_owed = hold_hello(uid);
    if (common::auth_nonce(c->own_nonce) != Status::kOk) return Status::kIoError;
    c->remote_owner = true;  // the connector's endpoint owns what it connected
    c->key_epoch = key_epoch_;
    uint8_t ack[kHelloAckMaxSize];
    size_t n;
    if (authenticated()) {
        uint8_t ctx[kHelloContextSize];
        uint8_t proof[kProofSize];
        hello_context(uid, uid_, ctx, c->verdict_owed);
        common::auth_proof(config_.auth_key, kServerLabel, c->peer_nonce, c->own_nonce, ctx,
                           sizeof(ctx), proof);
        n = encode_hello_ack(ack, uid_, c->own_nonce, proof, c->verdict_owed);
    } else {
        n = encode_hello_ack(ack, uid_, c->own_nonce, nullptr, c->verdict_owed);
    }
    const Status s = send_handshake(c, ack, n);
    if (s != Status::kOk || authenticated()) return s;
    // No key: the claimed uid is all there is (as with hello version 1).
    return peer_verified(c);
}

Status TcpInterface::handle_hello_ack(Connection* c, const uint8_t* data, size_t length) {
    HelloAck ack;
    if (!decode_hello_ack(data, length, &ack)) return Status::kMalformed;
    if (ack.uid != c->peer_uid) {
        // The address led to some other worker (a stale address, or a loopback entry of a
        // peer on another host): this is not the peer we were asked to reach.
        log_printf(LogLevel::kError, "tcp: connected to worker %016llx, expected %016llx: closing",
                   static_cast<unsigned long long>(ack.uid),
                   static_cast<unsigned long long>(c->peer_uid));
        return Status::kUnreachable;
    }
    c->key_epoch = key_epoch_;
    if (authenticated()) {
        if (!ack.has_proof) return auth_failure(c, "the peer sent no proof (it has no key)");
        uint8_t ctx[kHelloContextSize];
        hello_context(uid_, c->peer_uid, ctx, ack.hold);
        if (!common::auth_proof_matches(config_.auth_key, kServerLabel, c->own_nonce, ack.nonce,
                                        ctx, sizeof(ctx), ack.proof)) {
            return auth_failure(c, "the peer's proof does not match our key");
        }
        uint8_t proof[kProofSize];
        common::auth_proof(config_.auth_key, kClientLabel, c->own_nonce, ack.nonce, ctx,
                           sizeof(ctx), proof);
        uint8_t body[kProofFrameSize];
        encode_proof(body, proof);
        Status s = send_handshake(c, body, sizeof(body));
        if (s != Status::kOk) return s;
    } else if (ack.has_proof) {
        return auth_failure(c, "the peer requires a key (SWY_AUTH_KEY) and we have none");
    }
    if (ack.hold) {
        // The peer is connecting to us too: no data until its verdict (kProceed/kRedirect).
        c->held = true;
        log_printf(LogLevel::kDebug,
                   "tcp: connection %u to worker %016llx: it connects to us too, waiting for "
                   "its verdict",
                   c->index, static_cast<unsigned long long>(c->peer_uid));
        return Status::kOk;
    }
    c->handshake_done = true;
    log_printf(LogLevel::kDebug, "tcp: connection %u to worker %016llx is up", c->index,
               static_cast<unsigned long long>(c->peer_uid));
    // What the endpoint queued while we connected leaves now, behind the proof.
    return flush(c) ? Status::kOk : Status::kConnectionReset;
}

Status TcpInterface::handle_proof(Connection* c, const uint8_t* data, size_t length) {
    uint8_t proof[kProofSize];
    if (!decode_proof(data, length, proof)) return auth_failure(c, "malformed proof");
    uint8_t ctx[kHelloContextSize];
    hello_context(c->claimed_uid, uid_, ctx, c->verdict_owed);
    if (!common::auth_proof_matches(config_.auth_key, kClientLabel, c->peer_nonce, c->own_nonce,
                                    ctx, sizeof(ctx), proof)) {
        return auth_failure(c, "the peer's proof does not match our key");
    }
    return peer_verified(c);
}

Status TcpInterface::unproven_pairing(Connection* c) {
    // kAttach, kRedirect or kProceed where no proven peer can have sent it: before the
    // handshake, or a verdict we did not wait for. Refused; nothing about pairing changes.
    if (authenticated() && !c->handshake_done && !c->held) {
        return auth_failure(c, "a pairing message before the handshake");
    }
    log_printf(LogLevel::kError, "tcp: unexpected pairing message on connection %u: closing",
               c->index);
    return Status::kMalformed;
}

Status TcpInterface::auth_failure(Connection* c, const char* what) {
    log_printf(LogLevel::kError, "tcp: authentication failed from %s (%s worker %016llx): %s",
               peer_text(c->fd.get()).c_str(), c->outgoing ? "expected" : "claimed",
               static_cast<unsigned long long>(c->outgoing ? c->peer_uid : c->claimed_uid), what);
    // Reported (as unreachable) only when we made the connection: then the peer is the one
    // our endpoint wanted. An acceptor-side connection has no verified identity to blame.
    return Status::kUnreachable;
}

}  // namespace swy::tl::tcp
