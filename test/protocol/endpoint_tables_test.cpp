// The tables a real endpoint builds are the ones the library's offline path computes from
// the lane's attributes (proto::table_for over tl::tcp::lane_attr with tcp's own costs: what
// swy-info --proto --tls tcp prints), and they move with the tcp figures of the calibration
// file: the worker hands every transport its own costs. Two workers in this process over tcp
// on loopback.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/cost_figures.h"
#include "protocols/lane_caps.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"

namespace swy::proto {
namespace {

using common::CostFigures;

/// A private calibration file with the given tcp figures (the rest built-in).
class CalibrationFile {
public:
    CalibrationFile(double latency_s, double overhead_s, double bw_Bps) {
        char dir[] = "/tmp/swy-endpoint-tables-XXXXXX";
        dir_ = mkdtemp(dir) != nullptr ? dir : "";
        path_ = dir_ + "/calibration.conf";
        figures_.set("tcp_latency_s", latency_s);
        figures_.set("tcp_overhead_s", overhead_s);
        figures_.set("tcp_bw_Bps", bw_Bps);
        std::string why;
        EXPECT_EQ(figures_.save(path_, &why), Status::kOk) << why;
    }
    ~CalibrationFile() {
        std::remove(path_.c_str());
        rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }
    const CostFigures& figures() const { return figures_; }

private:
    std::string dir_;
    std::string path_;
    CostFigures figures_;
};

swy_context_h tcp_context(const std::string& calibration) {
    swy_config_h cfg = nullptr;
    EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
    for (auto [name, value] : {std::pair<const char*, std::string>{"TLS", "tcp,self"},
                               {"NET_DEVICES", "lo"},
                               {"CALIBRATION_FILE", calibration}}) {
        EXPECT_EQ(swy_config_set(cfg, name, value.c_str()), SWY_OK) << name;
    }
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
    swy_config_release(cfg);
    return ctx;
}

/// The host table of an endpoint from one worker to another over tcp, as the endpoint prints it.
std::string endpoint_table(const std::string& calibration) {
    swy_context_h ctx = tcp_context(calibration);
    if (ctx == nullptr) return "";
    swy_worker_params_t wp{};
    swy_worker_h a = nullptr, b = nullptr;
    EXPECT_EQ(swy_worker_create(ctx, &wp, &a), SWY_OK);
    EXPECT_EQ(swy_worker_create(ctx, &wp, &b), SWY_OK);
    void* addr = nullptr;
    size_t len = 0;
    EXPECT_EQ(swy_worker_get_address(b, &addr, &len), SWY_OK);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = addr;
    p.remote_address_length = len;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(a, &p, &ep), SWY_OK);
    swy_worker_release_address(b, addr);
    std::string text;
    std::vector<char> buf(16384);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    // The lane may be wired a few progress calls later.
    while (std::chrono::steady_clock::now() < deadline) {
        if (swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, buf.data(), buf.size()) == SWY_OK) {
            text = buf.data();
            break;
        }
        swy_worker_progress(a);
        swy_worker_progress(b);
    }
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    EXPECT_EQ(swy_ep_query(ep, &attr), SWY_OK);
    EXPECT_STREQ(attr.transport, "tcp");
    swy_request_h r = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &r) == SWY_INPROGRESS) {
        swy_request_wait(a, r);
        swy_request_free(r);
    }
    swy_worker_destroy(a);
    swy_worker_destroy(b);
    swy_context_destroy(ctx);
    return text;
}

/// What swy-info --proto --tls tcp computes for the same configuration and figures.
std::string offline_table(const CostFigures& figures) {
    common::Config config;
    std::string error;
    EXPECT_EQ(common::Config::from_environment(&config, &error), Status::kOk) << error;
    tl::tcp::TcpConfig tc;
    tc.sndbuf_limit = config.get_size("TCP_SNDBUF_LIMIT");
    tc.costs = tl::tcp::tcp_lane_costs(figures);
    return table_for(tl::tcp::lane_attr(tc), overrides_from(config)).print();
}

TEST(EndpointTables, TcpEndpointBuildsTheTableOfItsLaneAttributes) {
    CalibrationFile file(7.5e-6, 2.25e-6, 0.9e9);
    const std::string live = endpoint_table(file.path());
    ASSERT_FALSE(live.empty()) << "the tcp endpoint never printed a table";
    EXPECT_EQ(live, offline_table(file.figures()));
}

TEST(EndpointTables, TcpEndpointTableMovesWithTheTcpFigures) {
    CalibrationFile fast(5e-6, 1e-6, 2e9);
    CalibrationFile slow(80e-6, 20e-6, 2e9);  // rendezvous pays off only for larger messages
    const std::string a = endpoint_table(fast.path());
    const std::string b = endpoint_table(slow.path());
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_NE(a, b);
    EXPECT_EQ(b, offline_table(slow.figures()));
}

}  // namespace
}  // namespace swy::proto
