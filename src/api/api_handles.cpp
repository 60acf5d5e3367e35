#include "api/api_handles.h"

#include <unistd.h>

#include <cstdlib>

#include "common/log.h"

namespace swy::api {

namespace {
using common::log_printf;
using common::LogLevel;

swy_status_t inherited(const char* function, const char* what) {
    log_printf(LogLevel::kError,
               "%s: this %s belongs to a worker created by another process; this process "
               "(pid %d) inherited it through fork() and cannot use it (create a new worker here)",
               function, what, static_cast<int>(getpid()));
    return SWY_ERR_UNSUPPORTED;
}

swy_status_t stale(const char* function, const char* what, const void* h) {
    log_printf(LogLevel::kError, "%s: %s %p is no longer valid", function, what, h);
#ifndef NDEBUG
    log_printf(LogLevel::kError, "%s: aborting (debug build): a stale handle is a bug", function);
    std::abort();
#endif
    return SWY_ERR_INVALID_PARAM;
}
}  // namespace

swy_status_t refuse_request(const char* function, swy_request_h h) {
    const auto bits = reinterpret_cast<uintptr_t>(h);
    if ((bits & core::kExternalHandleBit) != 0) {
        if (external_request(bits) == nullptr) {
            return stale(function,
                         "request handle (a request in caller memory, freed already: a double "
                         "free, or used after swy_request_free)",
                         h);
        }
        return inherited(function, "request");
    }
    const core::Request* r = core::handle::address<core::Request>(bits);
    if (r == nullptr) {
        log_printf(LogLevel::kError, "%s: req is NULL", function);
        return SWY_ERR_INVALID_PARAM;
    }
    if (r->handle_generation != core::handle::generation(bits)) {
        return stale(function,
                     "request handle (freed already: a double free, or used after "
                     "swy_request_free)",
                     h);
    }
    return inherited(function, "request");
}

swy_status_t refuse_endpoint(const char* function, swy_ep_h h) {
    if (h == nullptr) {
        log_printf(LogLevel::kError, "%s: ep is NULL", function);
        return SWY_ERR_INVALID_PARAM;
    }
    if (core::SlotArena<core::Endpoint>::resolve(reinterpret_cast<uintptr_t>(h)) == nullptr) {
        return stale(function, "endpoint handle (the endpoint was closed)", h);
    }
    return inherited(function, "endpoint");
}

swy_status_t refuse_worker(const char* function, const core::Worker* w) {
    if (w == nullptr) {
        log_printf(LogLevel::kError, "%s: worker is NULL", function);
        return SWY_ERR_INVALID_PARAM;
    }
    return inherited(function, "worker");
}

unsigned progress_refused(core::Worker* w) {
    if (core::Worker::first_refusal(w)) (void)inherited("swy_worker_progress", "worker");
    return 0;
}

}  // namespace swy::api
