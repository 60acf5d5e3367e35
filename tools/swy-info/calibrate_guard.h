// When `swy-info --calibrate` must not write what it measured (issue #18): a host busier
// than it has CPUs, or figures that scatter between two rounds, measure the scheduler more
// than the memory system, and a file written then would mislead the protocol selector on
// every later run. Header-only and free of I/O so that unit tests check the rules.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace swy::info {

/// Two rounds may differ by at most this factor for a figure to be trusted.
inline constexpr double kMaxScatter = 2.0;

/// Why a host with load average @p load on @p cpus usable CPUs is too busy to calibrate
/// ("" when it is not): more runnable work than CPUs means our two processes share them.
inline std::string busy_reason(double load, int cpus) {
    if (cpus < 1) cpus = 1;
    if (load <= cpus) return "";
    char text[160];
    std::snprintf(text, sizeof(text), "the load average is %.1f on %d usable CPU%s", load, cpus,
                  cpus == 1 ? "" : "s");
    return text;
}

/// One figure as two rounds measured it (only figures measured in both rounds).
struct FigurePair {
    std::string key;
    double first = 0;
    double second = 0;
};

/// The figures whose two measurements differ by more than kMaxScatter (or one of which is
/// not a positive number), one description each ("fifo_latency_s: 1.2e-07 then 4.1e-07").
inline std::vector<std::string> scattered_figures(const std::vector<FigurePair>& pairs) {
    std::vector<std::string> out;
    for (const FigurePair& p : pairs) {
        const double lo = std::min(p.first, p.second);
        const double hi = std::max(p.first, p.second);
        if (lo > 0 && hi <= kMaxScatter * lo) continue;
        char text[160];
        std::snprintf(text, sizeof(text), "%s: %.3g then %.3g", p.key.c_str(), p.first, p.second);
        out.emplace_back(text);
    }
    return out;
}

}  // namespace swy::info
