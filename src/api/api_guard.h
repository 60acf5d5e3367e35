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

/// @p Body(w, args...) under the worker's lock (multi-thread mode). Out of line, so that a
/// call in single-thread mode (with_worker()) carries no lock object: its common path then
/// keeps few registers and saves and restores few.
template <auto Body, typename... Args>
[[gnu::noinline]] auto call_locked(core::Worker* w, Args... args) {
    std::lock_guard<std::recursive_mutex> lock(w->lock());
    return Body(w, args...);
}

/// @p Body(w, args...) as @p w's thread mode requires: straight through in single-thread
/// mode, under the worker's lock otherwise (as a WorkerGuard over the body would). For the
/// calls of every message (send, receive, test, free, progress): the guard object cost them
/// about a dozen instructions each in saved registers (callgrind, 8-byte shm loopback). The
/// body is a function of its arguments, not a lambda: a closure is built before the branch.
template <auto Body, typename... Args>
inline auto with_worker(core::Worker* w, Args... args) {
    if (__builtin_expect(!w->multi_threaded(), 1)) return Body(w, args...);
    return call_locked<Body>(w, args...);
}

/// The worker a handle names, unchecked (api_handles.h resolve() checks it).
inline core::Worker* worker_of(swy_worker_h w) { return reinterpret_cast<core::Worker*>(w); }

}  // namespace swy::api
