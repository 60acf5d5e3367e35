// Handle checks at the C API boundary: a request, endpoint or worker handle is turned into
// its object only after its generation (core/handle.h) and its worker's process
// (Worker::usable, fork) are checked. Inline: every tagged message passes here (one load and
// one compare per handle); the refusals, which log why, are out of line.
#pragma once

#include <switchyard/switchyard.h>

#include <cstdint>

#include "core/handle.h"
#include "core/worker.h"

namespace swy::api {

/// Why @p h was refused, logged: SWY_ERR_INVALID_PARAM for NULL or a freed/stale handle
/// (abort in debug builds, where a stale handle is a bug to stop at), SWY_ERR_UNSUPPORTED
/// for a request of a worker inherited through fork().
[[gnu::cold, gnu::noinline]] swy_status_t refuse_request(const char* function, swy_request_h h);
/// The same for an endpoint handle (stale: the endpoint was closed).
[[gnu::cold, gnu::noinline]] swy_status_t refuse_endpoint(const char* function, swy_ep_h h);
/// SWY_ERR_INVALID_PARAM for NULL, SWY_ERR_UNSUPPORTED for a worker this process inherited
/// through fork() (logged).
[[gnu::cold, gnu::noinline]] swy_status_t refuse_worker(const char* function,
                                                        const core::Worker* w);

/// swy_worker_progress() on a worker this process inherited through fork(): 0, logged the
/// first time (a progress loop calls it without end).
[[gnu::cold, gnu::noinline]] unsigned progress_refused(core::Worker* w);

/// The request in caller memory that handle @p bits names through its slot, or nullptr when
/// the handle is stale (the slot's generation moved on, or the slot is free). Reads only the
/// worker's slot until the handle is known to be live.
inline core::Request* external_request(uintptr_t bits) {
    const auto* slot = core::handle::address<core::ExternalSlot>(bits & ~core::kExternalHandleBit);
    if (slot == nullptr || slot->handle_generation != core::handle::generation(bits)) {
        return nullptr;
    }
    return slot->request;
}

/// The request @p h names, if the handle is live: SWY_OK and *out, else a refusal.
inline swy_status_t resolve(const char* function, swy_request_h h, core::Request** out) {
    const auto bits = reinterpret_cast<uintptr_t>(h);
    if (__builtin_expect((bits & core::kExternalHandleBit) != 0, 0)) {
        core::Request* r = external_request(bits);
        if (__builtin_expect(r == nullptr || !core::Worker::usable(r->worker), 0)) {
            return refuse_request(function, h);
        }
        *out = r;
        return SWY_OK;
    }
    core::Request* r = core::handle::address<core::Request>(bits);
    if (__builtin_expect(r == nullptr || r->handle_generation != core::handle::generation(bits) ||
                             !core::Worker::usable(r->worker),
                         0)) {
        return refuse_request(function, h);
    }
    *out = r;
    return SWY_OK;
}

/// The endpoint @p h names, if it is not closed: SWY_OK and *out, else a refusal.
inline swy_status_t resolve(const char* function, swy_ep_h h, core::Endpoint** out) {
    core::Endpoint* e = core::SlotArena<core::Endpoint>::resolve(reinterpret_cast<uintptr_t>(h));
    if (__builtin_expect(e == nullptr || !core::Worker::usable(e->worker()), 0)) {
        return refuse_endpoint(function, h);
    }
    *out = e;
    return SWY_OK;
}

/// The worker @p h names, if this process may use it: SWY_OK and *out, else a refusal.
inline swy_status_t resolve(const char* function, swy_worker_h h, core::Worker** out) {
    auto* w = reinterpret_cast<core::Worker*>(h);
    if (__builtin_expect(w == nullptr || !core::Worker::usable(w), 0))
        return refuse_worker(function, w);
    *out = w;
    return SWY_OK;
}

/// The handle to give the application for @p r (NULL for no request).
inline swy_request_h handle_of(const core::Request* r) {
    return r != nullptr ? r->handle() : nullptr;
}
/// The handle to give the application for @p e.
inline swy_ep_h handle_of(const core::Endpoint* e) { return e != nullptr ? e->handle() : nullptr; }

}  // namespace swy::api
