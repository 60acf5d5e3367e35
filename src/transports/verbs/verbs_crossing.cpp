// Verbs transport: crossing connects. Two workers that create endpoints to each other at once
// each send a request before either has seen the other's, so joining (verbs_conn.cpp) cannot
// apply: each would accept the other's request and the pair would hold two RC connections.
//
// The tie-break is the one tcp uses: the connection made by the worker with the lower uid is
// kept. That worker (the winner) answers the other's request with a redirect naming its QP of
// its own connection, instead of making a QP for the request; it decides only once the request
// has passed validation and, with a key, its proof (a redirect makes our connection the
// requester's too, so an unproven claim must not get one). The loser checks the redirect's
// proof as it would a reply's, and that the redirect comes from the worker it connected to and
// that this worker does win the tie-break; then it destroys its QP (still in INIT: nothing was
// ever sent or received on it) and its endpoint waits, as a connecting endpoint does (sends
// return kNoResource and stay queued in the worker, in order), for the winner's connection,
// which the winner's request brings to its listener (that request went out when the winner's
// endpoint was created, before it could see ours). Once that connection is up, the endpoint
// moves onto it and the queued sends go there: nothing was sent on the losing connection, so
// nothing is lost or reordered. Both workers' endpoints then own the one connection, as after
// a join.
#include <sys/epoll.h>

#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "transports/verbs/verbs_connection.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

VerbsInterface::Connection* VerbsInterface::wins_crossing(const CmMessage& request) const {
    // Equal uids (a peer claiming ours) break no tie: answered as usual.
    if (!(uid_ < request.uid)) return nullptr;
    // A connection our endpoint made to the requester, that it holds, that the requester does
    // not share yet (nor asked to), and whose address names the requester's GID.
    for (const auto& c : conns_) {
        if (c && !c->accepted && c->peer_uid == request.uid &&
            (c->state == State::kConnecting || c->state == State::kReady) && c->qp != nullptr &&
            c->owner_ep != nullptr && !c->owner_ep->disconnected_ && !c->remote_owner &&
            !c->joining && !c->redirected && !c->bye_sent && !c->bye_received && !c->closing &&
            std::memcmp(c->peer_gid, request.gid, sizeof(c->peer_gid)) == 0) {
            return c.get();
        }
    }
    return nullptr;
}

Status VerbsInterface::follow_redirect(Connection* c, const CmMessage& m, std::string* why) {
    if (c->joining || c->redirected) {
        *why = "verbs: handshake: a redirect answered a join";
        return Status::kMalformed;
    }
    if (m.uid != c->peer_uid || std::memcmp(m.gid, c->peer_gid, sizeof(c->peer_gid)) != 0) {
        *why = "verbs: handshake: redirected by another worker than the one we connected to";
        return Status::kMalformed;
    }
    if (!(m.uid < uid_)) {
        *why = "verbs: handshake: redirected by a worker that does not win the tie-break";
        return Status::kMalformed;
    }
    // The handshake is over (the peer closes its side); our QP never left INIT.
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->cm_fd.get(), nullptr);
    c->cm_fd.reset();
    if (c->qp != nullptr) {
        qpn_to_conn_.erase(c->qp->qp_num);
        ibv_destroy_qp(c->qp);
        c->qp = nullptr;
    }
    leave_group(c);  // its receive buffers go back to the group's pool
    c->credits = 0;
    c->redirected = true;
    c->redirect_qpn = m.qpn;
    c->redirect_deadline_ns =
        common::monotonic_coarse_ns() + config_.connect_timeout_ms * 1'000'000;
    redirects_.emplace_back(c->index, c->generation);
    log_printf(LogLevel::kDebug,
               "verbs: worker %016llx connects to us too and keeps its connection (QP %u): "
               "our endpoint moves onto it once it is up",
               static_cast<unsigned long long>(m.uid), m.qpn);
    return Status::kOk;
}

VerbsInterface::Connection* VerbsInterface::redirect_target(const Connection* c) const {
    // The connection the winner made to us: its QP on the winner's side is the one named.
    for (const auto& x : conns_) {
        if (x && x->accepted && x->qp != nullptr && x->peer_qpn == c->redirect_qpn &&
            x->peer_uid == c->peer_uid &&
            std::memcmp(x->peer_gid, c->peer_gid, sizeof(x->peer_gid)) == 0) {
            return x.get();
        }
    }
    return nullptr;
}

bool VerbsInterface::awaited_by_redirect(const Connection* target) const {
    for (const auto& [index, generation] : redirects_) {
        const Connection* c = lookup(index, generation);
        if (c != nullptr && c->redirected && redirect_target(c) == target) return true;
    }
    return false;
}

void VerbsInterface::attach_redirected() {
    const uint64_t now = common::monotonic_coarse_ns();
    std::vector<std::pair<uint16_t, uint32_t>> waiting;
    waiting.swap(redirects_);
    for (const auto& [index, generation] : waiting) {
        Connection* c = lookup(index, generation);
        if (c == nullptr || !c->redirected) continue;
        VerbsEndpoint* ep = c->owner_ep;
        const bool owner_gone = ep == nullptr || ep->disconnected_;
        Connection* x = redirect_target(c);
        if (x != nullptr && x->state == State::kFailed) {
            c->redirected = false;
            if (owner_gone) {
                close_connection(c);
            } else {
                fail(c, Status::kConnectionReset, "the connection it was redirected to failed");
            }
            continue;
        }
        // Not here yet, not up yet, or a join of ours may still take it: look again later.
        const bool ready = x != nullptr && x->state == State::kReady && !x->join_pending;
        if (!ready) {
            if (now < c->redirect_deadline_ns) {
                redirects_.emplace_back(index, generation);
                continue;
            }
            c->redirected = false;
            if (owner_gone) {
                close_connection(c);
            } else {
                fail(c, Status::kUnreachable,
                     "the peer redirected it to a connection that did not come within the "
                     "connect timeout");
            }
            continue;
        }
        if (x->owner_ep != nullptr || x->bye_sent || x->closing) {
            // Ours already (the peer would not redirect to a connection we share): refuse.
            c->redirected = false;
            if (owner_gone) {
                close_connection(c);
            } else {
                fail(c, Status::kConnectionReset, "redirected to a connection already in use");
            }
            continue;
        }
        c->redirected = false;
        if (owner_gone) {
            // The peer counts our endpoint as an owner: give the connection back the way an
            // owner does.
            disconnect(x);
            close_connection(c);
            continue;
        }
        c->owner_ep = nullptr;
        ep->conn_ = x->index;
        ep->generation_ = x->generation;
        x->owner_ep = ep;
        x->dm = std::move(c->dm);                      // its device-memory slot, if it got one
        if (x->bye_received) x->remote_owner = false;  // the peer's endpoint already left
        log_printf(LogLevel::kDebug, "verbs: endpoint to worker %016llx moved to connection %u",
                   static_cast<unsigned long long>(x->peer_uid), x->index);
        close_connection(c);
    }
}

}  // namespace swy::tl::verbs
