// --server PORT / --client HOST:PORT: the two processes meet through Switchyard's listener API
// (swy_listener_create / SWY_EP_FLAG_SOCKADDR), which exchanges the worker addresses; barriers
// are then tagged messages on the endpoint, and the peer is alive while the endpoint is.
#include <netdb.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "bootstrap.h"

namespace swy::perf {
namespace {

// Same "SWYPERF" tag space as runner.cpp; its tests use low bytes 0x01..0x13.
constexpr swy_tag_t kTagBarrier = 0x5357595045524600ull | 0xB1;
constexpr auto kPatience = std::chrono::seconds(30);  // as ucx_perftest: the server may be late

struct Accepting {
    swy_worker_h worker;
    swy_ep_params_t ep_template;
    swy_ep_h ep = nullptr;
    swy_status_t status = SWY_INPROGRESS;
};

void on_connect(swy_conn_request_h req, void* arg) {
    auto* a = static_cast<Accepting*>(arg);
    if (a->ep != nullptr) return;  // one client; later requests wait and are rejected at destroy
    swy_ep_params_t p = a->ep_template;
    p.field_mask |= SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_CONN_REQUEST;
    p.flags |= SWY_EP_FLAG_CONN_REQUEST;
    p.conn_request = req;
    a->status = swy_ep_create(a->worker, &p, &a->ep);
}

swy_listener_h listen_any(swy_worker_h worker, int port, Accepting* accepting) {
    // The IPv6 wildcard also takes IPv4 clients; a host without IPv6 falls back to IPv4.
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_any;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_addr.s_addr = htonl(INADDR_ANY);
    v4.sin_port = htons(static_cast<uint16_t>(port));
    swy_listener_params_t lp{};
    lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.on_connect = &on_connect;
    lp.arg = accepting;
    swy_listener_h listener = nullptr;
    lp.sockaddr = reinterpret_cast<const sockaddr*>(&v6);
    lp.sockaddr_length = sizeof(v6);
    if (swy_listener_create(worker, &lp, &listener) == SWY_OK) return listener;
    lp.sockaddr = reinterpret_cast<const sockaddr*>(&v4);
    lp.sockaddr_length = sizeof(v4);
    swy_status_t s = swy_listener_create(worker, &lp, &listener);
    if (s == SWY_OK) return listener;
    std::fprintf(stderr, "swy-perf: cannot listen on port %d: %s\n", port, swy_status_string(s));
    return nullptr;
}

// Progress until the endpoint is wired (SWY_OK) or has failed (its error).
swy_status_t wait_wired(swy_worker_h worker, swy_ep_h ep) {
    for (;;) {
        swy_worker_progress(worker);
        swy_ep_attr_t attr{};
        attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        if (swy_ep_query(ep, &attr) != SWY_OK || !attr.connected) return SWY_ERR_UNREACHABLE;
        if (attr.transport != nullptr && attr.transport[0] != '\0') return SWY_OK;
    }
}

void close_now(swy_worker_h worker, swy_ep_h ep, bool force) {
    swy_request_h req = nullptr;
    if (swy_ep_close_nb(ep, force ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &req) ==
        SWY_INPROGRESS) {
        swy_request_wait(worker, req);
        swy_request_free(req);
    }
}

}  // namespace

bool Bootstrap::connect_sockaddr(swy_worker_h worker, const swy_ep_params_t& ep_template,
                                 swy_ep_h* ep) {
    worker_ = worker;
    if (role_ == Role::kServer) {
        Accepting accepting{worker, ep_template};
        swy_listener_h listener = listen_any(worker, port_, &accepting);
        if (listener == nullptr) return false;
        while (accepting.status == SWY_INPROGRESS)
            swy_worker_progress(worker);
        swy_listener_destroy(listener);
        if (accepting.status != SWY_OK) {
            std::fprintf(stderr, "swy-perf: accepting the client: %s\n",
                         swy_status_string(accepting.status));
            return false;
        }
        ep_ = *ep = accepting.ep;
        return true;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port_);
    if (int e = ::getaddrinfo(host_.c_str(), service.c_str(), &hints, &res); e != 0) {
        std::fprintf(stderr, "swy-perf: cannot resolve %s: %s\n", host_.c_str(), gai_strerror(e));
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    swy_ep_h got = nullptr;
    while (got == nullptr && std::chrono::steady_clock::now() < deadline) {
        for (addrinfo* ai = res; ai != nullptr && got == nullptr; ai = ai->ai_next) {
            swy_ep_params_t p = ep_template;
            p.field_mask |= SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR |
                            SWY_EP_PARAM_FIELD_ERR_HANDLER;
            p.flags |= SWY_EP_FLAG_SOCKADDR;
            p.sockaddr = ai->ai_addr;
            p.sockaddr_length = ai->ai_addrlen;
            // Refusals are expected while the server starts: only the endpoint that got through
            // reports errors to the caller's callback.
            user_err_cb_ = ep_template.err_cb;
            user_err_arg_ = ep_template.err_arg;
            err_armed_ = false;
            p.err_cb = &Bootstrap::forward_error;
            p.err_arg = this;
            swy_ep_h candidate = nullptr;
            if (swy_ep_create(worker, &p, &candidate) != SWY_OK) continue;
            if (wait_wired(worker, candidate) == SWY_OK) {
                got = candidate;
                err_armed_ = true;
            } else {
                close_now(worker, candidate, true);
            }
        }
        if (got == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::freeaddrinfo(res);
    if (got == nullptr) {
        std::fprintf(stderr, "swy-perf: cannot connect to %s:%d\n", host_.c_str(), port_);
        return false;
    }
    ep_ = *ep = got;
    return true;
}

void Bootstrap::forward_error(void* arg, swy_ep_h ep, swy_status_t status) {
    auto* self = static_cast<Bootstrap*>(arg);
    if (self->err_armed_ && self->user_err_cb_ != nullptr) {
        self->user_err_cb_(self->user_err_arg_, ep, status);
    }
}

bool Bootstrap::barrier_sockaddr(const std::function<void()>& idle) {
    if (ep_ == nullptr) return true;  // closed by close_sockaddr(), which met the peer first
    char in = 0, out = 'b';
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = SWY_MEMTYPE_HOST;
    swy_request_h rreq = nullptr, sreq = nullptr;
    swy_status_t rs = swy_tag_recv_nb(worker_, &in, 1, kTagBarrier, ~swy_tag_t{0}, &params, &rreq);
    swy_status_t ss = swy_tag_send_nb(ep_, &out, 1, kTagBarrier, &params, &sreq);
    // A peer that met the barrier may exit right after its last send, and its lanes are two
    // connections with no order between them: the close of one can be seen before the data
    // still in flight on the other. Once it is gone, keep progressing a short while.
    std::chrono::steady_clock::time_point gone_deadline{};
    while ((rs == SWY_INPROGRESS && swy_request_test(rreq) == SWY_INPROGRESS) ||
           (ss == SWY_INPROGRESS && swy_request_test(sreq) == SWY_INPROGRESS)) {
        if (idle) idle();
        swy_worker_progress(worker_);
        if (!peer_alive()) {
            const auto now = std::chrono::steady_clock::now();
            if (gone_deadline == std::chrono::steady_clock::time_point{}) {
                gone_deadline = now + std::chrono::milliseconds(500);
            } else if (now > gone_deadline) {
                break;
            }
        }
    }
    if (rs == SWY_INPROGRESS) {
        rs = swy_request_test(rreq);
        if (rs == SWY_INPROGRESS) swy_request_cancel(worker_, rreq);
        swy_request_free(rreq);
    }
    if (ss == SWY_INPROGRESS) {
        ss = swy_request_test(sreq);
        swy_request_free(sreq);
    }
    const bool ok = rs == SWY_OK && ss == SWY_OK && in == 'b';
    if (!ok) {
        std::fprintf(stderr, "swy-perf: barrier failed: receive %s, send %s, peer %s\n",
                     swy_status_string(rs), swy_status_string(ss),
                     peer_alive_sockaddr() ? "alive" : "gone");
    }
    return ok;
}

bool Bootstrap::peer_alive_sockaddr() const {
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    return ep_ == nullptr || (swy_ep_query(ep_, &attr) == SWY_OK && attr.connected);
}

bool Bootstrap::close_sockaddr(bool force) {
    if (ep_ == nullptr) return true;
    // Meet the peer once more first: after this nothing is in flight either way, and the
    // barrier that main() runs after closing has no endpoint left to run on.
    bool ok = force || barrier_sockaddr({});
    close_now(worker_, std::exchange(ep_, nullptr), force || !ok);
    return ok;
}

}  // namespace swy::perf
