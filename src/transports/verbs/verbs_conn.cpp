// Verbs transport: connections — the TCP handshake that exchanges QP numbers, QP state
// transitions, orderly close and failure reports.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

#include "common/log.h"
#include "common/socket.h"
#include "transports/verbs/device_select.h"
#include "transports/verbs/verbs_connection.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

namespace {

uint32_t random_psn() {
    static thread_local std::mt19937 rng{std::random_device{}()};
    return rng() & 0xFFFFFF;
}

common::SocketDeadline after_ms(uint64_t ms) {
    return common::SocketClock::now() + std::chrono::milliseconds(ms);
}

bool link_local(const std::array<uint8_t, 16>& gid) {
    return gid[0] == 0xFE && (gid[1] & 0xC0) == 0x80;
}

ibv_mtu mtu_enum(uint8_t v) { return static_cast<ibv_mtu>(v); }

// Authentication of the handshake with a shared key, in its one exchange (no extra round
// trip): the request's proof covers its connection fields under the connector's nonce; the
// reply's covers the reply's fields under both nonces, so it is fresh for this handshake.
// A replayed request gains nothing: the QP it makes talks only to the QPN and GID in it.
static_assert(sizeof(CmMessage::nonce) == common::kAuthNonceSize);
static_assert(sizeof(CmMessage::proof) == common::kAuthProofSize);
constexpr uint8_t kZeroNonce[common::kAuthNonceSize] = {};
constexpr std::string_view kRequestLabel = "swy-verbs-request";
constexpr std::string_view kReplyLabel = "swy-verbs-reply";

void sign(const common::AuthKey& key, std::string_view label, const uint8_t* client_nonce,
          const uint8_t* server_nonce, CmMessage* m) {
    common::auth_proof(key, label, client_nonce, server_nonce, m, kCmSignedBytes, m->proof);
}

bool signed_by(const common::AuthKey& key, std::string_view label, const uint8_t* client_nonce,
               const uint8_t* server_nonce, const CmMessage& m) {
    return common::auth_proof_matches(key, label, client_nonce, server_nonce, &m, kCmSignedBytes,
                                      m.proof);
}

bool has_proof(const CmMessage& m) {
    for (uint8_t b : m.proof) {
        if (b != 0) return true;
    }
    return false;
}

}  // namespace

Status listen_for_handshakes(const std::array<uint8_t, 16>& gid, common::UniqueFd* out,
                             common::SocketAddress* advertised, std::string* why) {
    common::SocketAddress at;
    if (gid_is_ipv4_mapped(gid)) {
        at = common::SocketAddress::from_ip(4, gid.data() + 12, 0);
    } else if (!gid_is_zero(gid) && !link_local(gid)) {
        at = common::SocketAddress::from_ip(6, gid.data(), 0);
    }
    std::string error;
    if (!at.empty()) {
        if (common::listen_on(at, {}, out, advertised, &error) == Status::kOk) return Status::kOk;
        if (at.family() == 4) {
            *why = "verbs: handshake listener: " + error;
            return Status::kIoError;
        }
        // A global InfiniBand GID (subnet prefix and port GUID) is no host address: bind
        // fails (EADDRNOTAVAIL), and the wildcard below serves.
    }
    common::ListenOptions dual;
    dual.dual_stack = true;
    common::SocketAddress bound;
    if (common::listen_on(common::SocketAddress::any(6, 0), dual, out, &bound, &error) !=
            Status::kOk &&
        common::listen_on(common::SocketAddress::any(4, 0), {}, out, &bound, &error) !=
            Status::kOk) {
        *why = "verbs: handshake listener: " + error;
        return Status::kIoError;
    }
    *advertised = common::SocketAddress::loopback(4, bound.port());
    return Status::kOk;
}

// ------------------------------------------------------------------------------------------
// Connection table
// ------------------------------------------------------------------------------------------

VerbsInterface::Connection* VerbsInterface::add_connection(uint64_t peer_uid, State state,
                                                           uint16_t* index, std::string* why) {
    Connection* c = conns_.add();
    if (c == nullptr) {
        *why = "verbs: " + std::to_string(max_connections_) + " connections in use";
        return nullptr;
    }
    c->state = state;
    c->peer_uid = peer_uid;
    c->psn = random_psn();
    c->ring.resize(config_.sq_depth);
    credit_words_[c->index] = 0;
    *index = c->index;
    if (state != State::kReady) ++handshakes_;
    return c;
}

VerbsInterface::Connection* VerbsInterface::lookup(uint16_t index, uint32_t generation) const {
    return conns_.lookup(index, generation);
}

VerbsInterface::Connection* VerbsInterface::by_qpn(uint32_t qpn) const {
    auto it = qpn_to_conn_.find(qpn);
    return it == qpn_to_conn_.end() ? nullptr : conns_[it->second].get();
}

Status VerbsInterface::create_qp(Connection* c, std::string* why) {
    if (!c->in_group) {
        Status s = join_group(c, why);
        if (s != Status::kOk) return s;
    }
    const Group& g = groups_[c->group];
    ibv_qp_init_attr qa{};
    qa.send_cq = g.cq;
    qa.recv_cq = g.cq;
    qa.srq = g.srq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = config_.sq_depth;
    qa.cap.max_send_sge = 2;
    qa.cap.max_inline_data = max_inline_;
    c->qp = ibv_create_qp(pd_, &qa);
    if (c->qp == nullptr) {
        *why = std::string("verbs: ibv_create_qp: ") + std::strerror(errno);
        return Status::kIoError;
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = dev_.port;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(c->qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        *why = std::string("verbs: QP to INIT: ") + std::strerror(errno);
        return Status::kIoError;
    }
    qpn_to_conn_[c->qp->qp_num] = c->index;
    return Status::kOk;
}

Status VerbsInterface::qp_to_rts(Connection* c, const CmMessage& peer, std::string* why) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = std::min(dev_.port_attr.active_mtu, mtu_enum(peer.mtu));
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = dev_.port;
    a.ah_attr.dlid = peer.lid;
    if (peer.is_global != 0) {
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
        a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_.gid_index);
        a.ah_attr.grh.hop_limit = 64;
    }
    if (ibv_modify_qp(c->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        *why = std::string("verbs: QP to RTR: ") + std::strerror(errno);
        return Status::kIoError;
    }
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTS;
    // 4.096 us * 2^14 = 67 ms per try, 7 tries: a peer that vanished without closing its
    // handshake socket is reported within about half a second of a send.
    r.timeout = 14;
    r.retry_cnt = 7;
    r.rnr_retry = 7;  // credits prevent RNR; should one happen anyway, retry rather than fail
    r.sq_psn = c->psn;
    r.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    if (ibv_modify_qp(c->qp, &r,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        *why = std::string("verbs: QP to RTS: ") + std::strerror(errno);
        return Status::kIoError;
    }
    c->window = CreditWindow(static_cast<uint16_t>(peer.rx_credits));
    c->peer_qpn = peer.qpn;
    std::memcpy(c->peer_gid, peer.gid, sizeof(c->peer_gid));
    c->peer_max_message = peer.max_message;
    c->remote_credit_addr = peer.credit_addr;
    c->remote_credit_rkey = peer.credit_rkey;
    return Status::kOk;
}

CmMessage VerbsInterface::local_half(const Connection* c, CmType type) const {
    CmMessage m{};
    m.magic = kCmMagic;
    m.version = kCmVersion;
    m.type = static_cast<uint8_t>(type);
    m.mtu = static_cast<uint8_t>(dev_.port_attr.active_mtu);
    m.is_global = dev_.is_global ? 1 : 0;
    m.uid = uid_;
    m.qpn = c->qp != nullptr ? c->qp->qp_num : 0;
    m.psn = c->psn;
    std::memcpy(m.gid, dev_.gid.data(), 16);
    m.lid = dev_.port_attr.lid;
    m.rx_credits = c->credits;
    m.credit_addr = reinterpret_cast<uint64_t>(&credit_words_[c->index]);
    m.credit_rkey = credit_mr_->rkey;
    m.max_message = static_cast<uint32_t>(config_.seg_size);
    return m;
}

// ------------------------------------------------------------------------------------------
// Connect (active side)
// ------------------------------------------------------------------------------------------

Status VerbsInterface::connect(uint64_t remote_uid, const uint8_t* section, size_t length,
                               bool want_pio, std::unique_ptr<Endpoint>* out, std::string* why) {
    return connect_lane(remote_uid, section, length, want_pio, false, out, why);
}

Status VerbsInterface::connect_lane(uint64_t remote_uid, const uint8_t* section, size_t length,
                                    bool want_pio, bool pio_first, std::unique_ptr<Endpoint>* out,
                                    std::string* why) {
    AddressSection peer{};
    if (section == nullptr || length != sizeof(peer)) {
        *why = "verbs: address section has the wrong size";
        return Status::kMalformed;
    }
    std::memcpy(&peer, section, sizeof(peer));
    if (peer.version != 1 || (peer.family != 4 && peer.family != 6) || peer.port == 0 ||
        peer.max_message < 64 || peer.rx_credits == 0 || peer.rx_credits > 0x7FFF) {
        *why = "verbs: malformed address section";
        return Status::kMalformed;
    }
    uint16_t index = 0;
    Connection* c = add_connection(remote_uid, State::kConnecting, &index, why);
    if (c == nullptr) return Status::kNoResource;
    const uint32_t generation = c->generation;
    std::memcpy(c->peer_gid, peer.gid, sizeof(c->peer_gid));  // a crossing request must match
    auto abandon = [&](Status s) {
        close_connection(c);
        return s;
    };
    // The peer already connected to us: ask it to share that connection instead (its answer
    // comes from its listener, so it is the peer itself that confirms the QP is its own). The
    // request still carries a QP of ours, for the case it says no; its receive buffers are
    // granted only then (before that QP can receive anything).
    Connection* shared = join_candidate(remote_uid, peer.gid);
    Status s = create_qp(c, why);
    if (s == Status::kOk && shared == nullptr) s = grant_receives(c, initial_credits(), why);
    std::string pio_window;
    if (s == Status::kOk) s = take_dm_slot(c, want_pio, pio_first, &pio_window);
    if (s != Status::kOk) return abandon(s);

    const common::SocketAddress to =
        common::SocketAddress::from_ip(peer.family, peer.ip, peer.port);
    const common::SocketDeadline deadline = after_ms(config_.connect_timeout_ms);
    std::string error;
    Status cs = common::connect_with_deadline(to, deadline, &c->cm_fd, &error);
    if (cs != Status::kOk) {
        *why = "verbs: handshake: " + error;
        return abandon(cs == Status::kIoError ? Status::kIoError : Status::kUnreachable);
    }
    const int fd = c->cm_fd.get();
    common::set_nodelay(fd);
    CmMessage request = local_half(c, CmType::kRequest);
    if (common::auth_nonce(c->cm_nonce) != Status::kOk) {
        *why = "verbs: no random nonce for the handshake (getrandom failed)";
        return abandon(Status::kIoError);
    }
    std::memcpy(request.nonce, c->cm_nonce, sizeof(request.nonce));
    if (shared != nullptr) {
        request.rx_credits = initial_credits();  // what a new connection would grant
        request.join_qpn = shared->peer_qpn;
        request.join_peer_qpn = shared->qp->qp_num;
        shared->join_pending = true;
        c->joining = true;
        c->join_index = shared->index;
        c->join_generation = shared->generation;
    }
    if (!config_.auth_key.empty()) {
        sign(config_.auth_key, kRequestLabel, c->cm_nonce, kZeroNonce, &request);
    }
    if (common::write_all(fd, &request, sizeof(request), deadline, &error) != Status::kOk) {
        *why = "verbs: sending the handshake to " + to.text() + ": " + error;
        return abandon(Status::kUnreachable);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = cm_tag(index, generation);
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);
    const LaneAttr attr = lane_attr(c, peer.max_message, peer.rx_credits, pio_window);
    auto ep = std::make_unique<VerbsEndpoint>(this, index, generation, remote_uid, true, attr);
    c->owner_ep = ep.get();
    *out = std::move(ep);
    return Status::kOk;
}

Endpoint* VerbsInterface::reply_endpoint(uint16_t sender) {
    if (sender >= conns_.size() || !conns_[sender]) return nullptr;
    Connection* c = conns_[sender].get();
    if (c->state != State::kReady) return nullptr;
    if (c->owner_ep != nullptr && !c->owner_ep->disconnected_) return c->owner_ep;
    if (!c->reply_ep) {
        // Our endpoint on it went away while the peer's still holds it: answers go on a
        // borrowed lane.
        const LaneAttr attr =
            lane_attr(c, c->peer_max_message, c->window.capacity(),
                      "inline only: a reply lane (device-memory slots go to endpoints this worker "
                      "creates)");
        c->reply_ep = std::make_unique<VerbsEndpoint>(this, c->index, c->generation, c->peer_uid,
                                                      false, attr);
    }
    return c->reply_ep.get();
}

VerbsInterface::Connection* VerbsInterface::join_candidate(uint64_t remote_uid,
                                                           const uint8_t* gid) const {
    // A connection the peer made to us, that it still holds and we hold no endpoint on.
    for (const auto& c : conns_) {
        if (c && c->accepted && c->state == State::kReady && c->remote_owner &&
            c->owner_ep == nullptr && !c->bye_sent && !c->join_pending && c->qp != nullptr &&
            c->peer_uid == remote_uid && std::memcmp(c->peer_gid, gid, 16) == 0) {
            return c.get();
        }
    }
    return nullptr;
}

bool VerbsInterface::accept_join(Connection* c, const CmMessage& m) {
    // Our QP join_qpn must be one we connected, still held by our endpoint, talking to the
    // requester's QP join_peer_qpn on its GID: then the requester really is the peer of that
    // connection, and its endpoint joins ours (the request came to our listener, so nobody
    // else can make us answer for a QP that is not ours).
    Connection* x = by_qpn(m.join_qpn);
    if (x == nullptr || x->accepted || x->state != State::kReady || x->bye_sent || x->closing ||
        x->remote_owner || x->peer_qpn != m.join_peer_qpn || x->peer_uid != m.uid ||
        std::memcmp(x->peer_gid, m.gid, 16) != 0) {
        return false;
    }
    CmMessage reply = local_half(x, CmType::kReply);
    reply.join_qpn = m.join_qpn;
    reply.join_peer_qpn = m.join_peer_qpn;
    if (common::auth_nonce(reply.nonce) != Status::kOk) return false;
    if (!config_.auth_key.empty())
        sign(config_.auth_key, kReplyLabel, m.nonce, reply.nonce, &reply);
    std::string error;
    if (common::write_all(c->cm_fd.get(), &reply, sizeof(reply), after_ms(1000), &error) !=
        Status::kOk) {
        log_printf(LogLevel::kWarn, "verbs: cannot answer a join: %s", error.c_str());
        return true;  // the requester sees the socket close; nothing was shared
    }
    x->remote_owner = true;
    return true;
}

void VerbsInterface::answer_with_redirect(Connection* c, Connection* mine, const CmMessage& m) {
    // Our connection to the requester stays; its endpoint is to use it too (it arrives, or
    // has arrived, at its listener: our request went out when our endpoint was created).
    CmMessage redirect = local_half(mine, CmType::kRedirect);
    if (common::auth_nonce(redirect.nonce) != Status::kOk) return;  // it sees the socket close
    if (!config_.auth_key.empty())
        sign(config_.auth_key, kReplyLabel, m.nonce, redirect.nonce, &redirect);
    std::string error;
    if (common::write_all(c->cm_fd.get(), &redirect, sizeof(redirect), after_ms(1000), &error) !=
        Status::kOk) {
        log_printf(LogLevel::kWarn, "verbs: cannot answer a crossing connect: %s", error.c_str());
        return;  // the requester sees the socket close; nothing was shared
    }
    mine->remote_owner = true;  // kept open after our goodbye until the requester's
    log_printf(LogLevel::kDebug,
               "verbs: worker %016llx connected to us while we connected to it: redirected to our "
               "connection %u (QP %u)",
               static_cast<unsigned long long>(m.uid), mine->index, redirect.qpn);
}

void VerbsInterface::finish_join(Connection* c, const CmMessage& m) {
    // The peer agreed: our endpoint moves onto the connection it made to us, and the QP we
    // made for the request goes.
    Connection* shared = lookup(c->join_index, c->join_generation);
    c->joining = false;
    if (shared != nullptr) shared->join_pending = false;
    const bool valid = shared != nullptr && shared->state == State::kReady &&
                       shared->owner_ep == nullptr && !shared->bye_sent &&
                       shared->peer_qpn == m.join_qpn && shared->qp != nullptr &&
                       shared->qp->qp_num == m.join_peer_qpn;
    if (valid && c->owner_ep == nullptr) {
        // Our endpoint went away while the join was pending: the peer counts us as an owner
        // now, so give the connection back the way an owner does (a goodbye).
        disconnect(shared);
        close_connection(c);
        return;
    }
    if (!valid) {
        if (shared != nullptr && shared->bye_received && shared->owner_ep == nullptr) {
            close_connection(shared);  // released by the peer while we waited
        }
        fail(c, Status::kConnectionReset, "the connection it joined is gone");
        return;
    }
    VerbsEndpoint* ep = c->owner_ep;
    c->owner_ep = nullptr;
    ep->conn_ = shared->index;
    ep->generation_ = shared->generation;
    shared->owner_ep = ep;
    shared->dm = std::move(c->dm);  // its device-memory slot, if it got one
    if (shared->bye_received) shared->remote_owner = false;
    close_connection(c);
}

uint64_t VerbsInterface::sender_uid(uint16_t sender) const {
    if (sender >= conns_.size() || !conns_[sender]) return 0;
    return conns_[sender]->peer_uid;
}

uint64_t VerbsInterface::sender_key(uint16_t sender) const {
    if (sender >= conns_.size() || !conns_[sender]) return 0;
    return connection_key(sender, conns_[sender]->generation);
}

// ------------------------------------------------------------------------------------------
// Handshake sockets
// ------------------------------------------------------------------------------------------

void VerbsInterface::poll_cm() {
    epoll_event events[16];
    const int n = epoll_wait(epoll_fd_.get(), events, 16, 0);
    for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
            accept_all();
        } else if (tag == kChannelTag) {
            disarm();  // consume completion events; the CQ itself is polled by progress()
        } else if (Connection* c = lookup(static_cast<uint16_t>(tag & 0xFFFF),
                                          static_cast<uint32_t>(tag >> 16))) {
            on_cm_readable(c);
        }
    }
    if (!redirects_.empty()) attach_redirected();
}

void VerbsInterface::accept_all() {
    for (;;) {
        common::UniqueFd fd;
        std::string why;
        const Status s = common::accept_one(listen_fd_.get(), &fd, nullptr, &why);
        if (s != Status::kOk) {
            // EMFILE and friends: the connection stays in the backlog; retried next time.
            if (s != Status::kInProgress) log_printf(LogLevel::kWarn, "verbs: %s", why.c_str());
            return;
        }
        uint16_t index = 0;
        Connection* c = add_connection(0, State::kAccepting, &index, &why);
        if (c == nullptr) {
            // The socket closes here: the peer sees its handshake fail.
            log_printf(LogLevel::kWarn, "%s: refusing a connection", why.c_str());
            continue;
        }
        common::set_nodelay(fd.get());
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.u64 = cm_tag(index, c->generation);
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev);
        c->cm_fd = std::move(fd);
    }
}

void VerbsInterface::on_cm_readable(Connection* c) {
    bool eof = false;
    if (c->cm_in_len < sizeof(c->cm_in)) {
        ssize_t n =
            recv(c->cm_fd.get(), c->cm_in + c->cm_in_len, sizeof(c->cm_in) - c->cm_in_len, 0);
        if (n > 0) c->cm_in_len += static_cast<size_t>(n);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) eof = true;
    } else {
        // After the handshake nothing more is expected: only EOF (or garbage) can arrive.
        uint8_t scratch[64];
        ssize_t n = recv(c->cm_fd.get(), scratch, sizeof(scratch), 0);
        if (n >= 0 || (errno != EAGAIN && errno != EINTR)) eof = true;
    }
    if (c->state == State::kReady || c->state == State::kFailed) {
        if (!eof) return;
        // The goodbye travels through the QP ahead of the socket's close; look for it in the
        // CQ before calling this a failure.
        const uint16_t index = c->index;
        const uint32_t generation = c->generation;
        drain_cq();
        c = lookup(index, generation);
        if (c == nullptr) return;  // closed by the goodbye
        if (c->closing) {
            finish_close(c);
        } else {
            fail(c, Status::kConnectionReset, "the peer closed its handshake connection");
            epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->cm_fd.get(), nullptr);
        }
        return;
    }
    if (eof && c->cm_in_len < sizeof(CmMessage)) {
        if (c->state == State::kConnecting) {
            fail(c, Status::kConnectionReset, "the peer closed the handshake");
            epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->cm_fd.get(), nullptr);
        } else {
            close_connection(c);  // an accepted socket that never said anything
        }
        return;
    }
    if (c->cm_in_len < sizeof(CmMessage)) return;
    CmMessage m{};
    std::memcpy(&m, c->cm_in, sizeof(m));
    const bool accepting = c->state == State::kAccepting;
    const char* bad = accepting ? validate(m, CmType::kRequest) : validate_answer(m);
    std::string why;
    Status s = Status::kOk;
    bool auth_failed = false;  // logged as an error: someone without our key knocked
    if (bad != nullptr) {
        why = std::string("verbs: handshake: ") + bad;
        s = Status::kMalformed;
    } else if (m.max_message < 64) {
        s = Status::kMalformed;
    } else if (!config_.auth_key.empty()) {
        // Checked before a QP is made for it (acceptor) or moved to RTS (connector).
        const bool ok = accepting
                            ? signed_by(config_.auth_key, kRequestLabel, m.nonce, kZeroNonce, m)
                            : signed_by(config_.auth_key, kReplyLabel, c->cm_nonce, m.nonce, m);
        if (!ok) {
            char uid[20];
            std::snprintf(uid, sizeof(uid), "%016llx", static_cast<unsigned long long>(m.uid));
            why = std::string("verbs: authentication failed (") +
                  (accepting ? "claimed worker " : "worker ") + uid +
                  (has_proof(m) ? "): its proof does not match our key"
                                : "): it sent no proof (it has no key)");
            s = accepting ? Status::kConnectionReset : Status::kUnreachable;
            auth_failed = true;
        }
    } else if (!accepting && has_proof(m)) {
        why = "verbs: the peer requires a key (SWY_AUTH_KEY) and we have none";
        s = Status::kUnreachable;
    }
    // Crossing connects: decided only now, with the request's proof checked (a redirect
    // marks our connection as the requester's too, so an unproven claim must not get one).
    if (s == Status::kOk && accepting && m.join_qpn == 0) {
        if (Connection* mine = wins_crossing(m)) {
            answer_with_redirect(c, mine, m);
            close_connection(c);  // no QP was made for the request
            return;
        }
    }
    if (s == Status::kOk && !accepting && m.type == static_cast<uint8_t>(CmType::kRedirect)) {
        s = follow_redirect(c, m, &why);  // checked the reply's proof above
        if (s == Status::kOk) return;
    }
    if (s == Status::kOk && accepting && m.join_qpn != 0 && accept_join(c, m)) {
        close_connection(c);  // the requester shares the connection we made: no new QP
        return;
    }
    if (s == Status::kOk && !accepting && m.join_qpn != 0) {
        if (c->joining) {
            finish_join(c, m);
            return;
        }
        why = "verbs: handshake: the peer joined a connection we never offered";
        s = Status::kMalformed;
    }
    if (s == Status::kOk && !accepting && c->joining) {
        release_join(c);  // a connection of its own after all: its buffers, as the request said
        s = grant_receives(c, initial_credits(), &why);
    }
    if (s == Status::kOk && accepting) {
        c->peer_uid = m.uid;
        c->accepted = true;
        c->remote_owner = true;
        s = create_qp(c, &why);
        if (s == Status::kOk) s = grant_receives(c, initial_credits(), &why);
    }
    if (s == Status::kOk) s = qp_to_rts(c, m, &why);
    if (s == Status::kOk && accepting) {
        CmMessage reply = local_half(c, CmType::kReply);
        if (common::auth_nonce(reply.nonce) != Status::kOk) {
            why = "verbs: no random nonce for the handshake (getrandom failed)";
            s = Status::kIoError;
        } else {
            if (!config_.auth_key.empty()) {
                sign(config_.auth_key, kReplyLabel, m.nonce, reply.nonce, &reply);
            }
            std::string error;
            if (common::write_all(c->cm_fd.get(), &reply, sizeof(reply), after_ms(1000), &error) !=
                Status::kOk) {
                why = "verbs: cannot answer the handshake: " + error;
                s = Status::kConnectionReset;
            }
        }
    }
    if (s != Status::kOk) {
        log_printf(auth_failed ? LogLevel::kError : LogLevel::kWarn, "%s", why.c_str());
        if (accepting) {
            close_connection(c);
        } else {
            fail(c, s, "handshake failed");
        }
        return;
    }
    if (accepting) {
        const LaneAttr attr =
            lane_attr(c, m.max_message, m.rx_credits,
                      "inline only: a reply lane (device-memory slots go to endpoints this worker "
                      "creates)");
        c->reply_ep = std::make_unique<VerbsEndpoint>(this, c->index, c->generation, c->peer_uid,
                                                      false, attr);
    }
    c->state = State::kReady;
    --handshakes_;
    if (eof) on_cm_readable(c);  // the peer is already gone
}

// ------------------------------------------------------------------------------------------
// Close and failure
// ------------------------------------------------------------------------------------------

void VerbsInterface::disconnect(Connection* c) {
    if (c->closing || c->bye_sent) return;
    // A redirected connect stays until the peer's connection arrives: the peer counts our
    // endpoint as an owner of it, so it is given back with a goodbye (attach_redirected).
    if (c->redirected) return;
    if (c->state != State::kReady) {
        close_connection(c);
        return;
    }
    // The goodbye goes through the QP, after everything sent so far, into the one receive
    // buffer the peer keeps for it (no credit needed). Signaled: its completion means the peer
    // has it, and then the connection is closed, unless the peer still holds an endpoint on
    // it: then it stays, as the lane our answers to that endpoint take, until its goodbye.
    c->bye_sent = true;
    c->closing = !c->remote_owner;
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(encode_imm(kAmBye, c->credit_return.freed()));
    wr.send_flags = IBV_SEND_SIGNALED;
    if (c->sq_used() >= config_.sq_depth || !post_send(c, &wr, -1, nullptr)) {
        finish_close(c);  // cannot say goodbye: the peer sees EOF (a failure report there)
    }
}

void VerbsInterface::release_join(Connection* c) {
    if (!c->joining) return;
    c->joining = false;
    Connection* shared = lookup(c->join_index, c->join_generation);
    if (shared == nullptr) return;
    shared->join_pending = false;
    // The peer released it while the join was pending (handle_receive kept it for us).
    if (shared->bye_received && shared->owner_ep == nullptr) close_connection(shared);
}

void VerbsInterface::finish_close(Connection* c) {
    if (c->owner_ep != nullptr) c->owner_ep->disconnected_ = true;
    close_connection(c);
}

void VerbsInterface::close_connection(Connection* c) {
    const uint16_t index = c->index;
    release_join(c);
    if (c->state == State::kConnecting || c->state == State::kAccepting) --handshakes_;
    if (c->cm_fd) epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->cm_fd.get(), nullptr);
    if (c->qp != nullptr) {
        qpn_to_conn_.erase(c->qp->qp_num);
        ibv_destroy_qp(c->qp);
    }
    for (uint32_t seq = c->sq_retired; seq != c->sq_posted; ++seq) {
        const WrSlot& slot = c->ring[seq % config_.sq_depth];
        if (slot.bounce >= 0) bounce_free_.push_back(slot.bounce);
    }
    leave_group(c);
    for (auto& op : c->ops) {
        std::erase(rdma_backlog_, op.get());
    }
    if (c->owner_ep != nullptr) c->owner_ep->disconnected_ = true;
    std::erase(credit_due_, index);
    std::erase(to_report_, index);
    conns_.erase(index);  // closes the handshake socket
}

void VerbsInterface::fail(Connection* c, Status why, const char* what) {
    release_join(c);
    if (c->state == State::kConnecting || c->state == State::kAccepting) --handshakes_;
    const bool was_failed = c->state == State::kFailed;
    c->state = State::kFailed;
    if (!was_failed) {
        log_printf(LogLevel::kInfo, "verbs: connection to %016llx failed: %s (%s)",
                   static_cast<unsigned long long>(c->peer_uid), what, status_text(why));
        // Flush everything posted: the flushed completions release bounce buffers and fail
        // the RDMA operations (their callbacks run from progress).
        if (c->qp != nullptr) {
            ibv_qp_attr a{};
            a.qp_state = IBV_QPS_ERR;
            ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
        }
        for (auto& op : c->ops) {
            if (op->status == Status::kOk) op->status = why;
            std::erase(rdma_backlog_, op.get());
            op->posted = op->length;  // nothing more is posted
        }
    }
    if (!c->reported && c->peer_uid != 0) {
        c->reported = true;
        to_report_.push_back(c->index);
    }
}

void VerbsInterface::report_failures() {
    std::vector<uint16_t> list;
    list.swap(to_report_);
    for (uint16_t index : list) {
        if (index >= conns_.size() || !conns_[index]) continue;
        sink_->on_remote_failure(index_, connection_key(index, conns_[index]->generation),
                                 Status::kConnectionReset);
    }
}

}  // namespace swy::tl::verbs
