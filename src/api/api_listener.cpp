// C API: listeners, connection requests, and endpoints created through them.
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "api/api_guard.h"
#include "api/api_listener.h"
#include "api/api_params.h"
#include "core/listener.h"

using namespace swy;
using api::WorkerGuard;

namespace {
/// The live listener @p l names (generation-checked: a destroyed listener's handle gives
/// null), or null.
core::Listener* listener_of(swy_listener_h l) {
    return core::SlotArena<core::Listener>::resolve(reinterpret_cast<uintptr_t>(l));
}
core::ConnRequest* request_of(swy_conn_request_h r) {
    return core::SlotArena<core::ConnRequest>::resolve(reinterpret_cast<uintptr_t>(r));
}

/// SWY_OK with *out if @p h names a listener that is alive and whose worker this process may
/// use (not one inherited through fork()); else SWY_ERR_INVALID_PARAM, logged.
swy_status_t live_listener(const char* function, swy_listener_h h, core::Listener** out) {
    core::Listener* l = listener_of(h);
    if (l == nullptr) {
        return api::invalid(function, "listener is not a live listener (destroyed, or never one)");
    }
    if (!core::Worker::usable(l->manager->worker())) {
        return api::invalid(function,
                            "listener belongs to a worker this process inherited through fork()");
    }
    *out = l;
    return SWY_OK;
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
    *ep = handle_of(e);
    return SWY_OK;
}

}  // namespace swy::api

extern "C" {

swy_status_t swy_listener_create(swy_worker_h worker, const swy_listener_params_t* in,
                                 swy_listener_h* listener) {
    if (worker == nullptr || in == nullptr || listener == nullptr) {
        return api::invalid(__func__, "worker, params and listener must not be NULL");
    }
    if (swy_status_t c = api::check_fields(__func__, "swy_listener_params_t", in->field_mask,
                                           api::kListenerParamFields);
        c != SWY_OK) {
        return c;
    }
    const swy_listener_params_t normal = api::normalized(*in);
    const swy_listener_params_t* params = &normal;
    if ((params->flags & SWY_LISTENER_FLAG_AUTH_KEY) != 0 &&
        (params->field_mask & SWY_LISTENER_PARAM_FIELD_AUTH_KEY) == 0) {
        return api::invalid(__func__,
                            "SWY_LISTENER_FLAG_AUTH_KEY needs SWY_LISTENER_PARAM_FIELD_AUTH_KEY "
                            "in field_mask");
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    core::ConnManager* m = nullptr;
    std::string why;
    Status s = w->conn_manager(&m, &why);
    core::Listener* l = nullptr;
    if (s == Status::kOk) s = m->listen(*params, &l, &why);
    if (s != Status::kOk) return log_failure("swy_listener_create", s, why);
    *listener = static_cast<swy_listener_h>(core::ConnManager::handle_of(l));
    return SWY_OK;
}

// The name 0.1 programs called through the swy_listener_create macro. The field_mask made a
// second entry point unnecessary (a struct grows by appending a field and a bit); this one
// stays so that sources that spell it out still build and behave the same.
swy_status_t swy_listener_create_v2(swy_worker_h worker, const swy_listener_params_t* params,
                                    swy_listener_h* listener) {
    return swy_listener_create(worker, params, listener);
}

swy_status_t swy_listener_query(swy_listener_h listener, swy_listener_attr_t* attr) {
    if (listener == nullptr || attr == nullptr) return api::invalid(__func__, "NULL argument");
    if (swy_status_t c = api::check_fields(__func__, "swy_listener_attr_t", attr->field_mask,
                                           api::kListenerAttrFields);
        c != SWY_OK) {
        return c;
    }
    core::Listener* l = nullptr;
    if (swy_status_t c = live_listener(__func__, listener, &l); c != SWY_OK) return c;
    if ((attr->field_mask & SWY_LISTENER_ATTR_FIELD_SOCKADDR) == 0) return SWY_OK;
    WorkerGuard guard(l->manager->worker());
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
    core::Listener* l = nullptr;
    if (swy_status_t c = live_listener(__func__, listener, &l); c != SWY_OK) return c;
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
    if (swy_status_t c = api::check_fields(__func__, "swy_conn_request_attr_t", attr->field_mask,
                                           api::kConnRequestAttrFields);
        c != SWY_OK) {
        return c;
    }
    core::ConnRequest* r = request_of(conn_request);
    if (r == nullptr) {
        return api::invalid(__func__,
                            "conn_request is not a live request (answered, or its listener gone)");
    }
    if (!core::Worker::usable(r->manager->worker())) {
        return api::invalid(__func__,
                            "conn_request belongs to a worker this process inherited through "
                            "fork()");
    }
    if ((attr->field_mask & SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR) != 0) {
        std::memcpy(&attr->client_sockaddr, &r->peer, sizeof(r->peer));
        attr->client_sockaddr_length = r->peer_length;
    }
    if ((attr->field_mask & SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_UID) != 0) {
        attr->client_worker_uid = r->peer_uid;
    }
    return SWY_OK;
}

void swy_listener_destroy(swy_listener_h listener) {
    if (listener == nullptr) return;
    core::Listener* l = listener_of(listener);
    if (l == nullptr) {
        (void)api::invalid(__func__, "listener is not a live listener (destroyed twice?)");
        return;
    }
    core::ConnManager* m = l->manager;
    if (!core::Worker::usable(
            m->worker())) {  // a fork()ed child's copy: its socket is the parent's too
        (void)api::refuse_worker(__func__, m->worker());
        return;
    }
    WorkerGuard guard(m->worker());
    m->destroy_listener(l);
}

}  // extern "C"
