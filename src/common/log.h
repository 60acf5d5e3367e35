// Logging to stderr with a level taken from SWY_LOG_LEVEL (error|warn|info|debug|trace).
//
// The level is the one piece of process-wide state outside the context: a log call can come
// from places that have no context (address decoding, static initialisation of plugins), and
// a library that logs must agree with itself on one level. It is read once, lazily.
#pragma once

#include <cstdarg>

namespace swy::common {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

/// True if messages at @p level are printed. Cheap: one relaxed load.
bool log_enabled(LogLevel level);

/// Override the level (tools use it for -v).
void set_log_level(LogLevel level);

/// printf-style message with a "[swy:<pid>] LEVEL " prefix, one line, to stderr.
/// Messages longer than one line buffer (1 KiB) are printed whole, not cut.
void log_printf(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Like log_printf, tagged with @p level but printed whatever SWY_LOG_LEVEL says: for output
/// the user asked for by name (SWY_PROTO_INFO=y prints its tables at info level even when
/// the log level is the default, warn).
void log_print_always(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace swy::common
