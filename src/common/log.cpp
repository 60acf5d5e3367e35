#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

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

void log_printf(LogLevel level, const char* fmt, ...) {
    if (!log_enabled(level)) return;
    static constexpr const char* kTags[] = {"ERROR", "WARN ", "INFO ", "DEBUG", "TRACE"};
    char line[1024];
    int n = std::snprintf(line, sizeof(line), "[swy:%d] %s ", static_cast<int>(getpid()),
                          kTags[static_cast<int>(level)]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < static_cast<int>(sizeof(line))) {
        std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n), fmt, ap);
    }
    va_end(ap);
    std::fprintf(stderr, "%s\n", line);
}

}  // namespace swy::common
