// Message contents: every byte depends on sender, receiver, iteration and size index, so a
// message delivered to the wrong rank or round, a stale buffer, a shifted or a short copy is
// caught at its first wrong byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace swy::netns {

inline uint64_t payload_seed(int src, int dst, unsigned iter, unsigned size_index) {
    uint64_t x = (uint64_t{static_cast<uint32_t>(src)} << 48) ^
                 (uint64_t{static_cast<uint32_t>(dst)} << 32) ^ (uint64_t{iter} << 12) ^ size_index;
    // Murmur3's 64-bit finaliser: neighbouring inputs give unrelated seeds.
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
}

/// Word k (bytes 8k..8k+7) of the payload with this seed.
inline uint64_t payload_word(uint64_t seed, size_t k) { return seed + k * 0x9E3779B97F4A7C15ull; }

inline void payload_fill(uint8_t* p, size_t length, uint64_t seed) {
    size_t k = 0;
    for (; 8 * k + 8 <= length; ++k) {
        const uint64_t w = payload_word(seed, k);
        std::memcpy(p + 8 * k, &w, 8);
    }
    if (length > 8 * k) {
        const uint64_t w = payload_word(seed, k);
        std::memcpy(p + 8 * k, &w, length - 8 * k);
    }
}

/// Returns the offset of the first wrong byte, or @p length if every byte is right.
inline size_t payload_check(const uint8_t* p, size_t length, uint64_t seed) {
    size_t k = 0;
    for (; 8 * k + 8 <= length; ++k) {
        const uint64_t w = payload_word(seed, k);
        if (std::memcmp(p + 8 * k, &w, 8) != 0) break;
    }
    const uint64_t w = payload_word(seed, k);
    uint8_t want[8];
    std::memcpy(want, &w, 8);
    for (size_t o = 8 * k; o < length; ++o) {
        if (p[o] != want[o - 8 * k]) return o;
    }
    return length;
}

/// The byte payload_fill() writes at @p offset.
inline uint8_t payload_byte(uint64_t seed, size_t offset) {
    const uint64_t w = payload_word(seed, offset / 8);
    uint8_t b[8];
    std::memcpy(b, &w, 8);
    return b[offset % 8];
}

}  // namespace swy::netns
