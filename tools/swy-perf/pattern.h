// --check data pattern: every message gets bytes that depend on its index, its size and its
// direction, so a message delivered to the wrong buffer, stale data, a shifted copy or a
// truncated copy is caught at the first wrong byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace swy::perf {

inline uint64_t pattern_seed(uint64_t message, uint64_t size, unsigned direction) {
    // splitmix64 finaliser over the three inputs
    uint64_t z = message * 0x9E3779B97F4A7C15ull ^ (size << 1) ^ direction ^ 0x5357595045524646ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// 8-byte word @p k of the pattern; byte o of a message is byte o%8 of word o/8.
inline uint64_t pattern_word(uint64_t seed, uint64_t k) {
    return seed ^ (k * 0xD6E8FEB86659FD93ull);
}

inline void pattern_fill(void* buffer, size_t length, uint64_t seed) {
    auto* p = static_cast<unsigned char*>(buffer);
    size_t words = length / 8;
    for (size_t k = 0; k < words; ++k) {
        uint64_t w = pattern_word(seed, k);
        std::memcpy(p + 8 * k, &w, 8);
    }
    uint64_t tail = pattern_word(seed, words);
    for (size_t o = 8 * words; o < length; ++o) {
        p[o] = static_cast<unsigned char>(tail >> (8 * (o % 8)));
    }
}

/// Returns true if @p buffer holds the pattern; otherwise the first wrong byte.
inline bool pattern_verify(const void* buffer, size_t length, uint64_t seed, size_t* bad_offset,
                           unsigned* expected, unsigned* got) {
    const auto* p = static_cast<const unsigned char*>(buffer);
    size_t words = length / 8;
    size_t o = 0;
    for (size_t k = 0; k < words; ++k) {
        uint64_t w = pattern_word(seed, k), v;
        std::memcpy(&v, p + 8 * k, 8);
        if (v != w) {
            o = 8 * k;
            break;
        }
        o = 8 * (k + 1);
    }
    for (; o < length; ++o) {
        auto want = static_cast<unsigned char>(pattern_word(seed, o / 8) >> (8 * (o % 8)));
        if (p[o] != want) {
            *bad_offset = o;
            *expected = want;
            *got = p[o];
            return false;
        }
    }
    return true;
}

}  // namespace swy::perf
