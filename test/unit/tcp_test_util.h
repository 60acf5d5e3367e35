// Helpers shared by the tcp transport unit tests: deterministic payloads and a bounded
// progress loop over several interfaces.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "transports/tcp/tcp_iface.h"

namespace swy::tl::tcp::test {

/// @p n bytes of a pseudo-random pattern; different seeds give different payloads.
inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<uint8_t>(x >> 24);
    }
    return v;
}

/// Progresses every interface (null entries skipped) until @p done or 10 s pass; false on
/// timeout.
inline bool progress_until(std::initializer_list<TcpInterface*> ifaces,
                           const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        for (TcpInterface* i : ifaces) {
            if (i != nullptr) i->progress();
        }
    }
    return true;
}

}  // namespace swy::tl::tcp::test
