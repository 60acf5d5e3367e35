// Client side of connection establishment: an endpoint created from a sockaddr connects,
// sends its nonce, answers the server's challenge (checking the server's proof first when it
// holds a key), waits for the verdict and is then wired like any endpoint (listener.h).
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/socket.h"
#include "core/address.h"
#include "core/listener.h"
#include "core/worker.h"

namespace swy::core {

using common::log_printf;
using common::LogLevel;

namespace {
Status connect_errno_status(int e) {
    return e == ETIMEDOUT ? Status::kTimedOut : Status::kUnreachable;
}
}  // namespace

bool Connector::reaches(uint64_t uid) const {
    if (peer_uid != 0) return peer_uid == uid;
    if (!challenged) return false;
    uint8_t commitment[kConnProofSize];
    conn_uid_commitment(nonce, challenge.nonce, uid, commitment);
    return common::auth_proof_equal(commitment, challenge.commitment);
}

Status ConnManager::connect(const swy_ep_params_t& params, Endpoint** out, std::string* why) {
    if (!valid_inet_sockaddr(params.sockaddr, params.sockaddr_length, why)) {
        return Status::kInvalidParam;
    }
    common::AuthKey key;
    if ((params.flags & SWY_EP_FLAG_AUTH_KEY) != 0) {
        Status ks = common::AuthKey::from_bytes(params.auth_key, params.auth_key_length, &key, why);
        if (ks != Status::kOk) return ks;
    }
    uint8_t nonce[kConnNonceSize];
    if (common::auth_nonce(nonce) != Status::kOk) {
        *why = "getrandom failed: no nonce for the handshake";
        return Status::kIoError;
    }
    const auto to = common::SocketAddress::from_sockaddr(params.sockaddr, params.sockaddr_length);
    common::UniqueFd fd;
    Status os = common::open_stream_socket(to.af(), &fd, why);
    if (os != Status::kOk) return os;
    common::set_nodelay(fd.get());
    const int raw = fd.get();
    auto c = std::make_unique<Connector>();
    c->sock.adopt(std::move(fd), to.text());
    c->ep_flags = params.flags & ~uint32_t{SWY_EP_FLAG_SOCKADDR | SWY_EP_FLAG_AUTH_KEY};
    c->key = std::move(key);
    std::memcpy(c->nonce, nonce, kConnNonceSize);
    c->deadline = ConnClock::now() + connect_timeout_;
    std::string failure;
    if (is_error(common::connect_start(raw, to, &failure))) {
        // Reported through the endpoint from progress, like a refusal that takes a round trip.
        c->early_failure = connect_errno_status(errno);
        log_printf(LogLevel::kInfo, "%s", failure.c_str());
    }
    // Only our nonce: our address goes out once the server answered (and proved the key).
    c->sock.queue(encode_conn_frame(ConnFrameType::kHello, c->nonce, kConnNonceSize));
    watch(raw, true, &c->watching_out, true);
    c->ep = worker_->add_unwired_endpoint(params);
    *out = c->ep;
    connectors_.push_back(std::move(c));
    return Status::kOk;
}

void ConnManager::forget_endpoint(const Endpoint* ep) {
    for (auto& c : connectors_) {
        if (c->ep != ep) continue;
        c->ep = nullptr;
        unwatch(c->sock.fd());
        c->sock.close();
        c->state = Connector::State::kDone;
    }
}

void ConnManager::fail_connector(Connector* c, Status why, const std::string& text, bool error) {
    // The application hears of it through the endpoint (requests, err_cb) and may well retry
    // a refusal (a server not up yet), so only a peer that breaks the protocol (or fails
    // authentication) is an error.
    log_printf(error || why == Status::kMalformed ? LogLevel::kError : LogLevel::kInfo,
               "connection to %s failed: %s (%s)", c->sock.peer().c_str(), text.c_str(),
               status_text(why));
    unwatch(c->sock.fd());
    c->sock.close();
    c->state = Connector::State::kDone;
    Endpoint* ep = c->ep;
    c->ep = nullptr;
    if (ep != nullptr) ep->fail(why);  // completes its queued sends, calls err_cb once
}

unsigned ConnManager::progress_connector(Connector* c, ConnClock::time_point now) {
    using State = Connector::State;
    if (c->state == State::kDone) return 0;
    if (c->ep == nullptr || c->ep->closed) {  // the application closed it meanwhile
        c->ep = nullptr;
        unwatch(c->sock.fd());
        c->sock.close();
        c->state = State::kDone;
        return 1;
    }
    if (c->early_failure != Status::kOk) {
        fail_connector(c, c->early_failure, "connect failed");
        return 1;
    }
    if (now >= c->deadline) {
        fail_connector(c, Status::kTimedOut,
                       "no answer in " +
                           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              connect_timeout_)
                                              .count()) +
                           " ms (SWY_SOCKADDR_CONNECT_TIMEOUT)");
        return 1;
    }
    if (c->state == State::kConnecting) {
        int err = 0;
        std::string text;
        const Status cs = common::connect_result(c->sock.fd(), &err, &text);
        if (cs == Status::kInProgress) return 0;
        if (cs != Status::kOk) {
            fail_connector(c, connect_errno_status(err), text);
            return 1;
        }
        c->state = State::kHandshake;
    }
    Status fs = c->sock.flush();
    if (is_error(fs)) {
        fail_connector(c, fs, "write failed");
        return 1;
    }
    Status rs = c->sock.receive();
    if (is_error(rs) && rs != Status::kEndpointClosed) {
        fail_connector(c, rs, "read failed");
        return 1;
    }
    read_server_frames(c, rs == Status::kEndpointClosed);
    if (c->state != State::kDone)
        watch(c->sock.fd(), c->sock.send_pending(), &c->watching_out, false);
    return 1;
}

bool ConnManager::answer_challenge(Connector* c, const std::vector<uint8_t>& body) {
    std::string why;
    if (decode_challenge(body.data(), body.size(), &c->challenge, &why) != Status::kOk) {
        fail_connector(c, Status::kMalformed, "malformed handshake: " + why);
        return false;
    }
    // The server proves the key before we say anything about ourselves.
    if (!c->key.empty()) {
        uint8_t expected[kConnProofSize];
        conn_server_proof(c->key, c->nonce, c->challenge.nonce, c->challenge.commitment, expected);
        if (!c->challenge.keyed || !common::auth_proof_equal(c->challenge.proof, expected)) {
            fail_connector(c, Status::kConnectionReset,
                           std::string("authentication failed: ") +
                               (c->challenge.keyed ? "the server holds another key"
                                                   : "the server holds no key"),
                           true);
            return false;
        }
    } else if (c->challenge.keyed) {
        fail_connector(c, Status::kConnectionReset,
                       "authentication failed: the server requires "
                       "a key (SWY_EP_FLAG_AUTH_KEY)",
                       true);
        return false;
    }
    c->challenged = true;  // from here on, held requests can be matched against the commitment
    const std::vector<uint8_t> mine = worker_->address();
    uint8_t proof[kConnProofSize];
    if (!c->key.empty()) conn_client_proof(c->key, c->nonce, c->challenge.nonce, mine, proof);
    c->sock.queue(encode_client_address(c->key.empty() ? nullptr : proof, mine));
    Status fs = c->sock.flush();
    if (is_error(fs)) {
        fail_connector(c, fs, "write failed");
        return false;
    }
    return true;
}

void ConnManager::read_server_frames(Connector* c, bool eof) {
    for (;;) {
        ConnFrameHeader h;
        std::vector<uint8_t> body;
        std::string why;
        Status s = c->sock.next_frame(&h, &body, &why);
        if (s == Status::kInProgress) break;
        if (s == Status::kOk && (h.type == ConnFrameType::kChallenge) == c->challenged) {
            s = Status::kMalformed;
            why = c->challenged ? "a second challenge" : "the first frame is not a challenge";
        }
        if (s == Status::kOk &&
            (h.type == ConnFrameType::kHello || h.type == ConnFrameType::kAddress)) {
            s = Status::kMalformed;
            why = "a client's frame from the server";
        }
        if (s != Status::kOk) {
            fail_connector(c, Status::kMalformed, "malformed handshake: " + why);
            return;
        }
        if (h.type == ConnFrameType::kChallenge) {
            if (!answer_challenge(c, body)) return;
            continue;
        }
        if (h.type == ConnFrameType::kReject) {
            fail_connector(c, Status::kConnectionReset, "the server rejected the connection");
            return;
        }
        // Accepted: the server's address, which must be the worker the commitment named.
        WorkerAddress a;
        if (decode_accept(body.data(), body.size(), &a, &why) != Status::kOk) {
            fail_connector(c, Status::kMalformed, "malformed server address: " + why);
            return;
        }
        if (!c->reaches(a.worker_uid)) {
            fail_connector(c, Status::kMalformed,
                           "the accept names another worker than the "
                           "challenge committed to");
            return;
        }
        c->peer_uid = a.worker_uid;
        // Wire the lanes from the server's address; queued sends go out from here.
        Endpoint* ep = c->ep;
        unwatch(c->sock.fd());
        c->sock.close();
        c->state = Connector::State::kDone;
        c->ep = nullptr;
        Status ws = worker_->wire_endpoint(ep, body, c->ep_flags, &why);
        if (ws != Status::kOk) {
            log_printf(LogLevel::kError,
                       "connection to %s: accepted, but no lane reaches the "
                       "server: %s",
                       c->sock.peer().c_str(), why.c_str());
            ep->fail(ws);
        }
        return;
    }
    if (eof) {
        fail_connector(c, Status::kConnectionReset,
                       "the server closed the connection before accepting it");
    }
}

}  // namespace swy::core
