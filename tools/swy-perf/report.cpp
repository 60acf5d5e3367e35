#include "report.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace swy::perf {
namespace {

// Reads a byte count (optionally with a K/M/G suffix) or "inf"; advances @p s.
bool take_bound(std::string_view& s, size_t* out) {
    if (s.substr(0, 3) == "inf") {
        s.remove_prefix(3);
        *out = SIZE_MAX;
        return true;
    }
    size_t v = 0, i = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
        size_t digit = static_cast<size_t>(s[i] - '0');
        v = v > (SIZE_MAX - digit) / 10 ? SIZE_MAX : v * 10 + digit;
    }
    if (i == 0) return false;
    if (i < s.size()) {
        unsigned shift = 0;
        switch (s[i]) {
            case 'K':
            case 'k': shift = 10; break;
            case 'M':
            case 'm': shift = 20; break;
            case 'G':
            case 'g': shift = 30; break;
            default: break;
        }
        if (shift) {
            v = v > (SIZE_MAX >> shift) ? SIZE_MAX : v << shift;
            ++i;
        }
    }
    s.remove_prefix(i);
    *out = v;
    return true;
}

}  // namespace

std::string protocol_for(std::string_view table, size_t size) {
    while (!table.empty()) {
        size_t eol = table.find('\n');
        std::string_view line = table.substr(0, eol);
        table = eol == std::string_view::npos ? std::string_view{} : table.substr(eol + 1);

        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
            line.remove_prefix(1);
        }
        size_t lo, hi;
        if (!take_bound(line, &lo) || line.substr(0, 2) != "..") continue;
        line.remove_prefix(2);
        if (!take_bound(line, &hi) || line.empty() ||
            !std::isspace(static_cast<unsigned char>(line.front()))) {
            continue;
        }
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
            line.remove_prefix(1);
        }
        size_t end = 0;
        while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end])))
            ++end;
        if (end == 0 || size < lo || size > hi) continue;
        return std::string(line.substr(0, end));
    }
    return "?";
}

void Reporter::begin(const std::string& endpoint_description) {
    if (opts_.csv) {
        // New columns go at the end: scripts read the others by position.
        std::printf(
            "test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,protocol,"
            "latency_median_us\n");
    } else {
        std::printf("# swy-perf --test %s%s%s%s", test_name(opts_.test),
                    opts_.tls.empty() ? "" : " --tls ", opts_.tls.c_str(),
                    opts_.register_memory ? " --register" : "");
        if (!opts_.host_only()) {
            // SENDER is the client's memory (the protocol column's table), RECEIVER the server's.
            std::printf(" --memtype %s:%s", opts_.memtype[0].c_str(), opts_.memtype[1].c_str());
        }
        std::printf("\n");
        if (!endpoint_description.empty()) std::printf("%s\n", endpoint_description.c_str());
        std::printf("%12s %10s %13s", "size", "iters", "latency(us)");
        if (!opts_.is_streaming()) std::printf(" %11s", "median(us)");
        std::printf(" %15s %13s  %s\n", "bandwidth(MB/s)", "msg rate(M/s)", "protocol");
    }
    std::fflush(stdout);
}

void Reporter::row(const Result& r) {
    // The table is the tag-matching one; one-sided and AM operations are not in it.
    std::string proto =
        opts_.is_one_sided() || opts_.is_am() ? std::string("-") : protocol_for(table_, r.size);
    if (opts_.csv) {
        std::printf("%s,%zu,%zu,%.4f,%.2f,%.4f,%s,%.4f\n", test_name(opts_.test), r.size, r.iters,
                    r.latency_us, r.bandwidth_MBps, r.msg_rate_Mps, proto.c_str(),
                    r.latency_median_us);
    } else {
        std::printf("%12zu %10zu %13.3f", r.size, r.iters, r.latency_us);
        if (!opts_.is_streaming()) std::printf(" %11.3f", r.latency_median_us);
        std::printf(" %15.2f %13.3f  %s\n", r.bandwidth_MBps, r.msg_rate_Mps, proto.c_str());
    }
    std::fflush(stdout);
}

}  // namespace swy::perf
