// Values given to a swy-info action: "--tls shm" after "--proto" becomes {"--tls", "shm"}.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swy::info {

/// The value flags that followed one action on the command line, in order; a switch
/// ("--force") has an empty value.
struct Args {
    std::vector<std::pair<std::string, std::string>> values;

    /// True if the switch or value flag @p flag was given.
    bool has(const char* flag) const { return get(flag) != nullptr; }

    /// The last value given for @p flag ("--tls"), or nullptr when it was not given.
    const std::string* get(const char* flag) const {
        const std::string* found = nullptr;
        for (const auto& [name, value] : values) {
            if (name == flag) found = &value;
        }
        return found;
    }
};

}  // namespace swy::info
