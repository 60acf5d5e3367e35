// Helpers shared by the C API glue: argument checks with a clear message, the worker lock in
// multi-thread mode, and handle casts.
#pragma once

#include <switchyard/switchyard.h>

#include <mutex>
#include <optional>

#include "common/log.h"
#include "core/worker.h"

namespace swy::api {

/// Log why a call was refused and return SWY_ERR_INVALID_PARAM.
inline swy_status_t invalid(const char* function, const char* what) {
    common::log_printf(common::LogLevel::kError, "%s: %s", function, what);
    return SWY_ERR_INVALID_PARAM;
}

inline swy_status_t to_c(Status s) { return static_cast<swy_status_t>(s); }

/// Holds the worker's lock for the duration of a call when the worker is multi-threaded.
class WorkerGuard {
public:
    explicit WorkerGuard(core::Worker* w) {
        if (w->multi_threaded()) lock_.emplace(w->lock());
    }

private:
    std::optional<std::unique_lock<std::recursive_mutex>> lock_;
};

inline core::Worker* worker_of(swy_worker_h w) { return reinterpret_cast<core::Worker*>(w); }
inline core::Endpoint* ep_of(swy_ep_h e) { return reinterpret_cast<core::Endpoint*>(e); }
inline core::Request* request_of(swy_request_h r) { return reinterpret_cast<core::Request*>(r); }
inline swy_request_h handle_of(core::Request* r) { return reinterpret_cast<swy_request_h>(r); }

}  // namespace swy::api
