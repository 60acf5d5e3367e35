// "-c": the configuration table, with what the environment sets.
#include <cstdio>
#include <string>

#include "introspect/introspect.h"
#include "sections.h"
#include "text.h"

namespace swy::info {
namespace {

constexpr size_t kWrapColumns = 90;
constexpr size_t kHelpIndent = 4;

/// A value as shown to the user: quoted when empty, so the line does not end in nothing.
std::string shown(std::string_view value) {
    return value.empty() ? std::string("\"\"") : std::string(value);
}

}  // namespace

int print_config() {
    int rc = 0;
    common::Config config;
    std::string error;
    if (common::Config::from_environment(&config, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: bad configuration: %s (showing defaults)\n", error.c_str());
        config = common::Config();
        rc = 1;
    }
    std::printf(
        "Configuration variables: SWY_NAME  [type]  default  (and \"set:\" with the "
        "value from the environment)\n\n");
    for (const common::ConfigVar& var : common::config_table()) {
        std::string line = "SWY_" + std::string(var.name) + "  [" +
                           std::string(common::config_type_name(var.type)) +
                           "]  default: " + shown(var.default_value);
        if (config.is_set(var.name)) {
            std::string value;
            config.get_text(var.name, &value);
            line += "  set: " + shown(value);
        }
        std::string help(var.help);
        if (const std::string bounds = common::config_var_bounds(var); !bounds.empty()) {
            help += " Accepted: " + bounds + ".";
        }
        std::printf("%s\n%s\n", line.c_str(), wrap_text(help, kWrapColumns, kHelpIndent).c_str());
    }
    return rc;
}

}  // namespace swy::info
