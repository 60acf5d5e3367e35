// C API: active messages (switchyard/am.h). Argument checks here; the work in
// src/protocols/am/.
#include <switchyard/am.h>

#include "api/api_guard.h"
#include "api/api_params.h"
#include "core/request_params.h"
#include "core/worker.h"
#include "protocols/am/am_send.h"

using namespace swy;
using api::WorkerGuard;

namespace {
/// The out-of-line tail of a refused call: unknown params bits, else the argument error.
[[gnu::cold, gnu::noinline]] swy_status_t refused(const char* function,
                                                  const swy_request_params_t* params,
                                                  const char* argument_error) {
    if (uint64_t unknown = core::request_params::unknown_bits(params); unknown != 0) {
        return api::unknown_fields(function, "swy_request_params_t", unknown);
    }
    return api::invalid(function, argument_error);
}
}  // namespace

extern "C" {

swy_status_t swy_worker_set_am_handler(swy_worker_h worker, uint16_t id, swy_am_recv_cb_t cb,
                                       void* arg, uint32_t flags) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    const Status s = w->am().set_handler(id, cb, arg, flags);
    if (s == Status::kInvalidParam) return api::invalid(__func__, "unknown handler flags");
    return api::to_c(s);
}

swy_status_t swy_am_send_nb(swy_ep_h ep, uint16_t id, const void* header, size_t header_length,
                            const void* data, size_t count, const swy_request_params_t* params,
                            swy_request_h* req) {
    if (__builtin_expect(ep == nullptr || req == nullptr || (header == nullptr && header_length) ||
                             header_length > SWY_AM_MAX_HEADER ||
                             core::request_params::unknown_bits(params) != 0,
                         0)) {
        return refused(__func__, params,
                       "ep and req must not be NULL; header only if header_length is 0; "
                       "header_length at most SWY_AM_MAX_HEADER");
    }
    if (core::request_params::has(params, SWY_REQ_PARAM_FIELD_REQUEST)) {
        return api::invalid(__func__,
                            "SWY_REQ_PARAM_FIELD_REQUEST (request in caller memory) is for "
                            "tagged sends and receives only");
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    WorkerGuard guard(e->worker());
    core::Request* r = nullptr;
    const Status s = proto::am::send(e, id, header, header_length, data, count, params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_ep_am_eager_max(swy_ep_h ep, size_t* max) {
    if (ep == nullptr || max == nullptr) return api::invalid(__func__, "NULL argument");
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    WorkerGuard guard(e->worker());
    *max = e->wired() ? proto::am::eager_max(*e) : 0;
    return SWY_OK;
}

swy_status_t swy_am_recv_data_nb(swy_worker_h worker, void* data_desc, void* buffer, size_t count,
                                 const swy_request_params_t* params, swy_request_h* req) {
    if (worker == nullptr || data_desc == nullptr || req == nullptr ||
        (buffer == nullptr && count != 0) || core::request_params::unknown_bits(params) != 0) {
        return refused(__func__, params,
                       "worker, data_desc and req must not be NULL; buffer only if count "
                       "is 0");
    }
    if (core::request_params::has(params, SWY_REQ_PARAM_FIELD_REQUEST)) {
        return api::invalid(__func__,
                            "SWY_REQ_PARAM_FIELD_REQUEST (request in caller memory) is for "
                            "tagged sends and receives only");
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    const Status s = w->am().recv_data(data_desc, buffer, count, params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

void swy_am_data_release(swy_worker_h worker, void* data) {
    if (worker == nullptr || data == nullptr) return;
    core::Worker* w = nullptr;
    if (api::resolve(__func__, worker, &w) != SWY_OK) return;
    WorkerGuard guard(w);
    w->am().release(data);
}

}  // extern "C"
