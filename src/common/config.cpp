// Config: values for every variable of config_table(), kept as (trimmed) text.
//
// A value is validated against its type when it is set, so a Config never holds text that
// does not parse; the typed getters parse again on each call. Getters run at setup time only
// (context/worker/endpoint creation), so re-parsing is cheaper than keeping a second,
// typed copy in step with the text that get_text() must return verbatim.
//
// Thread safety: const members may be called concurrently; set() and from_environment()
// need the caller to serialise them against other use of the same Config (and
// from_environment() against setenv() in other threads, as any reader of environ does).
#include "common/config.h"

#include <unistd.h>  // environ
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>

#include "common/log.h"

namespace swy::common {
namespace {

constexpr std::string_view kPrefix = "SWY_";
constexpr size_t kNotDeclared = SIZE_MAX;

std::string_view trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    size_t b = s.find_first_not_of(kSpace);
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(kSpace);
    return s.substr(b, e - b + 1);
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
               return lower(x) == lower(y);
           });
}

std::string_view strip_prefix(std::string_view name) {
    if (name.starts_with(kPrefix)) name.remove_prefix(kPrefix.size());
    return name;
}

size_t find_index(std::string_view name) {
    name = strip_prefix(name);
    auto table = config_table();
    for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].name == name) return i;
    }
    return kNotDeclared;
}

/// Leading decimal digits of @p s as uint64_t; the rest goes to @p rest. Rejects signs,
/// an empty digit run and overflow.
std::optional<uint64_t> parse_leading_u64(std::string_view s, std::string_view* rest) {
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
    if (ec != std::errc() || ptr == s.data()) return std::nullopt;
    *rest = s.substr(static_cast<size_t>(ptr - s.data()));
    return v;
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

std::optional<bool> parse_bool(std::string_view s) {
    for (auto t : {"y", "yes", "1", "on", "true"}) {
        if (iequals(s, t)) return true;
    }
    for (auto f : {"n", "no", "0", "off", "false"}) {
        if (iequals(s, f)) return false;
    }
    return std::nullopt;
}

std::optional<uint64_t> parse_unsigned(std::string_view s) {
    std::string_view rest;
    auto v = parse_leading_u64(s, &rest);
    if (!v || !rest.empty()) return std::nullopt;
    return v;
}

std::optional<size_t> parse_size(std::string_view s) {
    if (iequals(s, "auto")) return size_t{0};
    if (iequals(s, "inf")) return SIZE_MAX;
    std::string_view suffix;
    auto v = parse_leading_u64(s, &suffix);
    if (!v) return std::nullopt;
    uint64_t unit = 1;
    if (!suffix.empty()) {
        // K, KB, KiB (any case): all powers of 1024, as in UCX and the memory of every HPC user.
        std::string_view mult = suffix.substr(0, 1);
        std::string_view tail = suffix.substr(1);
        if (iequals(mult, "b")) {
            if (!tail.empty()) return std::nullopt;
        } else {
            if (iequals(mult, "k"))
                unit = 1ull << 10;
            else if (iequals(mult, "m"))
                unit = 1ull << 20;
            else if (iequals(mult, "g"))
                unit = 1ull << 30;
            else if (iequals(mult, "t"))
                unit = 1ull << 40;
            else
                return std::nullopt;
            if (!tail.empty() && !iequals(tail, "b") && !iequals(tail, "ib")) return std::nullopt;
        }
    }
    auto bytes = checked_mul(*v, unit);
    if (!bytes || *bytes > std::numeric_limits<size_t>::max()) return std::nullopt;
    return static_cast<size_t>(*bytes);
}

std::optional<uint64_t> parse_time_ns(std::string_view s) {
    std::string_view suffix;
    auto v = parse_leading_u64(s, &suffix);
    if (!v) return std::nullopt;
    uint64_t unit;
    if (suffix.empty() || iequals(suffix, "ms"))
        unit = 1'000'000;
    else if (iequals(suffix, "s"))
        unit = 1'000'000'000;
    else if (iequals(suffix, "us"))
        unit = 1'000;
    else if (iequals(suffix, "ns"))
        unit = 1;
    else
        return std::nullopt;
    return checked_mul(*v, unit);
}

std::optional<double> parse_double(std::string_view s) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

/// Why @p value is not a valid @p type, or nullptr if it is.
const char* type_error(ConfigType type, std::string_view value) {
    switch (type) {
        case ConfigType::kBool:
            return parse_bool(value) ? nullptr : "expected y/yes/1/on/true or n/no/0/off/false";
        case ConfigType::kUnsigned:
            return parse_unsigned(value)
                       ? nullptr
                       : "expected a non-negative decimal integer that fits 64 bits";
        case ConfigType::kSize:
            return parse_size(value) ? nullptr
                                     : "expected bytes with an optional K/M/G/T suffix (e.g. 8K, "
                                       "8KiB, 1M), \"inf\" or \"auto\"";
        case ConfigType::kDouble:
            return parse_double(value) ? nullptr : "expected a finite floating-point number";
        case ConfigType::kTime:
            return parse_time_ns(value) ? nullptr
                                        : "expected a whole number with an optional ns/us/ms/s "
                                          "suffix (plain number = ms)";
        case ConfigType::kString:
        case ConfigType::kList: return nullptr;
    }
    return "unknown type";
}

/// The items of a "|"-separated choice list.
std::vector<std::string_view> split_choices(std::string_view choices) {
    std::vector<std::string_view> out;
    while (!choices.empty()) {
        const size_t bar = choices.find('|');
        out.push_back(choices.substr(0, bar));
        choices = bar == std::string_view::npos ? std::string_view{} : choices.substr(bar + 1);
    }
    return out;
}

/// A bound in the unit a user writes: "1 MiB" or "100 B" for sizes, "200 ms" for times.
std::string format_bound(ConfigType type, uint64_t v) {
    struct Unit {
        uint64_t scale;
        const char* name;
    };
    static constexpr Unit kSizes[] = {
        {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
    static constexpr Unit kTimes[] = {
        {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}, {1, "ns"}};
    if (type == ConfigType::kSize) {
        for (const Unit& u : kSizes) {
            if (v >= u.scale && v % u.scale == 0) return std::to_string(v / u.scale) + " " + u.name;
        }
        return std::to_string(v) + " B";
    }
    if (type == ConfigType::kTime) {
        for (const Unit& u : kTimes) {
            if (v >= u.scale && v % u.scale == 0) return std::to_string(v / u.scale) + " " + u.name;
        }
        return "0 ms";
    }
    return std::to_string(v);
}

/// The number a numeric value stands for (time in ns), if it is one.
std::optional<uint64_t> numeric_value(ConfigType type, std::string_view value) {
    switch (type) {
        case ConfigType::kUnsigned: return parse_unsigned(value);
        case ConfigType::kSize: return parse_size(value);
        case ConfigType::kTime: return parse_time_ns(value);
        default: return std::nullopt;
    }
}

size_t edit_distance(std::string_view a, std::string_view b);

/// Checks @p value (of the right type) against @p var's choices and range. On success,
/// @p stored is what to keep: the declared spelling of each choice. On failure, why.
std::optional<std::string> bounds_error(const ConfigVar& var, std::string_view value,
                                        std::string* stored) {
    if (!var.choices.empty() &&
        (var.type == ConfigType::kString || var.type == ConfigType::kList)) {
        const std::vector<std::string_view> choices = split_choices(var.choices);
        std::vector<std::string_view> items;
        if (var.type == ConfigType::kString) {
            items.push_back(value);
        } else {
            std::string_view rest = value;
            while (!rest.empty()) {
                const size_t comma = rest.find(',');
                std::string_view item = trim(rest.substr(0, comma));
                if (!item.empty()) items.push_back(item);
                rest =
                    comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            }
        }
        stored->clear();
        for (std::string_view item : items) {
            std::string_view match;
            for (std::string_view c : choices) {
                if (iequals(item, c)) match = c;
            }
            if (match.empty()) {
                // What follows 'SWY_X="value" is ': the item itself where a list has several.
                std::string why = var.type == ConfigType::kList
                                      ? "not valid: '" + std::string(item) + "' is not one of: "
                                      : std::string("not one of: ");
                for (size_t i = 0; i < choices.size(); ++i) {
                    if (i != 0) why += ", ";
                    why += choices[i];
                }
                std::string_view best;
                size_t best_dist = 3;  // a near miss only
                for (std::string_view c : choices) {
                    const size_t d = edit_distance(item, c);
                    if (d < best_dist) {
                        best_dist = d;
                        best = c;
                    }
                }
                if (!best.empty()) why += " (did you mean " + std::string(best) + "?)";
                return why;
            }
            if (!stored->empty()) *stored += ',';
            *stored += match;
        }
        return std::nullopt;
    }
    *stored = std::string(value);
    if (var.min == 0 && var.max == UINT64_MAX) return std::nullopt;
    const std::optional<uint64_t> v = numeric_value(var.type, value);
    if (!v || (*v >= var.min && *v <= var.max)) return std::nullopt;
    return "out of range: " + config_var_bounds(var);
}

/// Levenshtein distance, for "did you mean" on unknown variables. Names are short.
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
            diag = up;
        }
    }
    return row[b.size()];
}

void warn_unknown(std::string_view full_name) {
    std::string_view name = strip_prefix(full_name);
    std::string_view best;
    size_t best_dist = 3;  // suggest only close misspellings
    for (const ConfigVar& var : config_table()) {
        size_t d = edit_distance(name, var.name);
        if (d < best_dist) {
            best_dist = d;
            best = var.name;
        }
    }
    if (best.empty()) {
        log_printf(LogLevel::kWarn, "unknown variable %.*s ignored (swy-info -c lists them all)",
                   static_cast<int>(full_name.size()), full_name.data());
    } else {
        log_printf(LogLevel::kWarn, "unknown variable %.*s ignored; did you mean SWY_%.*s?",
                   static_cast<int>(full_name.size()), full_name.data(),
                   static_cast<int>(best.size()), best.data());
    }
}

/// Index of @p name if it is declared with @p type. A mismatch is a library bug: reading
/// a default 0 instead would hide it, so it stops the process with the name.
size_t typed_index(std::string_view name, ConfigType type) {
    size_t i = find_index(name);
    if (i != kNotDeclared && config_table()[i].type == type) return i;
    log_printf(LogLevel::kError, "configuration variable SWY_%.*s read as a %.*s: %s",
               static_cast<int>(name.size()), name.data(),
               static_cast<int>(config_type_name(type).size()), config_type_name(type).data(),
               i == kNotDeclared ? "not declared" : "declared with another type");
    std::abort();
}

}  // namespace

std::string config_var_bounds(const ConfigVar& var) {
    if (!var.choices.empty()) {
        std::string text = "one of: ";
        const std::vector<std::string_view> choices = split_choices(var.choices);
        for (size_t i = 0; i < choices.size(); ++i) {
            if (i != 0) text += ", ";
            text += choices[i];
        }
        return text;
    }
    if (var.min == 0 && var.max == UINT64_MAX) return {};
    if (var.max == UINT64_MAX) return "at least " + format_bound(var.type, var.min);
    return format_bound(var.type, var.min) + " to " + format_bound(var.type, var.max);
}

const ConfigVar* find_config_var(std::string_view name) {
    const size_t i = find_index(name);
    return i == kNotDeclared ? nullptr : &config_table()[i];
}

Config::Config() {
    auto table = config_table();
    values_.reserve(table.size());
    for (const ConfigVar& var : table)
        values_.emplace_back(var.default_value);
    explicit_.assign(table.size(), false);
}

Status Config::from_environment(Config* out, std::string* error) {
    if (out == nullptr) return Status::kInvalidParam;
    Config cfg;
    std::string errors;
    for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
        std::string_view entry(*env);
        if (!entry.starts_with(kPrefix)) continue;
        size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view name = entry.substr(0, eq);
        std::string_view value = entry.substr(eq + 1);
        if (find_index(name) == kNotDeclared) {
            warn_unknown(name);
            continue;
        }
        std::string why;
        if (cfg.set(name, value, &why) != Status::kOk) {
            // Keep going so that one run reports every bad variable, not just the first.
            if (!errors.empty()) errors += "; ";
            errors += why;
        }
    }
    if (!errors.empty()) {
        if (error != nullptr) *error = std::move(errors);
        return Status::kInvalidParam;
    }
    *out = std::move(cfg);
    return Status::kOk;
}

Status Config::set(std::string_view name, std::string_view value, std::string* error) {
    size_t i = find_index(name);
    if (i == kNotDeclared) {
        if (error != nullptr) {
            *error = "unknown configuration variable SWY_";
            *error += strip_prefix(name);
        }
        return Status::kNotFound;
    }
    const ConfigVar& var = config_table()[i];
    std::string_view v = trim(value);
    if (const char* why = type_error(var.type, v)) {
        if (error != nullptr) {
            *error = "SWY_";
            *error += var.name;
            *error += "=\"";
            *error += value;
            *error += "\" is not a valid ";
            *error += config_type_name(var.type);
            *error += ": ";
            *error += why;
        }
        return Status::kInvalidParam;
    }
    std::string stored;
    if (std::optional<std::string> why = bounds_error(var, v, &stored)) {
        if (error != nullptr) {
            *error = "SWY_";
            *error += var.name;
            *error += "=\"";
            *error += value;
            *error += "\" is ";
            *error += *why;
        }
        return Status::kInvalidParam;
    }
    values_[i] = std::move(stored);
    explicit_[i] = true;
    return Status::kOk;
}

Status Config::get_text(std::string_view name, std::string* out) const {
    size_t i = find_index(name);
    if (i == kNotDeclared) return Status::kNotFound;
    if (out == nullptr) return Status::kInvalidParam;
    *out = values_[i];
    return Status::kOk;
}

bool Config::get_bool(std::string_view name) const {
    return parse_bool(values_[typed_index(name, ConfigType::kBool)]).value_or(false);
}

uint64_t Config::get_unsigned(std::string_view name) const {
    return parse_unsigned(values_[typed_index(name, ConfigType::kUnsigned)]).value_or(0);
}

size_t Config::get_size(std::string_view name) const {
    return parse_size(values_[typed_index(name, ConfigType::kSize)]).value_or(0);
}

double Config::get_double(std::string_view name) const {
    return parse_double(values_[typed_index(name, ConfigType::kDouble)]).value_or(0.0);
}

uint64_t Config::get_time_ns(std::string_view name) const {
    return parse_time_ns(values_[typed_index(name, ConfigType::kTime)]).value_or(0);
}

std::string Config::get_string(std::string_view name) const {
    return values_[typed_index(name, ConfigType::kString)];
}

std::vector<std::string> Config::get_list(std::string_view name) const {
    std::vector<std::string> items;
    std::string_view rest = values_[typed_index(name, ConfigType::kList)];
    while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view item = trim(rest.substr(0, comma));
        if (!item.empty()) items.emplace_back(item);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    // An exclusion list keeps its "^" on the first item, written without spaces: "^ shm, tcp"
    // and "^shm,tcp" both give {"^shm", "tcp"}.
    if (!items.empty() && items[0].starts_with('^')) {
        std::string first(trim(std::string_view(items[0]).substr(1)));
        if (first.empty()) {
            items.erase(items.begin());  // "^, shm": the "^" applies to the next name
            if (!items.empty()) items[0] = std::string("^").append(items[0]);
        } else {
            items[0] = "^" + first;
        }
    }
    return items;
}

bool Config::is_set(std::string_view name) const {
    size_t i = find_index(name);
    return i != kNotDeclared && explicit_[i];
}

}  // namespace swy::common
