// Specification of the configuration layer: the table, every value syntax, and how the
// environment and set() override the defaults.
#include "common/config.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/config_reader.h"
#include "common/log.h"
#include "core/context.h"
#include "core/worker.h"

namespace swy::common {
namespace {

using Strings = std::vector<std::string>;

// ---- The table ---------------------------------------------------------------------------

TEST(ConfigTable, DeclaresEveryDocumentedVariableWithItsTypeAndDefault) {
    struct Expected {
        const char* name;
        ConfigType type;
        const char* def;
    };
    const Expected expected[] = {
        {"TLS", ConfigType::kList, "all"},
        {"LOG_LEVEL", ConfigType::kString, "warn"},
        {"MEMTYPES", ConfigType::kList, "host"},
        {"PIO_MAX", ConfigType::kSize, "auto"},
        {"PIO_MAX_EPS", ConfigType::kUnsigned, "16"},
        {"PIO_RESERVED", ConfigType::kUnsigned, "4"},
        {"SHM_FIFO_CELLS", ConfigType::kUnsigned, "256"},
        {"SHM_CELL_SIZE", ConfigType::kSize, "8256"},
        {"SHM_PIO_SLOTS", ConfigType::kUnsigned, "8"},
        {"SHM_PIO_CREDITS", ConfigType::kUnsigned, "64"},
        {"SHM_PIO_CELL_SIZE", ConfigType::kSize, "8256"},
        {"RNDV_THRESH", ConfigType::kSize, "auto"},
        {"ZCOPY_THRESH", ConfigType::kSize, "auto"},
        {"RNDV_SCHEME", ConfigType::kString, "auto"},
        {"PROTO", ConfigType::kList, "all"},
        {"PROTO_INFO", ConfigType::kBool, "n"},
        {"CMA", ConfigType::kString, "auto"},
        {"KEEPALIVE_INTERVAL", ConfigType::kTime, "200ms"},
        {"ATOMIC_MODE", ConfigType::kString, "cpu"},
        {"UCP_MEM_MAP", ConfigType::kBool, "y"},
        {"SIMDEV_BW", ConfigType::kDouble, "5e9"},
        {"SIMDEV_LATENCY", ConfigType::kTime, "2us"},
        {"SIMDEV_THROTTLE", ConfigType::kBool, "n"},
        {"CALIBRATION_FILE", ConfigType::kString, ""},
        {"UNEXPECTED_MAX", ConfigType::kSize, "1G"},
        {"UNEXPECTED_PEER_MAX", ConfigType::kSize, "256M"},
        {"RNDV_FRAG_SIZE", ConfigType::kSize, "512K"},
        {"RNDV_SPLIT_MIN", ConfigType::kSize, "128K"},
        {"NUMA_PLACEMENT", ConfigType::kBool, "y"},
        {"NET_DEVICES", ConfigType::kList, "all"},
        {"TCP_SNDBUF_LIMIT", ConfigType::kSize, "4M"},
        {"TCP_KEEPALIVE", ConfigType::kTime, "10s"},
        {"TCP_USER_TIMEOUT", ConfigType::kTime, "30s"},
        {"TCP_CONNECT_TIMEOUT", ConfigType::kTime, "10s"},
        {"TCP_CONNECT_ATTEMPT_TIMEOUT", ConfigType::kTime, "2s"},
        {"TCP_HANDSHAKE_TIMEOUT", ConfigType::kTime, "30s"},
        {"AUTH_KEY", ConfigType::kString, ""},
        {"UCP_VERBOSE", ConfigType::kBool, "n"},
        {"SOCKADDR_CONNECT_TIMEOUT", ConfigType::kTime, "30s"},
        {"LISTENER_HELLO_TIMEOUT", ConfigType::kTime, "10s"},
        {"LISTENER_LINGER_TIMEOUT", ConfigType::kTime, "5s"},
        {"OVERSUBSCRIBED", ConfigType::kString, "auto"},
        {"LOCAL_PROCS", ConfigType::kUnsigned, "0"},
        {"OVERSUBSCRIBED_PER_CORE", ConfigType::kUnsigned, "4"},
        {"SHM_MAX_SENDERS", ConfigType::kUnsigned, "16384"},
        {"SHM_PEER_WATCH", ConfigType::kString, "pidfd"},
        {"SHM_TEST_DIE_AFTER_CLAIM", ConfigType::kUnsigned, "0"},
        {"VERBS_SEG_SIZE", ConfigType::kSize, "8K"},
        {"VERBS_RX_CREDITS", ConfigType::kUnsigned, "64"},
        {"VERBS_MAX_INLINE", ConfigType::kSize, "256"},
        {"VERBS_SQ_DEPTH", ConfigType::kUnsigned, "256"},
        {"VERBS_GID_INDEX", ConfigType::kString, "auto"},
        {"VERBS_DM_CELL_SIZE", ConfigType::kSize, "2K"},
        {"VERBS_DM_SLOTS", ConfigType::kUnsigned, "16"},
        {"VERBS_DM_EMULATE", ConfigType::kBool, "n"},
        {"VERBS_RCACHE", ConfigType::kString, "auto"},
        {"VERBS_RCACHE_MAX", ConfigType::kSize, "256M"},
        {"VERBS_RCACHE_ENTRIES", ConfigType::kUnsigned, "128"},
    };
    auto table = config_table();
    EXPECT_EQ(table.size(), std::size(expected));
    for (const Expected& e : expected) {
        SCOPED_TRACE(e.name);
        const ConfigVar* found = nullptr;
        for (const ConfigVar& var : table) {
            if (var.name == e.name) found = &var;
        }
        ASSERT_NE(found, nullptr);
        EXPECT_EQ(found->type, e.type);
        EXPECT_EQ(found->default_value, e.def);
    }
}

TEST(ConfigTable, NamesAreUniqueUppercaseAndWithoutPrefix) {
    std::set<std::string_view> seen;
    for (const ConfigVar& var : config_table()) {
        EXPECT_TRUE(seen.insert(var.name).second) << "duplicate " << var.name;
        EXPECT_FALSE(var.name.starts_with("SWY_")) << var.name;
        EXPECT_EQ(var.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
                  std::string_view::npos)
            << var.name;
    }
}

TEST(ConfigTable, EveryVariableHasHelpText) {
    for (const ConfigVar& var : config_table()) {
        EXPECT_GE(var.help.size(), 20u) << var.name;
        EXPECT_LE(var.help.size(), 400u) << var.name << ": help is printed by swy-info -c";
    }
}

TEST(ConfigTable, EveryDefaultParsesAsItsType) {
    Config cfg;
    for (const ConfigVar& var : config_table()) {
        std::string error;
        EXPECT_EQ(cfg.set(var.name, var.default_value, &error), Status::kOk)
            << var.name << ": " << error;
    }
}

TEST(ConfigTable, TypeNames) {
    EXPECT_EQ(config_type_name(ConfigType::kBool), "bool");
    EXPECT_EQ(config_type_name(ConfigType::kUnsigned), "unsigned");
    EXPECT_EQ(config_type_name(ConfigType::kSize), "size");
    EXPECT_EQ(config_type_name(ConfigType::kDouble), "double");
    EXPECT_EQ(config_type_name(ConfigType::kString), "string");
    EXPECT_EQ(config_type_name(ConfigType::kList), "list");
    EXPECT_EQ(config_type_name(ConfigType::kTime), "time");
}

// ---- Defaults and typed getters ----------------------------------------------------------

TEST(Config, DefaultsHaveTheirTypedValues) {
    Config cfg;
    EXPECT_EQ(cfg.get_list("TLS"), Strings{"all"});
    EXPECT_EQ(cfg.get_string("LOG_LEVEL"), "warn");
    EXPECT_EQ(cfg.get_size("PIO_MAX"), 0u);  // auto
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 16u);
    EXPECT_EQ(cfg.get_size("SHM_CELL_SIZE"), 8256u);
    EXPECT_EQ(cfg.get_size("RNDV_FRAG_SIZE"), 512u * 1024);
    EXPECT_FALSE(cfg.get_bool("PROTO_INFO"));
    EXPECT_TRUE(cfg.get_bool("NUMA_PLACEMENT"));
    EXPECT_EQ(cfg.get_time_ns("KEEPALIVE_INTERVAL"), 200'000'000u);
    EXPECT_EQ(cfg.get_string("CALIBRATION_FILE"), "");
    for (const ConfigVar& var : config_table())
        EXPECT_FALSE(cfg.is_set(var.name)) << var.name;
}

TEST(Config, GetterOnWrongTypeOrUnknownNameStopsTheProcessInEveryBuild) {
    // A library bug must never read a silent 0: the getter logs the name and aborts.
    Config cfg;
    EXPECT_DEATH((void)cfg.get_size("TLS"), "SWY_TLS read as a size");
    EXPECT_DEATH((void)cfg.get_unsigned("NO_SUCH_VARIABLE"), "NO_SUCH_VARIABLE.*not declared");
    EXPECT_DEATH((void)cfg.get_bool("PIO_MAX_EPS"), "declared with another type");
}

// ---- ConfigReader: typed settings at start-up ------------------------------------------------

TEST(ConfigReader, MisspeltNameFailsWithItsNameInsteadOfReadingZero) {
    Config cfg;
    ConfigReader r(cfg);
    EXPECT_EQ(r.get_unsigned("SHM_FIFO_CELS"), 0u);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error().find("SWY_SHM_FIFO_CELS is read but not declared"), std::string::npos)
        << r.error();
}

TEST(ConfigReader, WrongTypeFailsNamingBothTypes) {
    Config cfg;
    ConfigReader r(cfg);
    (void)r.get_size("SHM_FIFO_CELLS");
    EXPECT_NE(r.error().find("read as a size but declared as a unsigned"), std::string::npos)
        << r.error();
}

TEST(ConfigReader, ReportsEveryProblemAtOnce) {
    Config cfg;
    ASSERT_EQ(cfg.set("SHM_FIFO_CELLS", "4096"), Status::kOk);
    ConfigReader r(cfg);
    (void)r.get_unsigned("SHM_FIFO_CELLS", 1, 1024);
    (void)r.get_string("NOT_THERE");
    EXPECT_NE(r.error().find("SWY_SHM_FIFO_CELLS=4096 is out of range: 1 to 1024"),
              std::string::npos)
        << r.error();
    EXPECT_NE(r.error().find("SWY_NOT_THERE"), std::string::npos) << r.error();
}

TEST(ConfigReader, ValuesInRangeAndChoicesReadAsDeclared) {
    Config cfg;
    ASSERT_EQ(cfg.set("VERBS_RCACHE", "off"), Status::kOk);
    ConfigReader r(cfg);
    EXPECT_EQ(r.get_unsigned("SHM_FIFO_CELLS", 1, 1024), 256u);
    EXPECT_EQ(r.get_size("SHM_CELL_SIZE", 64), 8256u);
    EXPECT_EQ(r.get_time_ns("TCP_KEEPALIVE"), 10'000'000'000u);
    EXPECT_EQ(r.get_choice("VERBS_RCACHE", {"auto", "off"}), "off");
    EXPECT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r.get_choice("RNDV_SCHEME", {"get", "put"}), "");
    EXPECT_NE(r.error().find("SWY_RNDV_SCHEME=auto is not one of: get, put"), std::string::npos)
        << r.error();
}

TEST(ConfigReader, TransportSettingsOutOfRangeAreRefusedWhenSetAndAtContextCreation) {
    // Declared bounds are checked by set() (config_bounds_test.cpp has the full list); the
    // rules between several transport settings by Context::create, before any worker.
    Config cfg;
    std::string why;
    EXPECT_EQ(cfg.set("SHM_FIFO_CELLS", "8589934592", &why), Status::kInvalidParam);  // > 32 bits
    EXPECT_NE(why.find("SWY_SHM_FIFO_CELLS=\"8589934592\" is out of range"), std::string::npos)
        << why;
    ASSERT_EQ(cfg.set("TLS", "shm,self"), Status::kOk);
    ASSERT_EQ(cfg.set("SHM_FIFO_CELLS", "96"), Status::kOk);  // not a power of two
    swy::core::Context* ctx = nullptr;
    EXPECT_EQ(swy::core::Context::create(cfg, &ctx, &why), Status::kInvalidParam);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(why.find("SWY_SHM_FIFO_CELLS=96 must be a power of two"), std::string::npos) << why;
}

// ---- set(), get_text(), is_set() ---------------------------------------------------------

TEST(Config, SetAcceptsNameWithAndWithoutPrefix) {
    Config cfg;
    EXPECT_EQ(cfg.set("PIO_MAX_EPS", "32"), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 32u);
    EXPECT_EQ(cfg.set("SWY_PIO_MAX_EPS", "64"), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 64u);
    EXPECT_EQ(cfg.get_unsigned("SWY_PIO_MAX_EPS"), 64u);
}

TEST(Config, SetUnknownNameIsNotFound) {
    Config cfg;
    std::string error;
    EXPECT_EQ(cfg.set("NO_SUCH_VARIABLE", "1", &error), Status::kNotFound);
    EXPECT_NE(error.find("SWY_NO_SUCH_VARIABLE"), std::string::npos) << error;
    EXPECT_EQ(cfg.set("SWY_", "1"), Status::kNotFound);
    EXPECT_EQ(cfg.set("tls", "shm"), Status::kNotFound) << "names are case-sensitive";
}

TEST(Config, IsSetTracksExplicitValuesEvenWhenEqualToDefault) {
    Config cfg;
    EXPECT_FALSE(cfg.is_set("TLS"));
    EXPECT_EQ(cfg.set("TLS", "all"), Status::kOk);
    EXPECT_TRUE(cfg.is_set("TLS"));
    EXPECT_TRUE(cfg.is_set("SWY_TLS"));
    EXPECT_FALSE(cfg.is_set("PROTO"));
    EXPECT_FALSE(cfg.is_set("NO_SUCH_VARIABLE"));
}

TEST(Config, RejectedValueLeavesPreviousValueAndIsSetUnchanged) {
    Config cfg;
    EXPECT_EQ(cfg.set("RNDV_THRESH", "bogus"), Status::kInvalidParam);
    EXPECT_FALSE(cfg.is_set("RNDV_THRESH"));
    EXPECT_EQ(cfg.set("RNDV_THRESH", "64K"), Status::kOk);
    EXPECT_EQ(cfg.set("RNDV_THRESH", "64Q"), Status::kInvalidParam);
    EXPECT_EQ(cfg.get_size("RNDV_THRESH"), 65536u);
}

TEST(Config, GetTextReturnsTheValueAsWrittenWithoutSurroundingSpace) {
    Config cfg;
    std::string text;
    EXPECT_EQ(cfg.get_text("SHM_CELL_SIZE", &text), Status::kOk);
    EXPECT_EQ(text, "8256");
    EXPECT_EQ(cfg.set("SHM_CELL_SIZE", "  16KiB\t"), Status::kOk);
    EXPECT_EQ(cfg.get_text("SWY_SHM_CELL_SIZE", &text), Status::kOk);
    EXPECT_EQ(text, "16KiB");
    EXPECT_EQ(cfg.get_size("SHM_CELL_SIZE"), 16384u);
    EXPECT_EQ(cfg.get_text("NO_SUCH_VARIABLE", &text), Status::kNotFound);
}

TEST(Config, CopiesAreIndependent) {
    Config a;
    ASSERT_EQ(a.set("PIO_MAX_EPS", "3"), Status::kOk);
    Config b = a;
    ASSERT_EQ(b.set("PIO_MAX_EPS", "5"), Status::kOk);
    EXPECT_EQ(a.get_unsigned("PIO_MAX_EPS"), 3u);
    EXPECT_EQ(b.get_unsigned("PIO_MAX_EPS"), 5u);
}

// ---- Value syntax ------------------------------------------------------------------------

size_t size_of(const char* text) {
    Config cfg;
    std::string error;
    EXPECT_EQ(cfg.set("RNDV_THRESH", text, &error), Status::kOk) << text << ": " << error;
    return cfg.get_size("RNDV_THRESH");
}

TEST(ConfigSize, AcceptsPlainBytesAndEverySuffixAsPowersOf1024) {
    EXPECT_EQ(size_of("0"), 0u);
    EXPECT_EQ(size_of("4096"), 4096u);
    EXPECT_EQ(size_of("100B"), 100u);
    EXPECT_EQ(size_of("100b"), 100u);
    for (const char* k : {"8K", "8k", "8KB", "8kb", "8Kb", "8KiB", "8kib"}) {
        EXPECT_EQ(size_of(k), 8u * 1024) << k;
    }
    for (const char* m : {"1M", "1m", "1MB", "1MiB"})
        EXPECT_EQ(size_of(m), 1u << 20) << m;
    for (const char* g : {"2G", "2g", "2GB", "2GiB"})
        EXPECT_EQ(size_of(g), 2ull << 30) << g;
    EXPECT_EQ(size_of("3T"), 3ull << 40);
}

TEST(ConfigSize, AutoIsZeroAndInfIsSizeMax) {
    EXPECT_EQ(size_of("auto"), 0u);
    EXPECT_EQ(size_of("AUTO"), 0u);
    EXPECT_EQ(size_of("inf"), SIZE_MAX);
    EXPECT_EQ(size_of("INF"), SIZE_MAX);
}

TEST(ConfigSize, RejectsGarbageNegativeFractionsAndOverflow) {
    Config cfg;
    for (const char* bad : {"", "K", "8Q", "8KK", "8KBB", "8iB", "8 K", "-1", "-1K", "+5", "1.5K",
                            "0x10", "autox", "18446744073709551616", "17179869184G"}) {
        EXPECT_EQ(cfg.set("RNDV_THRESH", bad), Status::kInvalidParam) << '"' << bad << '"';
    }
}

uint64_t time_of(const char* text) {
    Config cfg;
    std::string error;
    EXPECT_EQ(cfg.set("KEEPALIVE_INTERVAL", text, &error), Status::kOk) << text << ": " << error;
    return cfg.get_time_ns("KEEPALIVE_INTERVAL");
}

TEST(ConfigTime, AcceptsEveryUnitAndPlainNumberMeansMilliseconds) {
    EXPECT_EQ(time_of("200ms"), 200'000'000u);
    EXPECT_EQ(time_of("1s"), 1'000'000'000u);
    EXPECT_EQ(time_of("500us"), 500'000u);
    EXPECT_EQ(time_of("100ns"), 100u);
    EXPECT_EQ(time_of("250"), 250'000'000u);
    EXPECT_EQ(time_of("0"), 0u);
    EXPECT_EQ(time_of("2S"), 2'000'000'000u);
}

TEST(ConfigTime, RejectsUnknownUnitsNegativesFractionsAndOverflow) {
    Config cfg;
    for (const char* bad :
         {"", "ms", "10h", "10m", "5 ms", "-5ms", "1.5s", "abc", "18446744073709551615s"}) {
        EXPECT_EQ(cfg.set("KEEPALIVE_INTERVAL", bad), Status::kInvalidParam) << '"' << bad << '"';
    }
}

TEST(ConfigBool, AcceptsEverySpellingInAnyCase) {
    Config cfg;
    for (const char* t : {"y", "Y", "yes", "YES", "1", "on", "On", "true", "TRUE"}) {
        ASSERT_EQ(cfg.set("PROTO_INFO", t), Status::kOk) << t;
        EXPECT_TRUE(cfg.get_bool("PROTO_INFO")) << t;
    }
    for (const char* f : {"n", "N", "no", "No", "0", "off", "OFF", "false", "False"}) {
        ASSERT_EQ(cfg.set("PROTO_INFO", f), Status::kOk) << f;
        EXPECT_FALSE(cfg.get_bool("PROTO_INFO")) << f;
    }
    for (const char* bad : {"", "maybe", "2", "yess", "t"}) {
        EXPECT_EQ(cfg.set("PROTO_INFO", bad), Status::kInvalidParam) << '"' << bad << '"';
    }
}

TEST(ConfigUnsigned, AcceptsFull64BitRangeAndRejectsNegativesGarbageAndOverflow) {
    Config cfg;
    ASSERT_EQ(cfg.set("PIO_MAX_EPS", "18446744073709551615"), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), UINT64_MAX);
    ASSERT_EQ(cfg.set("PIO_MAX_EPS", "0"), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 0u);
    for (const char* bad : {"", "-1", "+1", "12abc", "abc", "1.0", "1K", "0x10",
                            "18446744073709551616", "99999999999999999999999"}) {
        EXPECT_EQ(cfg.set("PIO_MAX_EPS", bad), Status::kInvalidParam) << '"' << bad << '"';
    }
}

TEST(ConfigList, SplitsOnCommasAndTrimsSpaces) {
    Config cfg;
    ASSERT_EQ(cfg.set("TLS", " shm , cma,tcp  "), Status::kOk);
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"shm", "cma", "tcp"}));
    ASSERT_EQ(cfg.set("TLS", "shm,,tcp,"), Status::kOk);
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"shm", "tcp"})) << "empty items are dropped";
    ASSERT_EQ(cfg.set("TLS", ""), Status::kOk);
    EXPECT_TRUE(cfg.get_list("TLS").empty());
    ASSERT_EQ(cfg.set("MEMTYPES", "host"), Status::kOk);
    EXPECT_EQ(cfg.get_list("MEMTYPES"), Strings{"host"});
}

TEST(ConfigList, ExclusionCaretStaysOnTheFirstItemWithoutSpaces) {
    Config cfg;
    ASSERT_EQ(cfg.set("TLS", "^tcp,verbs"), Status::kOk);
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"^tcp", "verbs"}));
    ASSERT_EQ(cfg.set("TLS", " ^ tcp , verbs"), Status::kOk);
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"^tcp", "verbs"}));
    ASSERT_EQ(cfg.set("TLS", "^, tcp"), Status::kOk);
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"^tcp"}));
}

TEST(ConfigString, KeepsTextAsWritten) {
    Config cfg;
    ASSERT_EQ(cfg.set("CALIBRATION_FILE", "/tmp/my calib.conf"), Status::kOk);
    EXPECT_EQ(cfg.get_string("CALIBRATION_FILE"), "/tmp/my calib.conf");
}

TEST(Config, BadValueErrorNamesTheVariableAndTheValue) {
    struct Case {
        const char* name;
        const char* value;
    };
    for (Case c : {Case{"SHM_CELL_SIZE", "8Q"}, Case{"PIO_MAX_EPS", "-3"},
                   Case{"NUMA_PLACEMENT", "perhaps"}, Case{"KEEPALIVE_INTERVAL", "3h"}}) {
        Config cfg;
        std::string error;
        EXPECT_EQ(cfg.set(c.name, c.value, &error), Status::kInvalidParam);
        EXPECT_NE(error.find(std::string("SWY_") + c.name), std::string::npos) << error;
        EXPECT_NE(error.find(c.value), std::string::npos) << error;
    }
    Config cfg;
    EXPECT_EQ(cfg.set("PIO_MAX", "junk"), Status::kInvalidParam) << "error text is optional";
}

// ---- Environment -------------------------------------------------------------------------

/// Clears every SWY_* variable for the test and puts the original ones back afterwards, so
/// the outer environment (a CI job's SWY_LOG_LEVEL, say) cannot change the outcome.
class ConfigEnv : public ::testing::Test {
protected:
    void SetUp() override {
        for (char** env = environ; *env != nullptr; ++env) {
            std::string entry(*env);
            size_t eq = entry.find('=');
            if (entry.starts_with("SWY_") && eq != std::string::npos) {
                saved_.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
            }
        }
        for (auto& [name, value] : saved_)
            unsetenv(name.c_str());
    }
    void TearDown() override {
        for (const std::string& name : set_)
            unsetenv(name.c_str());
        for (auto& [name, value] : saved_)
            setenv(name.c_str(), value.c_str(), 1);
    }
    void set_env(const std::string& name, const std::string& value) {
        setenv(name.c_str(), value.c_str(), 1);
        set_.push_back(name);
    }

private:
    std::vector<std::pair<std::string, std::string>> saved_;
    std::vector<std::string> set_;
};

TEST_F(ConfigEnv, EmptyEnvironmentGivesDefaults) {
    Config cfg;
    std::string error;
    ASSERT_EQ(Config::from_environment(&cfg, &error), Status::kOk) << error;
    EXPECT_EQ(cfg.get_list("TLS"), Strings{"all"});
    EXPECT_FALSE(cfg.is_set("TLS"));
}

TEST_F(ConfigEnv, EnvironmentOverridesDefaultsAndMarksThemSet) {
    set_env("SWY_TLS", "self, shm");
    set_env("SWY_RNDV_THRESH", "32KiB");
    set_env("SWY_KEEPALIVE_INTERVAL", "1s");
    set_env("SWY_PROTO_INFO", "yes");
    set_env("TLS", "tcp");  // not SWY_: ignored
    Config cfg;
    std::string error;
    ASSERT_EQ(Config::from_environment(&cfg, &error), Status::kOk) << error;
    EXPECT_EQ(cfg.get_list("TLS"), (Strings{"self", "shm"}));
    EXPECT_EQ(cfg.get_size("RNDV_THRESH"), 32u * 1024);
    EXPECT_EQ(cfg.get_time_ns("KEEPALIVE_INTERVAL"), 1'000'000'000u);
    EXPECT_TRUE(cfg.get_bool("PROTO_INFO"));
    EXPECT_TRUE(cfg.is_set("TLS"));
    EXPECT_FALSE(cfg.is_set("PROTO"));
}

TEST_F(ConfigEnv, SetOverridesTheEnvironment) {
    set_env("SWY_PIO_MAX_EPS", "7");
    Config cfg;
    ASSERT_EQ(Config::from_environment(&cfg, nullptr), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 7u);
    ASSERT_EQ(cfg.set("PIO_MAX_EPS", "9"), Status::kOk);
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 9u);
}

TEST_F(ConfigEnv, BadValueFailsNamesEveryBadVariableAndLeavesOutputUntouched) {
    set_env("SWY_SHM_FIFO_CELLS", "lots");
    set_env("SWY_SHM_CELL_SIZE", "8X");
    set_env("SWY_PIO_MAX_EPS", "5");
    Config cfg;
    ASSERT_EQ(cfg.set("PIO_MAX_EPS", "2"), Status::kOk);
    std::string error;
    EXPECT_EQ(Config::from_environment(&cfg, &error), Status::kInvalidParam);
    EXPECT_NE(error.find("SWY_SHM_FIFO_CELLS"), std::string::npos) << error;
    EXPECT_NE(error.find("lots"), std::string::npos) << error;
    EXPECT_NE(error.find("SWY_SHM_CELL_SIZE"), std::string::npos) << error;
    EXPECT_NE(error.find("8X"), std::string::npos) << error;
    EXPECT_EQ(cfg.get_unsigned("PIO_MAX_EPS"), 2u);
    EXPECT_EQ(Config::from_environment(&cfg, nullptr), Status::kInvalidParam);
}

/// Forces warnings on for one test and restores the level that was in force before.
class ScopedWarnings {
public:
    ScopedWarnings() {
        for (int l = static_cast<int>(LogLevel::kTrace); l >= 0; --l) {
            if (log_enabled(static_cast<LogLevel>(l))) {
                saved_ = static_cast<LogLevel>(l);
                break;
            }
        }
        if (saved_ < LogLevel::kWarn) set_log_level(LogLevel::kWarn);
    }
    ~ScopedWarnings() { set_log_level(saved_); }

private:
    LogLevel saved_ = LogLevel::kError;
};

TEST_F(ConfigEnv, UnknownSwyVariableWarnsButDoesNotFail) {
    ScopedWarnings warnings;
    set_env("SWY_NO_SUCH_KNOB", "1");
    set_env("SWY_RNDV_TRESH", "8K");  // misspelt
    set_env("SWY_TLS", "shm");
    Config cfg;
    std::string error;
    testing::internal::CaptureStderr();
    Status status = Config::from_environment(&cfg, &error);
    std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(status, Status::kOk) << error;
    EXPECT_EQ(cfg.get_list("TLS"), Strings{"shm"}) << "known variables still apply";
    EXPECT_NE(log.find("WARN"), std::string::npos) << log;
    EXPECT_NE(log.find("SWY_NO_SUCH_KNOB"), std::string::npos) << log;
    EXPECT_NE(log.find("SWY_RNDV_TRESH"), std::string::npos) << log;
    EXPECT_NE(log.find("did you mean SWY_RNDV_THRESH"), std::string::npos) << log;
    EXPECT_FALSE(cfg.is_set("RNDV_THRESH"));
}

TEST_F(ConfigEnv, NullOutputIsInvalidParam) {
    EXPECT_EQ(Config::from_environment(nullptr, nullptr), Status::kInvalidParam);
}

}  // namespace
}  // namespace swy::common
