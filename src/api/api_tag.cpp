// C API: tagged send/receive, probes, requests.
#include <switchyard/switchyard.h>

#include "api/api_guard.h"
#include "api/api_params.h"
#include "core/worker.h"

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

swy_status_t swy_tag_send_nb(swy_ep_h ep, const void* buffer, size_t length, swy_tag_t tag,
                             const swy_request_params_t* params, swy_request_h* req) {
    if (__builtin_expect(ep == nullptr || req == nullptr || (buffer == nullptr && length != 0) ||
                             core::request_params::unknown_bits(params) != 0,
                         0)) {
        return refused(__func__, params, "ep and req must not be NULL; buffer only if length is 0");
    }
    core::Endpoint* e = api::ep_of(ep);
    WorkerGuard guard(e->worker());
    core::Request* r = nullptr;
    Status s = e->tag_send(buffer, length, tag, params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_tag_recv_nb(swy_worker_h worker, void* buffer, size_t length, swy_tag_t tag,
                             swy_tag_t tag_mask, const swy_request_params_t* params,
                             swy_request_h* req) {
    if (__builtin_expect(worker == nullptr || req == nullptr ||
                             (buffer == nullptr && length != 0) ||
                             core::request_params::unknown_bits(params) != 0,
                         0)) {
        return refused(__func__, params,
                       "worker and req must not be NULL; buffer only if length is 0");
    }
    core::Worker* w = api::worker_of(worker);
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    Status s = w->tag_recv(buffer, length, tag, tag_mask, params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_tag_probe_nb(swy_worker_h worker, swy_tag_t tag, swy_tag_t tag_mask, int remove,
                              swy_tag_recv_info_t* info, swy_message_h* message) {
    if (worker == nullptr || (remove && message == nullptr)) {
        return api::invalid(__func__, "worker must not be NULL; message is required with remove");
    }
    core::Worker* w = api::worker_of(worker);
    WorkerGuard guard(w);
    core::UnexpectedDesc* d = nullptr;
    Status s = w->probe(tag, tag_mask, remove != 0, info, &d);
    if (message != nullptr) *message = reinterpret_cast<swy_message_h>(d);
    return api::to_c(s);
}

swy_status_t swy_tag_msg_recv_nb(swy_worker_h worker, void* buffer, size_t length,
                                 swy_message_h message, const swy_request_params_t* params,
                                 swy_request_h* req) {
    if (worker == nullptr || message == nullptr || req == nullptr ||
        (buffer == nullptr && length != 0) || core::request_params::unknown_bits(params) != 0) {
        return refused(__func__, params, "worker, message and req must not be NULL");
    }
    core::Worker* w = api::worker_of(worker);
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    Status s =
        w->msg_recv(buffer, length, reinterpret_cast<core::UnexpectedDesc*>(message), params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_request_test(swy_request_h req) {
    if (req == nullptr) return api::invalid(__func__, "req is NULL");
    core::Request* r = api::request_of(req);
    WorkerGuard guard(r->worker);
    return r->completed ? api::to_c(r->status) : SWY_INPROGRESS;
}

swy_status_t swy_request_wait(swy_worker_h worker, swy_request_h req) {
    if (worker == nullptr || req == nullptr) return api::invalid(__func__, "NULL argument");
    core::Worker* w = api::worker_of(worker);
    core::Request* r = api::request_of(req);
    for (;;) {
        {
            WorkerGuard guard(w);
            if (r->completed) return api::to_c(r->status);
            w->progress();
        }
    }
}

swy_status_t swy_request_recv_info(swy_request_h req, swy_tag_recv_info_t* info) {
    if (req == nullptr || info == nullptr) return api::invalid(__func__, "NULL argument");
    core::Request* r = api::request_of(req);
    WorkerGuard guard(r->worker);
    if (!r->completed) return SWY_INPROGRESS;
    *info = r->info;
    return SWY_OK;
}

swy_status_t swy_request_cancel(swy_worker_h worker, swy_request_h req) {
    if (worker == nullptr || req == nullptr) return api::invalid(__func__, "NULL argument");
    core::Worker* w = api::worker_of(worker);
    WorkerGuard guard(w);
    return api::to_c(w->cancel(api::request_of(req)));
}

void swy_request_free(swy_request_h req) {
    if (req == nullptr) return;
    core::Request* r = api::request_of(req);
    core::Worker* w = r->worker;
    WorkerGuard guard(w);
    w->release(r);
}

}  // extern "C"
