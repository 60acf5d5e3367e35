// A context made from the environment plus settings by name (without SWY_): what most
// white-box tests start from (hostile_peer_test, tcp_worker_test, worker_create_test, the
// verbs device tests through verbs_test_node.h).
#pragma once

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <string>
#include <utility>
#include <vector>

namespace swy::test {

/// Settings by name without SWY_, applied in order ({"TLS", "tcp,self"}).
using Settings = std::vector<std::pair<std::string, std::string>>;

/// The context, or null (with a test failure) if a setting or the creation was refused.
inline swy_context_h make_context(const Settings& settings) {
    swy_config_h cfg = nullptr;
    EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
    if (cfg == nullptr) return nullptr;
    for (const auto& [name, value] : settings) {
        EXPECT_EQ(swy_config_set(cfg, name.c_str(), value.c_str()), SWY_OK) << name;
    }
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
    swy_config_release(cfg);
    return ctx;
}

}  // namespace swy::test
