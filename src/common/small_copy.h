// copy_bytes(): memcpy for the tag hot path, where most copies are a few bytes (an 8-byte
// header, an 8-byte payload). Up to 16 bytes it copies with at most two overlapping loads
// and stores of a fixed width, inline; libc's memcpy would cost a call, a dispatch on the
// length and a return per copy (three of them per small message). Larger copies go to libc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace swy::common {

/// Copy @p n bytes from @p src to @p dst (the ranges must not overlap, as for memcpy).
inline void copy_bytes(void* dst, const void* src, size_t n) {
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    if (__builtin_expect(n > 16, 0)) {
        std::memcpy(d, s, n);
        return;
    }
    if (n >= 8) {
        uint64_t head, tail;
        std::memcpy(&head, s, 8);
        std::memcpy(&tail, s + n - 8, 8);
        std::memcpy(d, &head, 8);
        std::memcpy(d + n - 8, &tail, 8);
    } else if (n >= 4) {
        uint32_t head, tail;
        std::memcpy(&head, s, 4);
        std::memcpy(&tail, s + n - 4, 4);
        std::memcpy(d, &head, 4);
        std::memcpy(d + n - 4, &tail, 4);
    } else if (n != 0) {  // 1 to 3 bytes: first, middle and last cover them all
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

}  // namespace swy::common
