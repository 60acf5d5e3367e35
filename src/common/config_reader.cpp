#include "common/config_reader.h"

namespace swy::common {

const ConfigVar* ConfigReader::declared(std::string_view name, ConfigType type) {
    const ConfigVar* var = find_config_var(name);
    if (var == nullptr) {
        fail("SWY_" + std::string(name) +
             " is read but not declared in the configuration table (a library bug: a "
             "misspelt or undeclared variable)");
        return nullptr;
    }
    if (var->type != type) {
        fail("SWY_" + std::string(name) + " is read as a " + std::string(config_type_name(type)) +
             " but declared as a " + std::string(config_type_name(var->type)) + " (a library bug)");
        return nullptr;
    }
    return var;
}

void ConfigReader::fail(std::string message) {
    if (!error_.empty()) error_ += "; ";
    error_ += message;
}

void ConfigReader::out_of_range(std::string_view name, const std::string& text,
                                const std::string& range) {
    fail("SWY_" + std::string(name) + "=" + text + " is out of range: " + range);
}

bool ConfigReader::get_bool(std::string_view name) {
    return declared(name, ConfigType::kBool) != nullptr && config_.get_bool(name);
}

uint64_t ConfigReader::get_unsigned(std::string_view name, uint64_t min, uint64_t max) {
    if (declared(name, ConfigType::kUnsigned) == nullptr) return min;
    const uint64_t v = config_.get_unsigned(name);
    if (v < min || v > max) {
        std::string text;
        (void)config_.get_text(name, &text);
        out_of_range(name, text,
                     max == UINT64_MAX ? "at least " + std::to_string(min)
                                       : std::to_string(min) + " to " + std::to_string(max));
        return min;
    }
    return v;
}

size_t ConfigReader::get_size(std::string_view name, size_t min, size_t max) {
    if (declared(name, ConfigType::kSize) == nullptr) return min;
    const size_t v = config_.get_size(name);
    if (v < min || v > max) {
        std::string text;
        (void)config_.get_text(name, &text);
        out_of_range(name, text,
                     max == SIZE_MAX ? "at least " + std::to_string(min) + " B"
                                     : std::to_string(min) + " B to " + std::to_string(max) + " B");
        return min;
    }
    return v;
}

double ConfigReader::get_double(std::string_view name) {
    return declared(name, ConfigType::kDouble) != nullptr ? config_.get_double(name) : 0.0;
}

uint64_t ConfigReader::get_time_ns(std::string_view name) {
    return declared(name, ConfigType::kTime) != nullptr ? config_.get_time_ns(name) : 0;
}

std::string ConfigReader::get_string(std::string_view name) {
    return declared(name, ConfigType::kString) != nullptr ? config_.get_string(name)
                                                          : std::string();
}

std::string ConfigReader::get_choice(std::string_view name,
                                     std::initializer_list<std::string_view> choices) {
    if (declared(name, ConfigType::kString) == nullptr) return {};
    std::string v = config_.get_string(name);
    std::string list;
    for (std::string_view c : choices) {
        if (v == c) return v;
        if (!list.empty()) list += ", ";
        list += c;
    }
    fail("SWY_" + std::string(name) + "=" + v + " is not one of: " + list);
    return {};
}

std::vector<std::string> ConfigReader::get_list(std::string_view name) {
    if (declared(name, ConfigType::kList) == nullptr) return {};
    return config_.get_list(name);
}

}  // namespace swy::common
