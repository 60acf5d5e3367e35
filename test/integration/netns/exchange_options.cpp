#include "exchange_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace swy::netns {
namespace {

constexpr const char* kUsage =
    "usage: swy_exchange --rank R --size N --dir DIR [options]\n"
    "  --rank R                this process's rank, 0..N-1\n"
    "  --size N                number of ranks (2..65535)\n"
    "  --dir DIR               shared directory: each rank publishes DIR/<rank>.addr\n"
    "  --pattern ring|alltoall ring: send to rank+1, receive from rank-1; alltoall: every pair\n"
    "  --sizes LIST            message sizes: 0,8,4K,1M or A:B (powers of two from A to B)\n"
    "  --iters N               iterations over all sizes (default 10)\n"
    "  --tolerate-failures     when an endpoint fails, keep exchanging with the live ranks\n"
    "  --timeout S             seconds to wait for addresses or for one round (default 30)\n"
    "  --progress-every N      print a progress line every N iterations (default 1)\n"
    "  --window N              alltoall: exchange with N peers at a time (default 0: all)\n"
    "  --wait-for FILE         once connected, wait until FILE exists before the first round\n"
    "                          (lets a test inject a fault after connection set-up)\n";

[[noreturn]] void usage_error(const char* what, const char* value) {
    std::fprintf(stderr, "swy_exchange: %s '%s'\n%s", what, value, kUsage);
    std::exit(2);
}

bool parse_size(std::string_view s, size_t* out) {
    if (s.empty()) return false;
    size_t v = 0, i = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
        v = v * 10 + static_cast<size_t>(s[i] - '0');
    if (i == 0) return false;
    if (i < s.size()) {
        if (i + 1 != s.size()) return false;
        switch (s[i]) {
            case 'K':
            case 'k': v <<= 10; break;
            case 'M':
            case 'm': v <<= 20; break;
            case 'G':
            case 'g': v <<= 30; break;
            default: return false;
        }
    }
    *out = v;
    return true;
}

std::vector<size_t> parse_sizes(const std::string& text) {
    std::vector<size_t> out;
    if (size_t colon = text.find(':'); colon != std::string::npos) {
        size_t lo, hi;
        if (!parse_size(std::string_view(text).substr(0, colon), &lo) ||
            !parse_size(std::string_view(text).substr(colon + 1), &hi) || hi < lo) {
            usage_error("bad --sizes", text.c_str());
        }
        if (lo == 0) out.push_back(0);
        for (size_t s = lo == 0 ? 1 : lo; s <= hi; s *= 2)
            out.push_back(s);
        return out;
    }
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        size_t v;
        if (!parse_size(std::string_view(text).substr(start, comma - start), &v)) {
            usage_error("bad --sizes", text.c_str());
        }
        out.push_back(v);
        start = comma + 1;
    }
    return out;
}

unsigned parse_unsigned(const char* flag, const char* v) {
    char* end = nullptr;
    errno = 0;
    unsigned long n = std::strtoul(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n > 0xFFFFFFFFul) usage_error(flag, v);
    return static_cast<unsigned>(n);
}

}  // namespace

const char* pattern_name(Pattern p) { return p == Pattern::kRing ? "ring" : "alltoall"; }

ExchangeOptions parse_exchange_options(int argc, char** argv) {
    ExchangeOptions o;
    for (int i = 1; i < argc; ++i) {
        std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (flag == "--tolerate-failures") {
            o.tolerate_failures = true;
            continue;
        }
        if (i + 1 >= argc) usage_error("missing value after", argv[i]);
        const char* v = argv[++i];
        if (flag == "--rank") {
            o.rank = static_cast<int>(parse_unsigned("bad --rank", v));
        } else if (flag == "--size") {
            o.size = static_cast<int>(parse_unsigned("bad --size", v));
        } else if (flag == "--dir") {
            o.dir = v;
        } else if (flag == "--pattern") {
            if (std::strcmp(v, "ring") == 0) {
                o.pattern = Pattern::kRing;
            } else if (std::strcmp(v, "alltoall") == 0) {
                o.pattern = Pattern::kAllToAll;
            } else {
                usage_error("bad --pattern", v);
            }
        } else if (flag == "--sizes") {
            o.sizes = parse_sizes(v);
        } else if (flag == "--iters") {
            o.iters = parse_unsigned("bad --iters", v);
        } else if (flag == "--timeout") {
            o.timeout_s = parse_unsigned("bad --timeout", v);
        } else if (flag == "--wait-for") {
            o.wait_for = v;
        } else if (flag == "--window") {
            o.window = parse_unsigned("bad --window", v);
        } else if (flag == "--progress-every") {
            o.progress_every = parse_unsigned("bad --progress-every", v);
            if (o.progress_every == 0) usage_error("bad --progress-every", v);
        } else {
            usage_error("unknown flag", argv[i - 1]);
        }
    }
    if (o.size < 2 || o.size > 0xFFFF)
        usage_error("--size must be 2..65535, got", std::to_string(o.size).c_str());
    if (o.rank < 0 || o.rank >= o.size)
        usage_error("--rank must be 0..size-1, got", std::to_string(o.rank).c_str());
    if (o.dir.empty()) usage_error("--dir is required", "");
    if (o.sizes.size() > 0xFFFF) usage_error("too many --sizes", "");
    return o;
}

}  // namespace swy::netns
