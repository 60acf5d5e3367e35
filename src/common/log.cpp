#include "common/log.h"

#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace swy::common {
namespace {

int parse_level(const char* text) {
    if (text == nullptr) return static_cast<int>(LogLevel::kWarn);
    static constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};
    for (int i = 0; i < 5; ++i) {
        if (strcasecmp(text, kNames[i]) == 0) return i;
    }
    return static_cast<int>(LogLevel::kWarn);
}

std::atomic<int>& level_slot() {
    static std::atomic<int> level{parse_level(std::getenv("SWY_LOG_LEVEL"))};
    return level;
}

}  // namespace

bool log_enabled(LogLevel level) {
    return static_cast<int>(level) <= level_slot().load(std::memory_order_relaxed);
}

void set_log_level(LogLevel level) { level_slot().store(static_cast<int>(level)); }

namespace {

void vlog(LogLevel level, const char* fmt, va_list ap) {
    static constexpr const char* kTags[] = {"ERROR", "WARN ", "INFO ", "DEBUG", "TRACE"};
    char line[1024];
    const int prefix = std::snprintf(line, sizeof(line), "[swy:%d] %s ", static_cast<int>(getpid()),
                                     kTags[static_cast<int>(level)]);
    if (prefix <= 0 || prefix >= static_cast<int>(sizeof(line))) return;
    va_list again;
    va_copy(again, ap);
    const int body =
        std::vsnprintf(line + prefix, sizeof(line) - static_cast<size_t>(prefix), fmt, ap);
    if (body >= 0 && static_cast<size_t>(prefix + body) >= sizeof(line)) {
        // Too long for the line buffer (protocol tables): format it again, whole.
        std::string whole(line, static_cast<size_t>(prefix));
        whole.resize(static_cast<size_t>(prefix + body) + 1);
        std::vsnprintf(whole.data() + prefix, static_cast<size_t>(body) + 1, fmt, again);
        whole.resize(static_cast<size_t>(prefix + body));
        std::fprintf(stderr, "%s\n", whole.c_str());
    } else {
        std::fprintf(stderr, "%s\n", line);
    }
    va_end(again);
}

}  // namespace

void log_printf(LogLevel level, const char* fmt, ...) {
    if (!log_enabled(level)) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void log_print_always(LogLevel level, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

}  // namespace swy::common
