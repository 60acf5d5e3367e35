// The tcp transport as the registry sees it: its variables, typed settings, open (and when a
// device list naming only other transports' devices leaves it closed), reach (any peer that
// publishes a tcp section) and the shared key.
#include "transports/tcp/tcp_transport.h"

#include <algorithm>

#include "common/config_reader.h"
#include "common/log.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"

namespace swy::tl::tcp {
namespace {

using enum common::ConfigType;

constexpr common::ConfigVar kVars[] = {
    {"TCP_SNDBUF_LIMIT", kSize, "4M",
     "Bytes one tcp connection may hold queued beyond what the kernel accepted; further sends "
     "are retried from progress. Also sets the lane's credits (this / 256K)."},
    {"TCP_KEEPALIVE",
     kTime,
     "10s",
     "Idle time before TCP keepalive probes start on an idle tcp connection; a peer host that "
     "stopped answering them is reported failed (SWY_ERR_TIMED_OUT) after about 3x this. "
     "Probes are answered by the peer's kernel, so a slow or stopped peer process is never "
     "taken for a dead one.",
     {},
     1'000'000'000,
     7200'000'000'000},
    {"TCP_USER_TIMEOUT",
     kTime,
     "30s",
     "A tcp connection with data waiting to be acknowledged that hears nothing at all from "
     "the peer's kernel for this long (no acknowledgement, no answer to a window probe) fails "
     "with SWY_ERR_TIMED_OUT; checked from progress. A peer that answers but does not read "
     "(a busy or stopped process: its receive window is full) is never failed.",
     {},
     1'000'000'000,
     3600'000'000'000},
    {"TCP_CONNECT_TIMEOUT", kTime, "10s",
     "Total time the tcp transport spends connecting to one peer, over all of its addresses "
     "(each attempt gets a share of it). Connecting never blocks the worker; when every "
     "address failed or this passed, the endpoint fails (SWY_ERR_UNREACHABLE or "
     "SWY_ERR_TIMED_OUT)."},
    {"TCP_CONNECT_ATTEMPT_TIMEOUT", kTime, "2s",
     "Longest single tcp connect attempt to one address of a peer. An attempt that gets no "
     "answer (a SYN lost, a peer too busy to accept) is retried with a fresh socket, in rounds "
     "over the peer's addresses with a pause that doubles from 100 ms, until "
     "SWY_TCP_CONNECT_TIMEOUT; a refused connection is not retried. From 10 ms to 1 hour."},
    {"TCP_HANDSHAKE_TIMEOUT", kTime, "30s",
     "Longest time from a tcp connection being established to the end of its hello handshake "
     "(both sides); past it the connection is closed and, when we made it, the endpoint fails "
     "with SWY_ERR_TIMED_OUT. Covers a peer that connects and says nothing, or a worker that "
     "makes no progress for that long while a peer connects to it. From 10 ms to 1 hour."},
};

Status open_tcp(const OpenParams& p, std::unique_ptr<Interface>* out, std::string* why) {
    TcpConfig tc;
    Status s = read_settings(p.config, &tc, why);
    if (s != Status::kOk) return s;
    tc.auth_key = p.auth_key;
    tc.costs = tcp_lane_costs(p.costs);
    // Alone, tcp looks at its sockets on every progress call; next to shm (whose hot path a
    // system call per call would dominate) every 8th, as tcp peers are then remote.
    tc.busy_poll_every = p.host_memory_lane_open ? 8 : 1;
    std::unique_ptr<TcpInterface> tcp;
    s = TcpInterface::open(tc, p.worker_uid, p.iface_index, p.sink, &tcp, why);
    // SWY_NET_DEVICES=rxe0:1 (or mlx5_0) names another transport's devices only: the user
    // chose that network, so tcp stays closed (as with UCX_NET_DEVICES) instead of failing
    // the worker. A list of network interfaces none of which exists is still an error.
    const bool only_other_devices =
        !tc.devices.empty() &&
        std::all_of(tc.devices.begin(), tc.devices.end(),
                    [](const std::string& d) { return device_claimed_by_other(kTransport, d); });
    if (s == Status::kNotFound && only_other_devices) {
        common::log_printf(common::LogLevel::kInfo, "%s: tcp not used", why->c_str());
        why->clear();
        return Status::kOk;
    }
    if (s == Status::kOk) *out = std::move(tcp);
    return s;
}

bool reaches(const ReachQuery&) { return true; }

Status connect_tcp(Interface* iface, const ConnectParams& p, std::unique_ptr<Endpoint>* out,
                   std::string* why) {
    return iface->connect(p.remote_uid, p.section, p.section_length, false, out, why);
}

void set_key(Interface* iface, const common::AuthKey& key) {
    static_cast<TcpInterface*>(iface)->set_auth_key(key);
}

std::string always(const common::Config&) { return "yes"; }

}  // namespace

Status read_settings(const common::Config& config, TcpConfig* out, std::string* why) {
    common::ConfigReader r(config);
    out->devices = r.get_list("NET_DEVICES");
    out->sndbuf_limit = r.get_size("TCP_SNDBUF_LIMIT");
    out->keepalive_ns = r.get_time_ns("TCP_KEEPALIVE");
    out->user_timeout_ns = r.get_time_ns("TCP_USER_TIMEOUT");
    out->connect_timeout_ns = r.get_time_ns("TCP_CONNECT_TIMEOUT");
    out->connect_attempt_ns = r.get_time_ns("TCP_CONNECT_ATTEMPT_TIMEOUT");
    out->handshake_timeout_ns = r.get_time_ns("TCP_HANDSHAKE_TIMEOUT");
    if (!r.ok()) {
        *why = r.error();
        return Status::kInvalidParam;
    }
    constexpr uint64_t kMinTimeout = 10'000'000;           // 10 ms
    constexpr uint64_t kMaxTimeout = 3600'000'000'000ull;  // 1 hour
    const struct {
        const char* name;
        uint64_t ns;
    } bounded[] = {{"SWY_TCP_CONNECT_ATTEMPT_TIMEOUT", out->connect_attempt_ns},
                   {"SWY_TCP_HANDSHAKE_TIMEOUT", out->handshake_timeout_ns}};
    for (const auto& b : bounded) {
        if (b.ns < kMinTimeout || b.ns > kMaxTimeout) {
            *why = std::string(b.name) + ": " + std::to_string(b.ns / 1'000'000) +
                   " ms is outside 10 ms .. 1 hour";
            return Status::kInvalidParam;
        }
    }
    return Status::kOk;
}

/// The settings read as open() reads them, at context creation (TransportEntry::check_config).
static Status check_tcp(const common::Config& config, std::string* why) {
    TcpConfig settings;
    Status s = read_settings(config, &settings, why);
    if (s != Status::kOk) return s;
    return check_devices(
        settings.devices,
        [](const std::string& d) { return device_claimed_by_other(kTransport, d); }, why);
}

const TransportEntry kTransport{
    .name = "tcp",
    .config_prefix = "TCP_",
    .address_section = kAddressSection,
    .priority = 10,
    .polls_host_memory = false,
    .config_vars = kVars,
    .cost_figures = kCostFigures,
    .open = open_tcp,
    .can_reach = reaches,
    .connect = connect_tcp,
    .set_auth_key = set_key,
    .lane_costs = tcp_lane_costs,
    .availability = always,
    .check_config = check_tcp,
};

}  // namespace swy::tl::tcp
