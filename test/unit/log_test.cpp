// Logging: the level filter, messages longer than the line buffer, and SWY_PROTO_INFO's
// tables, which print at info level whatever SWY_LOG_LEVEL says.
#include "common/log.h"

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <string>

#include "test_context.h"

using namespace swy;
using common::LogLevel;

namespace {

/// Sets the log level for one test and restores the default (warn) afterwards.
struct ScopedLevel {
    explicit ScopedLevel(LogLevel level) { common::set_log_level(level); }
    ~ScopedLevel() { common::set_log_level(LogLevel::kWarn); }
};

}  // namespace

TEST(Log, MessagesBelowTheLevelAreDropped) {
    ScopedLevel level(LogLevel::kWarn);
    testing::internal::CaptureStderr();
    common::log_printf(LogLevel::kInfo, "hidden %d", 1);
    common::log_printf(LogLevel::kWarn, "shown %d", 2);
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
    EXPECT_NE(out.find("WARN  shown 2"), std::string::npos) << out;
}

TEST(Log, LongMessagesArePrintedWhole) {
    ScopedLevel level(LogLevel::kWarn);
    const std::string body(5000, 'x');
    testing::internal::CaptureStderr();
    common::log_printf(LogLevel::kError, "start %s end", body.c_str());
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_NE(out.find("start " + body + " end\n"), std::string::npos) << out.size();
}

TEST(Log, PrintAlwaysIgnoresTheLevelAndKeepsItsTag) {
    ScopedLevel level(LogLevel::kError);
    testing::internal::CaptureStderr();
    common::log_print_always(LogLevel::kInfo, "asked for %s", "by name");
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_NE(out.find("INFO  asked for by name"), std::string::npos) << out;
}

TEST(Log, ProtoInfoPrintsEachEndpointsTableAtInfoLevel) {
    ScopedLevel level(LogLevel::kWarn);  // the default: info messages are not printed
    swy_context_h ctx = test::make_context({{"TLS", "self"}, {"PROTO_INFO", "y"}});
    ASSERT_NE(ctx, nullptr);
    swy_worker_h w = nullptr;
    swy_worker_params_t wp{};
    ASSERT_EQ(swy_worker_create(ctx, &wp, &w), SWY_OK);
    void* address = nullptr;
    size_t length = 0;
    ASSERT_EQ(swy_worker_get_address(w, &address, &length), SWY_OK);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = address;
    p.remote_address_length = length;
    swy_ep_h ep = nullptr;
    testing::internal::CaptureStderr();
    const swy_status_t s = swy_ep_create(w, &p, &ep);
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(s, SWY_OK);
    EXPECT_NE(out.find("INFO  endpoint to"), std::string::npos) << out;
    EXPECT_EQ(out.find("ERROR"), std::string::npos) << out;
    if (ep != nullptr) {
        swy_request_h r = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &r) == SWY_INPROGRESS) {
            swy_request_wait(w, r);
            swy_request_free(r);
        }
    }
    swy_worker_release_address(w, address);
    swy_worker_destroy(w);
    swy_context_destroy(ctx);
}
