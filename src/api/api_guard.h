// Helpers shared by the C API glue: argument checks with a clear message, the worker lock in
// multi-thread mode, and handle casts.
#pragma once

#include <switchyard/switchyard.h>

#include <mutex>
#include <optional>

#include "api/api_handles.h"
#include "common/log.h"
#include "core/worker.h"

namespace swy::api {

/// Log why a call was refused and return SWY_ERR_INVALID_PARAM.
inline swy_status_t invalid(const char* function, const char* what) {
    common::log_printf(common::LogLevel::kError, "%s: %s", function, what);
    return SWY_ERR_INVALID_PARAM;
}

/// Log why a call could not act now and return SWY_ERR_BUSY.
inline swy_status_t busy(const char* function, const char* what) {
    common::log_printf(common::LogLevel::kError, "%s: %s", function, what);
    return SWY_ERR_BUSY;
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

/// The worker a handle names, unchecked (api_handles.h resolve() checks it).
inline core::Worker* worker_of(swy_worker_h w) { return reinterpret_cast<core::Worker*>(w); }

}  // namespace swy::api
