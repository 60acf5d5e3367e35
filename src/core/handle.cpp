#include "core/handle.h"

#include <cstdlib>

#include "common/log.h"

namespace swy::core::handle {

void address_too_high(const char* what, const void* where) {
    common::log_printf(common::LogLevel::kError,
                       "%s: memory at %p is above 2^%u, where handles keep their generation; "
                       "cannot continue",
                       what, where, kShift);
    std::abort();
}

}  // namespace swy::core::handle
