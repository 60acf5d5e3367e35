// C API: tagged send/receive, probes, requests.
#include <switchyard/switchyard.h>

#include "api/api_guard.h"
#include "api/api_params.h"
#include "core/endpoint_send.h"
#include "core/worker.h"

using namespace swy;
using api::WorkerGuard;

namespace {
/// A NULL buffer with a count is refused only for contiguous data: a generic datatype's
/// start callbacks decide what its buffer and count mean (out of line: only asked on the
/// refusal path, so contiguous calls pay nothing).
bool null_buffer_allowed(const void* handle, const void* req, const swy_request_params_t* params) {
    const swy_datatype_t dt = core::Worker::stated_datatype(params);
    return handle != nullptr && req != nullptr && dt != SWY_DATATYPE_CONTIG &&
           dt != SWY_DATATYPE_IOV;
}

/// The params bits that send a call down check_call(): unknown ones.
constexpr uint64_t kCheckedFields = ~core::request_params::kKnownFields;

/// Whether a call must go down check_call(): unknown bits, or caller's request memory that
/// would be refused. Request memory that fits (the common case for pml swy, which passes it
/// with every nonblocking call) is checked here, inline: going down the checked path for it
/// cost about 65 instructions per message (callgrind, 8-byte osu_bw over pml swy).
inline bool needs_checks(const swy_request_params_t* params) {
    if (params == nullptr) return false;
    const uint64_t mask = params->field_mask;
    if (__builtin_expect((mask & kCheckedFields) != 0, 0)) return true;
    if ((mask & SWY_REQ_PARAM_FIELD_REQUEST) == 0) return false;
    const auto address = reinterpret_cast<uintptr_t>(params->request);
    return __builtin_expect(address == 0 || params->request_size < api::kRequestSize ||
                                (address & (api::kRequestAlignment - 1)) != 0,
                            0);
}

/// The checked path of a tagged call: unknown params bits, a NULL argument
/// (@p null_argument; a NULL buffer passes for a datatype that allows it), the caller's
/// request memory. SWY_OK when the call may go on, else the refusal (logged).
[[gnu::noinline]] swy_status_t check_call(const char* function, bool null_argument,
                                          const void* handle, const void* req,
                                          const swy_request_params_t* params,
                                          const char* argument_error) {
    if (uint64_t unknown = core::request_params::unknown_bits(params); unknown != 0) {
        return api::unknown_fields(function, "swy_request_params_t", unknown);
    }
    if (null_argument && !null_buffer_allowed(handle, req, params)) {
        return api::invalid(function, argument_error);
    }
    if (core::request_params::has(params, SWY_REQ_PARAM_FIELD_REQUEST)) {
        return api::check_request_memory(function, params);
    }
    return SWY_OK;
}
// The bodies of the calls of every message, run by api::with_worker (under the worker's lock
// in multi-thread mode).
swy_status_t send_body(core::Worker*, core::Endpoint* e, const void* buffer, size_t length,
                       swy_tag_t tag, const swy_request_params_t* params, swy_request_h* req) {
    core::Request* r = nullptr;
    Status s = e->tag_send(buffer, length, tag, params, &r);
    // No request (the one-packet path): the handle is NULL, and no handle is made.
    *req = __builtin_expect(r == nullptr, 1) ? nullptr : api::handle_of(r);
    return api::to_c(s);
}
/// recv_body() for everything but the receive Worker::try_post_receive() posts.
[[gnu::noinline]] swy_status_t recv_body_general(core::Worker* w, void* buffer, size_t length,
                                                 swy_tag_t tag, swy_tag_t tag_mask,
                                                 const swy_request_params_t* params,
                                                 swy_request_h* req) {
    core::Request* r = nullptr;
    Status s = w->tag_recv(buffer, length, tag, tag_mask, params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}
/// A latency loop's receive makes no call (a leaf: no registers saved); the rest is a tail
/// call to recv_body_general().
swy_status_t recv_body(core::Worker* w, void* buffer, size_t length, swy_tag_t tag,
                       swy_tag_t tag_mask, const swy_request_params_t* params, swy_request_h* req) {
    if (core::Request* r = w->try_post_receive(buffer, length, tag, tag_mask, params);
        __builtin_expect(r != nullptr, 1)) {
        *req = r->handle();
        return SWY_INPROGRESS;
    }
    return recv_body_general(w, buffer, length, tag, tag_mask, params, req);
}
swy_status_t test_body(core::Worker*, core::Request* r) {
    return r->completed ? api::to_c(r->status) : SWY_INPROGRESS;
}
swy_status_t free_body(core::Worker* w, core::Request* r) {
    if (__builtin_expect(r->external != nullptr && !r->completed, 0)) {
        return api::busy("swy_request_free",
                         "a request in caller memory is freed only once it has completed "
                         "(wait for it, or cancel it and wait): its memory is still in use");
    }
    w->release(r);
    return SWY_OK;
}

/// The body of swy_tag_send_nb once its arguments passed (inline: the common path keeps the
/// arguments in their registers, straight through to the core).
inline swy_status_t tag_send(swy_ep_h ep, const void* buffer, size_t length, swy_tag_t tag,
                             const swy_request_params_t* params, swy_request_h* req) {
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve("swy_tag_send_nb", ep, &e);
        __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    return api::with_worker<send_body>(e->worker(), e, buffer, length, tag, params, req);
}

/// swy_tag_send_nb with something to check first (out of line: a tail call from the entry).
[[gnu::noinline]] swy_status_t tag_send_checked(swy_ep_h ep, const void* buffer, size_t length,
                                                swy_tag_t tag, const swy_request_params_t* params,
                                                swy_request_h* req) {
    const bool null_argument =
        ep == nullptr || req == nullptr || (buffer == nullptr && length != 0);
    if (swy_status_t c = check_call("swy_tag_send_nb", null_argument, ep, req, params,
                                    "ep and req must not be NULL; buffer only if length is 0");
        c != SWY_OK) {
        return c;
    }
    return tag_send(ep, buffer, length, tag, params, req);
}

/// The body of swy_tag_recv_nb once its arguments passed.
inline swy_status_t tag_recv(swy_worker_h worker, void* buffer, size_t length, swy_tag_t tag,
                             swy_tag_t tag_mask, const swy_request_params_t* params,
                             swy_request_h* req) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve("swy_tag_recv_nb", worker, &w);
        __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    return api::with_worker<recv_body>(w, buffer, length, tag, tag_mask, params, req);
}

/// swy_tag_recv_nb with something to check first (out of line: a tail call from the entry).
[[gnu::noinline]] swy_status_t tag_recv_checked(swy_worker_h worker, void* buffer, size_t length,
                                                swy_tag_t tag, swy_tag_t tag_mask,
                                                const swy_request_params_t* params,
                                                swy_request_h* req) {
    const bool null_argument =
        worker == nullptr || req == nullptr || (buffer == nullptr && length != 0);
    if (swy_status_t c = check_call("swy_tag_recv_nb", null_argument, worker, req, params,
                                    "worker and req must not be NULL; buffer only if length is 0");
        c != SWY_OK) {
        return c;
    }
    return tag_recv(worker, buffer, length, tag, tag_mask, params, req);
}
}  // namespace

extern "C" {

swy_status_t swy_tag_send_nb(swy_ep_h ep, const void* buffer, size_t length, swy_tag_t tag,
                             const swy_request_params_t* params, swy_request_h* req) {
    if (__builtin_expect(ep == nullptr || req == nullptr || (buffer == nullptr && length != 0) ||
                             needs_checks(params),
                         0)) {
        return tag_send_checked(ep, buffer, length, tag, params, req);
    }
    return tag_send(ep, buffer, length, tag, params, req);
}

swy_status_t swy_tag_recv_nb(swy_worker_h worker, void* buffer, size_t length, swy_tag_t tag,
                             swy_tag_t tag_mask, const swy_request_params_t* params,
                             swy_request_h* req) {
    if (__builtin_expect(worker == nullptr || req == nullptr ||
                             (buffer == nullptr && length != 0) || needs_checks(params),
                         0)) {
        return tag_recv_checked(worker, buffer, length, tag, tag_mask, params, req);
    }
    return tag_recv(worker, buffer, length, tag, tag_mask, params, req);
}

swy_status_t swy_tag_probe_nb(swy_worker_h worker, swy_tag_t tag, swy_tag_t tag_mask, int remove,
                              swy_tag_recv_info_t* info, swy_message_h* message) {
    if (worker == nullptr || (remove && message == nullptr)) {
        return api::invalid(__func__, "worker must not be NULL; message is required with remove");
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    core::UnexpectedDesc* d = nullptr;
    Status s = w->probe(tag, tag_mask, remove != 0, info, &d);
    if (message != nullptr) *message = reinterpret_cast<swy_message_h>(d);
    return api::to_c(s);
}

swy_status_t swy_tag_msg_recv_nb(swy_worker_h worker, void* buffer, size_t length,
                                 swy_message_h message, const swy_request_params_t* params,
                                 swy_request_h* req) {
    const bool null_argument = worker == nullptr || message == nullptr || req == nullptr ||
                               (buffer == nullptr && length != 0);
    if (null_argument || needs_checks(params)) {
        if (swy_status_t c =
                check_call(__func__, null_argument, worker != nullptr ? message : nullptr, req,
                           params, "worker, message and req must not be NULL");
            c != SWY_OK) {
            return c;
        }
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    Status s =
        w->msg_recv(buffer, length, reinterpret_cast<core::UnexpectedDesc*>(message), params, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_request_test(swy_request_h req) {
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    return api::with_worker<test_body>(r->worker, r);
}

swy_status_t swy_request_wait(swy_worker_h worker, swy_request_h req) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); c != SWY_OK) return c;
    if (r->worker != w) return api::invalid(__func__, "req belongs to another worker");
    for (;;) {
        {
            WorkerGuard guard(w);
            if (r->completed) return api::to_c(r->status);
            // Progress does not run inside itself: from a callback this loop would spin
            // forever. The handle is checked again each turn: a callback may free it.
            if (w->in_callback()) {
                return api::invalid(__func__,
                                    "called from a callback (or while the worker is inside "
                                    "another call): progress cannot run here, so the request "
                                    "could never complete; test it after the callback returns");
            }
            w->progress();
            if (swy_status_t c = api::resolve(__func__, req, &r); c != SWY_OK) return c;
        }
    }
}

swy_status_t swy_request_recv_info(swy_request_h req, swy_tag_recv_info_t* info) {
    if (info == nullptr) return api::invalid(__func__, "info is NULL");
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); c != SWY_OK) return c;
    WorkerGuard guard(r->worker);
    if (!r->completed) return SWY_INPROGRESS;
    *info = r->info;
    return SWY_OK;
}

swy_status_t swy_request_cancel(swy_worker_h worker, swy_request_h req) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); c != SWY_OK) return c;
    if (r->worker != w) return api::invalid(__func__, "req belongs to another worker");
    WorkerGuard guard(w);
    return api::to_c(w->cancel(r));
}

swy_status_t swy_request_free(swy_request_h req) {
    if (req == nullptr) return SWY_OK;  // as free(NULL): a call that completed in place
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    return api::with_worker<free_body>(r->worker, r);
}

}  // extern "C"
