// ConfigReader: reads a set of variables from a Config into a typed settings struct, with
// range checks, and reports every problem at once. Transports (and the worker) read their
// settings through one at open time, so that
//   - a name the code asks for that is not declared in config_table() (a misspelling, a
//     variable dropped from the table) fails the open with a message naming it, instead of
//     reading 0;
//   - a value out of range fails with a message naming the variable, its value and the range.
//
//   common::ConfigReader r(config);
//   s.cells = r.get_unsigned("SHM_FIFO_CELLS", 2, UINT32_MAX);
//   s.timeout_ns = r.get_time_ns("TCP_CONNECT_TIMEOUT");
//   if (!r.ok()) { *why = r.error(); return Status::kInvalidParam; }
//
// Set-up time only. Not thread-safe (one reader per thread); the Config must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"

namespace swy::common {

class ConfigReader {
public:
    explicit ConfigReader(const Config& config) : config_(config) {}

    /// The variable's value; on an undeclared name, a wrong type or a value outside
    /// [@p min, @p max], an error is recorded and the result is @p min (never used: ok() is
    /// false). Names are without "SWY_".
    bool get_bool(std::string_view name);
    uint64_t get_unsigned(std::string_view name, uint64_t min = 0, uint64_t max = UINT64_MAX);
    size_t get_size(std::string_view name, size_t min = 0, size_t max = SIZE_MAX);
    double get_double(std::string_view name);
    uint64_t get_time_ns(std::string_view name);
    std::string get_string(std::string_view name);
    /// One of @p choices (exact text); else an error listing them.
    std::string get_choice(std::string_view name, std::initializer_list<std::string_view> choices);
    std::vector<std::string> get_list(std::string_view name);

    /// Record a problem found by the caller's own check of a value (e.g. two variables that
    /// must agree): @p message should name the variable(s).
    void fail(std::string message);

    /// True when every read so far was declared, typed as asked and in range.
    bool ok() const { return error_.empty(); }
    /// Every problem, separated by "; " ("" when ok()).
    const std::string& error() const { return error_; }

private:
    /// The declaration of @p name if it exists with @p type; else records why and null.
    const ConfigVar* declared(std::string_view name, ConfigType type);
    void out_of_range(std::string_view name, const std::string& text, const std::string& range);

    const Config& config_;
    std::string error_;
};

}  // namespace swy::common
