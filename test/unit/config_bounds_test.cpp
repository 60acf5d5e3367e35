// Specification of strict configuration (issue #18): a value with a fixed set of choices, a
// number outside its declared range and a transport geometry that breaks a rule are refused
// when the configuration is read or the context created, with the accepted values in the
// message; never accepted silently, never first noticed by the first worker.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "protocols/protocol.h"
#include "transports/shm/shm_iface.h"
#include "transports/shm/shm_transport.h"

namespace swy::common {
namespace {

/// What Config::set() says about @p value for @p name ("" when it accepts it).
std::string refusal(const char* name, const char* value) {
    Config cfg;
    std::string why;
    const Status s = cfg.set(name, value, &why);
    if (s == Status::kOk) return "";
    EXPECT_EQ(s, Status::kInvalidParam) << name << "=" << value;
    EXPECT_FALSE(why.empty());
    return why;
}

TEST(ConfigChoices, MisspeltFixedChoicesAreRefusedListingTheAllowedValues) {
    struct Case {
        const char* name;
        const char* value;
        const char* message;
    };
    const Case cases[] = {
        {"RNDV_SCHEME", "gett",
         "SWY_RNDV_SCHEME=\"gett\" is not one of: auto, get, put, pipeline (did you mean get?)"},
        {"PROTO", "eager_shrot",
         "'eager_shrot' is not one of: all, eager_short, eager_bcopy, rndv_get_cma, rndv_put_cma, "
         "rndv_get_zcopy, rndv_put_zcopy, rndv_pipeline (did you mean eager_short?)"},
        {"PROTO", "eager_short,rndv_gett_cma", "'rndv_gett_cma' is not one of: all,"},
        {"LOG_LEVEL", "verbose", "not one of: error, warn, info, debug, trace"},
        {"CMA", "maybe", "SWY_CMA=\"maybe\" is not one of: auto, y, yes"},
        {"VERBS_RCACHE", "sometimes", "SWY_VERBS_RCACHE=\"sometimes\" is not one of: auto, off"},
    };
    for (const Case& c : cases) {
        const std::string why = refusal(c.name, c.value);
        EXPECT_NE(why.find(c.message), std::string::npos) << c.name << ": " << why;
    }
}

TEST(ConfigChoices, AcceptedInAnyCaseAndStoredAsDeclared) {
    Config cfg;
    ASSERT_EQ(cfg.set("RNDV_SCHEME", " GET "), Status::kOk);
    EXPECT_EQ(cfg.get_string("RNDV_SCHEME"), "get");
    ASSERT_EQ(cfg.set("PROTO", "Eager_Short, rndv_pipeline"), Status::kOk);
    EXPECT_EQ(cfg.get_list("PROTO"), (std::vector<std::string>{"eager_short", "rndv_pipeline"}));
    ASSERT_EQ(cfg.set("LOG_LEVEL", "Info"), Status::kOk);
    EXPECT_EQ(cfg.get_string("LOG_LEVEL"), "info");
    ASSERT_EQ(cfg.set("CMA", "simulate-eperm"), Status::kOk);
}

TEST(ConfigChoices, ARefusedValueKeepsThePreviousOne) {
    Config cfg;
    ASSERT_EQ(cfg.set("RNDV_SCHEME", "put"), Status::kOk);
    EXPECT_EQ(cfg.set("RNDV_SCHEME", "pipe"), Status::kInvalidParam);
    EXPECT_EQ(cfg.get_string("RNDV_SCHEME"), "put");
}

TEST(ConfigChoices, EveryChoiceIsInTheHelpTextAndEveryDefaultIsAChoice) {
    for (const ConfigVar& var : config_table()) {
        if (var.choices.empty()) continue;
        SCOPED_TRACE(var.name);
        EXPECT_TRUE(var.type == ConfigType::kString || var.type == ConfigType::kList);
        Config cfg;
        EXPECT_EQ(cfg.set(var.name, var.default_value), Status::kOk);
    }
    // SWY_PROTO accepts exactly the selector's protocol names (and "all").
    const ConfigVar* proto = find_config_var("PROTO");
    ASSERT_NE(proto, nullptr);
    std::string expected = "all";
    for (const auto& info : proto::kProtoInfo) {
        EXPECT_NE(proto->help.find(info.name), std::string_view::npos) << info.name;
        expected += "|";
        expected += info.name;
    }
    EXPECT_EQ(proto->choices.size(), expected.size()) << proto->choices;
    for (const auto& info : proto::kProtoInfo) {
        EXPECT_NE(proto->choices.find(info.name), std::string_view::npos) << info.name;
    }
}

TEST(ConfigBounds, NumbersOutsideTheDeclaredRangeAreRefusedWithTheBounds) {
    struct Case {
        const char* name;
        const char* value;
        const char* message;
    };
    const Case cases[] = {
        // 2^32 + 1: once silently 1 (a 32-bit field of the segment header).
        {"SHM_FIFO_CELLS", "4294967297",
         "SWY_SHM_FIFO_CELLS=\"4294967297\" is out of range: 2 to 65536"},
        {"SHM_FIFO_CELLS", "1", "out of range: 2 to 65536"},
        {"SHM_PIO_CREDITS", "1", "SWY_SHM_PIO_CREDITS=\"1\" is out of range: 2 to 65536"},
        {"SHM_PIO_SLOTS", "257", "out of range: 0 to 256"},
        {"SHM_CELL_SIZE", "64", "SWY_SHM_CELL_SIZE=\"64\" is out of range: 128 B to 1 MiB"},
        {"SHM_CELL_SIZE", "inf", "out of range: 128 B to 1 MiB"},
        {"SHM_PIO_CELL_SIZE", "2M", "out of range: 128 B to 1 MiB"},
        {"RNDV_FRAG_SIZE", "auto", "SWY_RNDV_FRAG_SIZE=\"auto\" is out of range: at least 4 KiB"},
        {"RNDV_SPLIT_MIN", "4K", "out of range: at least 8 KiB"},
        {"VERBS_SQ_DEPTH", "8", "out of range: 16 to 1048576"},
        {"VERBS_MAX_INLINE", "8K", "out of range: 0 B to 4 KiB"},
    };
    for (const Case& c : cases) {
        const std::string why = refusal(c.name, c.value);
        EXPECT_NE(why.find(c.message), std::string::npos) << c.name << ": " << why;
    }
    // The bounds themselves are accepted.
    for (auto [name, value] :
         {std::pair{"SHM_FIFO_CELLS", "2"}, std::pair{"SHM_FIFO_CELLS", "65536"},
          std::pair{"SHM_CELL_SIZE", "128"}, std::pair{"SHM_CELL_SIZE", "1M"},
          std::pair{"RNDV_SPLIT_MIN", "inf"}, std::pair{"SHM_PIO_SLOTS", "0"}}) {
        EXPECT_EQ(refusal(name, value), "") << name << "=" << value;
    }
}

TEST(ConfigBounds, DescribedForSwyInfo) {
    EXPECT_EQ(config_var_bounds(*find_config_var("RNDV_SCHEME")),
              "one of: auto, get, put, pipeline");
    EXPECT_EQ(config_var_bounds(*find_config_var("SHM_CELL_SIZE")), "128 B to 1 MiB");
    EXPECT_EQ(config_var_bounds(*find_config_var("SHM_FIFO_CELLS")), "2 to 65536");
    EXPECT_EQ(config_var_bounds(*find_config_var("RNDV_THRESH")), "");
}

// ---- At the public API ---------------------------------------------------------------------

/// swy_context_create() from the environment with @p name=@p value, as a user would run it.
swy_status_t create_with_env(const char* name, const char* value) {
    setenv(name, value, 1);
    swy_context_h ctx = nullptr;
    const swy_status_t s = swy_context_create(nullptr, &ctx);
    unsetenv(name);
    if (ctx != nullptr) swy_context_destroy(ctx);
    return s;
}

TEST(ConfigAtContextCreate, EveryRefusedSpellingFailsContextCreationFromTheEnvironment) {
    for (auto [name, value] :
         {std::pair{"SWY_RNDV_SCHEME", "gett"}, std::pair{"SWY_PROTO", "eager_shrot"},
          std::pair{"SWY_LOG_LEVEL", "verbose"}, std::pair{"SWY_CMA", "maybe"},
          std::pair{"SWY_SHM_FIFO_CELLS", "4294967297"}, std::pair{"SWY_SHM_PIO_CREDITS", "1"}}) {
        testing::internal::CaptureStderr();
        EXPECT_EQ(create_with_env(name, value), SWY_ERR_INVALID_PARAM) << name << "=" << value;
        const std::string log = testing::internal::GetCapturedStderr();
        EXPECT_NE(log.find(name), std::string::npos) << log;
    }
}

/// Context creation with the settings given by swy_config_set(), and its message.
swy_status_t create_with(const std::vector<std::pair<const char*, const char*>>& settings,
                         std::string* log) {
    swy_config_h cfg = nullptr;
    EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
    for (auto [name, value] : settings)
        EXPECT_EQ(swy_config_set(cfg, name, value), SWY_OK) << name << "=" << value;
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    testing::internal::CaptureStderr();
    const swy_status_t s = swy_context_create(&cp, &ctx);
    *log = testing::internal::GetCapturedStderr();
    swy_config_release(cfg);
    if (ctx != nullptr) swy_context_destroy(ctx);
    return s;
}

// ShmConfig's built-in geometry (what swy-info and the protocol tests cost lanes from) is
// the one the configuration table's defaults make, and it carries an 8 KiB message and its
// protocol header in one FIFO cell and one PIO record (issue 17).
TEST(ShmDefaults, BuiltInGeometryIsTheConfigurationDefault) {
    Config cfg;
    swy::tl::shm::ShmConfig read;
    std::string why;
    ASSERT_EQ(swy::tl::shm::read_settings(cfg, &read, &why), Status::kOk) << why;
    const swy::tl::shm::SegmentGeometry built_in = swy::tl::shm::ShmConfig{}.geometry;
    EXPECT_EQ(read.geometry.fifo_cells, built_in.fifo_cells);
    EXPECT_EQ(read.geometry.fifo_cell_size, built_in.fifo_cell_size);
    EXPECT_EQ(read.geometry.pio_slots, built_in.pio_slots);
    EXPECT_EQ(read.geometry.pio_credits, built_in.pio_credits);
    EXPECT_EQ(read.geometry.pio_cell_size, built_in.pio_cell_size);
    EXPECT_EQ(read.geometry.max_senders, built_in.max_senders);
    EXPECT_GE(read.geometry.fifo_cell_size, 8192u + 16u);  // + the sync header
    EXPECT_GE(read.geometry.pio_cell_size, 8192u + 16u);
}

TEST(ConfigAtContextCreate, ShmGeometryRulesAreCheckedBeforeAnyWorker) {
    std::string log;
    EXPECT_EQ(create_with({{"TLS", "shm"}, {"SHM_FIFO_CELLS", "65536"}}, &log),
              SWY_ERR_INVALID_PARAM);  // 65536 x 8 KiB: once 256 MiB committed per worker
    EXPECT_NE(log.find("the FIFO (SWY_SHM_FIFO_CELLS x SWY_SHM_CELL_SIZE = 65536 x 8256 B) is "
                       "more than 64 MiB"),
              std::string::npos)
        << log;
    EXPECT_EQ(create_with({{"TLS", "shm"}, {"SHM_FIFO_CELLS", "100"}}, &log),
              SWY_ERR_INVALID_PARAM);
    EXPECT_NE(log.find("SWY_SHM_FIFO_CELLS=100 must be a power of two from 2 to 65536"),
              std::string::npos)
        << log;
    EXPECT_EQ(create_with({{"TLS", "shm"}, {"SHM_PIO_CELL_SIZE", "16K"}}, &log),
              SWY_ERR_INVALID_PARAM);
    EXPECT_NE(log.find("SWY_SHM_PIO_CELL_SIZE=16384 is larger than SWY_SHM_CELL_SIZE=8256"),
              std::string::npos)
        << log;
    EXPECT_EQ(create_with({{"TLS", "shm"}, {"SHM_CELL_SIZE", "200"}}, &log), SWY_ERR_INVALID_PARAM);
    EXPECT_NE(log.find("SWY_SHM_CELL_SIZE=200 must be a multiple of 64"), std::string::npos) << log;
    // A transport SWY_TLS leaves out is not checked: its settings cannot matter.
    EXPECT_EQ(create_with({{"TLS", "self"}, {"SHM_FIFO_CELLS", "100"}}, &log), SWY_OK) << log;
    EXPECT_EQ(create_with({{"TLS", "shm"}, {"SHM_FIFO_CELLS", "2"}}, &log), SWY_OK) << log;
}

}  // namespace
}  // namespace swy::common
