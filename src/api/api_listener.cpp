// C API: listeners, connection requests, and endpoints created through them.
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "api/api_guard.h"
#include "api/api_listener.h"
#include "core/listener.h"

using namespace swy;
using api::WorkerGuard;

namespace {
core::Listener* listener_of(swy_listener_h l) { return reinterpret_cast<core::Listener*>(l); }
core::ConnRequest* request_of(swy_conn_request_h r) {
    return reinterpret_cast<core::ConnRequest*>(r);
}

swy_status_t log_failure(const char* function, Status s, const std::string& why) {
    common::log_printf(common::LogLevel::kError, "%s: %s", function, why.c_str());
    return api::to_c(s);
}
}  // namespace

namespace swy::api {

swy_status_t ep_create_connected(swy_worker_h worker, const swy_ep_params_t* params, swy_ep_h* ep) {
    const bool sockaddr = (params->flags & SWY_EP_FLAG_SOCKADDR) != 0;
    if (params->remote_address != nullptr) {
        return invalid("swy_ep_create",
                       "remote_address must be NULL with SOCKADDR or CONN_REQUEST");
    }
    if (!sockaddr && params->conn_request == nullptr) {
        return invalid("swy_ep_create", "SWY_EP_FLAG_CONN_REQUEST without conn_request");
    }
    core::Worker* w = worker_of(worker);
    WorkerGuard guard(w);
    core::ConnManager* m = nullptr;
    std::string why;
    Status s = w->conn_manager(&m, &why);
    if (s != Status::kOk) return log_failure("swy_ep_create", s, why);
    core::Endpoint* e = nullptr;
    if (sockaddr) {
        s = m->connect(*params, &e, &why);
    } else {
        core::ConnRequest* r = m->offered_request(params->conn_request);
        if (r == nullptr) {
            return invalid("swy_ep_create",
                           "conn_request is not a request waiting for an "
                           "answer on this worker (already answered, or its listener is gone)");
        }
        s = m->accept_request(r, *params, &e, &why);
    }
    if (s != Status::kOk) return log_failure("swy_ep_create", s, why);
    *ep = reinterpret_cast<swy_ep_h>(e);
    return SWY_OK;
}

}  // namespace swy::api

extern "C" {

swy_status_t swy_listener_create_v2(swy_worker_h worker, const swy_listener_params_t* params,
                                    swy_listener_h* listener) {
    if (worker == nullptr || params == nullptr || listener == nullptr) {
        return api::invalid("swy_listener_create", "worker, params and listener must not be NULL");
    }
    core::Worker* w = api::worker_of(worker);
    WorkerGuard guard(w);
    core::ConnManager* m = nullptr;
    std::string why;
    Status s = w->conn_manager(&m, &why);
    core::Listener* l = nullptr;
    if (s == Status::kOk) s = m->listen(*params, &l, &why);
    if (s != Status::kOk) return log_failure("swy_listener_create", s, why);
    *listener = reinterpret_cast<swy_listener_h>(l);
    return SWY_OK;
}

// The entry point of programs built against the header before flags and auth_key were
// appended to swy_listener_params_t: their struct ends after arg, so only that much is read.
#undef swy_listener_create
swy_status_t swy_listener_create(swy_worker_h worker, const swy_listener_params_t* params,
                                 swy_listener_h* listener) {
    if (params == nullptr) return swy_listener_create_v2(worker, params, listener);
    swy_listener_params_t p{};
    p.sockaddr = params->sockaddr;
    p.sockaddr_length = params->sockaddr_length;
    p.on_connect = params->on_connect;
    p.arg = params->arg;
    return swy_listener_create_v2(worker, &p, listener);
}

swy_status_t swy_listener_query(swy_listener_h listener, swy_listener_attr_t* attr) {
    if (listener == nullptr || attr == nullptr) return api::invalid(__func__, "NULL argument");
    core::Listener* l = listener_of(listener);
    WorkerGuard guard(l->manager->worker());
    *attr = swy_listener_attr_t{};
    std::memcpy(&attr->sockaddr, &l->bound, sizeof(l->bound));
    attr->sockaddr_length = l->bound_length;
    if (l->bound.ss_family == AF_INET) {
        attr->port = ntohs(reinterpret_cast<const sockaddr_in*>(&l->bound)->sin_port);
    } else {
        attr->port = ntohs(reinterpret_cast<const sockaddr_in6*>(&l->bound)->sin6_port);
    }
    return SWY_OK;
}

swy_status_t swy_listener_reject(swy_listener_h listener, swy_conn_request_h conn_request) {
    if (listener == nullptr || conn_request == nullptr) {
        return api::invalid(__func__, "NULL argument");
    }
    core::Listener* l = listener_of(listener);
    WorkerGuard guard(l->manager->worker());
    core::ConnRequest* r = l->manager->offered_request(conn_request);
    if (r == nullptr || r->listener != l) {
        return api::invalid(__func__, "not a request of this listener waiting for an answer");
    }
    l->manager->reject_request(r);
    return SWY_OK;
}

swy_status_t swy_conn_request_query(swy_conn_request_h conn_request,
                                    swy_conn_request_attr_t* attr) {
    if (conn_request == nullptr || attr == nullptr) return api::invalid(__func__, "NULL argument");
    core::ConnRequest* r = request_of(conn_request);
    *attr = swy_conn_request_attr_t{};
    std::memcpy(&attr->client_sockaddr, &r->peer, sizeof(r->peer));
    attr->client_sockaddr_length = r->peer_length;
    attr->client_worker_uid = r->peer_uid;
    return SWY_OK;
}

void swy_listener_destroy(swy_listener_h listener) {
    if (listener == nullptr) return;
    core::Listener* l = listener_of(listener);
    core::ConnManager* m = l->manager;
    WorkerGuard guard(m->worker());
    m->destroy_listener(l);
}

}  // extern "C"
