// Configuration: one table of every SWY_* variable (type, default, help), parsed from the
// environment and overridable per context through the C API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace swy::common {

enum class ConfigType {
    kBool,      ///< y/yes/1/on/true or n/no/0/off/false
    kUnsigned,  ///< decimal integer
    kSize,      ///< bytes with optional K/M/G suffix (powers of 1024), "inf" = max, "auto" = 0
    kDouble,    ///< floating point
    kString,    ///< free text or one of an enumerated set (help text lists them)
    kList,      ///< comma-separated names
    kTime,      ///< duration: number with ns/us/ms/s suffix (default unit: ms); stored in ns
};

/// One declared variable. `name` is without the "SWY_" prefix (e.g. "RNDV_THRESH").
///
/// Config::set() checks a value against the declaration, so that a context is never created
/// from a value that cannot mean anything: its type, then
///   - `choices` (strings and lists): the accepted values, "|"-separated ("auto|get|put"),
///     matched without regard to case and stored as declared; for a list, each item must be
///     one of them. Empty: free text.
///   - `min`/`max` (unsigned, size; time in ns): the accepted range, both inclusive ("auto"
///     reads as 0 and "inf" as the largest size, so a size with min > 0 refuses "auto").
/// Rules that tie several variables together (a transport's geometry) are checked when the
/// context is created (tl::check_settings).
struct ConfigVar {
    std::string_view name;
    ConfigType type;
    std::string_view default_value;
    std::string_view help;
    std::string_view choices = {};
    uint64_t min = 0;
    uint64_t max = UINT64_MAX;
};

/// Every variable Switchyard knows, in a stable order: the common ones (config_table.cpp),
/// then each transport's, in registry order (transport_config_table()).
std::span<const ConfigVar> config_table();

/// The variables the transports declare in their folders, in registry order. Defined by the
/// transport registry (transports/registry.cpp), so that common/ names no transport.
std::span<const ConfigVar> transport_config_table();

/// The declaration of @p name (with or without "SWY_"), or null if there is none.
const ConfigVar* find_config_var(std::string_view name);

/// Text name of a type ("bool", "size", ...), for swy-info -c.
std::string_view config_type_name(ConfigType type);

/// What @p var accepts beyond its type, in words, for messages and swy-info -c: "one of: auto,
/// get, put, pipeline", "2 to 65536", "128 B to 1 MiB"; "" when it declares no limit.
std::string config_var_bounds(const ConfigVar& var);

/// A set of values for every variable in config_table(). Copyable.
class Config {
public:
    /// All defaults.
    Config();

    /// Defaults overridden by SWY_* variables from the environment. Unknown SWY_* names log a
    /// warning. A value that fails to parse gives kInvalidParam and a message in @p error.
    static Status from_environment(Config* out, std::string* error);

    /// Override one variable; @p name with or without "SWY_". kNotFound / kInvalidParam.
    Status set(std::string_view name, std::string_view value, std::string* error = nullptr);

    /// Current value as text (kNotFound for unknown names).
    Status get_text(std::string_view name, std::string* out) const;

    // Typed getters. The name must be declared in the table with that type: anything else is
    // a library bug, logged and aborted on in every build (never a silent 0). Code that reads
    // a group of settings uses common::ConfigReader, which reports such a bug as an error.
    bool get_bool(std::string_view name) const;
    uint64_t get_unsigned(std::string_view name) const;
    size_t get_size(std::string_view name) const;  ///< "auto" → 0, "inf" → SIZE_MAX
    double get_double(std::string_view name) const;
    uint64_t get_time_ns(std::string_view name) const;
    std::string get_string(std::string_view name) const;
    std::vector<std::string> get_list(std::string_view name) const;

    /// True if the variable was set by the environment or set() (not left at default).
    bool is_set(std::string_view name) const;

private:
    std::vector<std::string> values_;  // index = position in config_table()
    std::vector<bool> explicit_;
};

}  // namespace swy::common
