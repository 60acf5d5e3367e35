// Cheap clock for periodic checks (keepalive, liveness): CLOCK_MONOTONIC_COARSE through the
// vDSO, a few nanoseconds, resolution of a scheduler tick.
#pragma once

#include <time.h>

#include <cstdint>

namespace swy::common {

/// Monotonic time in nanoseconds, tick resolution.
inline uint64_t monotonic_coarse_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace swy::common
