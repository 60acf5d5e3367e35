// Worker side of connection establishment: the connection manager's hooks into the worker's
// endpoint list and event fd (see listener.h).
#include <sys/epoll.h>

#include "core/listener.h"
#include "core/worker.h"

namespace swy::core {

Status Worker::conn_manager(ConnManager** out, std::string* why) {
    if (conn_ == nullptr) {
        std::unique_ptr<ConnManager> m;
        Status s = ConnManager::create(this, &m, why);
        if (s != Status::kOk) return s;
        // Inside the worker's epoll set, so swy_worker_wait() wakes up for handshakes too.
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = m->event_fd();
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, m->event_fd(), &ev);
        conn_ = std::move(m);
        note_side_work();  // progressed on every poll from now on
    }
    *out = conn_.get();
    return Status::kOk;
}

Endpoint* Worker::add_unwired_endpoint(const swy_ep_params_t& params) {
    Endpoint* ep = endpoint_slots_.make(this, params);
    ep->next_in_worker = endpoints_;
    if (endpoints_ != nullptr) endpoints_->prev_in_worker = ep;
    endpoints_ = ep;
    return ep;
}

Status Worker::wire_endpoint(Endpoint* ep, const std::vector<uint8_t>& address, uint32_t flags,
                             std::string* why) {
    if (ep->closed || ep->failed()) return Status::kEndpointClosed;
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_FLAGS;
    p.remote_address = address.data();
    p.remote_address_length = address.size();
    p.flags = flags;
    Endpoint* out = nullptr;
    Status s = create_endpoint(p, &out, why, ep);
    if (s == Status::kOk && !ep->pending().empty()) mark_pending(ep);
    return s;
}

bool Worker::has_live_endpoint_to(uint64_t uid) const {
    for (const Endpoint* ep = endpoints_; ep != nullptr; ep = ep->next_in_worker) {
        if (ep->wired() && !ep->closed && !ep->failed() && ep->remote_uid() == uid) return true;
    }
    return false;
}

Endpoint* Worker::wired_endpoint_of(PeerRef peer) const {
    for (Endpoint* ep = endpoints_; ep != nullptr; ep = ep->next_in_worker) {
        if (ep->wired() && !ep->closed && !ep->failed() && ep->peer() == peer) return ep;
    }
    return nullptr;
}

void Worker::endpoint_deleted(const Endpoint* ep) {
    if (conn_ != nullptr) conn_->forget_endpoint(ep);
}

}  // namespace swy::core
