// Generation-checked handles. A handle the application holds (request, endpoint) is the
// object's address with a 16-bit generation in the top bits the address never uses (user
// space ends below 2^47 on x86-64 and aarch64 unless a mapping asks for more). The object's
// memory stays with the worker until the worker is destroyed, so a stale handle can always be
// read and compared: a freed request, a closed endpoint, or a slot reused since then carry a
// different generation, and the call is refused instead of acting on someone else's object.
// The check is one load and one compare on the hot path.
#pragma once

#include <cstdint>

namespace swy::core::handle {

/// The generation lives in bits [kShift, 64).
constexpr unsigned kShift = 48;
constexpr uintptr_t kAddressMask = (uintptr_t{1} << kShift) - 1;
static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit addresses");

/// True when @p p leaves the generation bits free (checked when handle memory is allocated).
inline bool fits(const void* p) { return (reinterpret_cast<uintptr_t>(p) >> kShift) == 0; }

/// Memory for handle-named objects landed at @p where, above 2^kShift: log what (@p what)
/// and abort. Not seen on Linux, where the kernel places memory that high only on request.
[[noreturn, gnu::cold]] void address_too_high(const char* what, const void* where);

/// The handle of the object at @p p in its @p generation.
inline uintptr_t make(const void* p, uint16_t generation) {
    return reinterpret_cast<uintptr_t>(p) | (uintptr_t{generation} << kShift);
}

/// The object a handle names (whether or not the handle is still valid).
template <typename T>
T* address(uintptr_t h) {
    return reinterpret_cast<T*>(h & kAddressMask);
}

/// The generation a handle carries.
inline uint16_t generation(uintptr_t h) { return static_cast<uint16_t>(h >> kShift); }

}  // namespace swy::core::handle
