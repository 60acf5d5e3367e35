// The verbs transport as the registry sees it: its variables, typed settings, open (no device
// or no active port leaves it closed, not the worker failed), reach (any peer publishing a
// verbs section), PIO policy (inline per QP, device-memory slots in a shared window), the
// shared key, and which SWY_NET_DEVICES entries name RDMA ports.
//
// Built with or without libibverbs: without it open() reports kUnsupported (verbs_absent.cpp).
#include "transports/verbs/verbs_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/config_reader.h"
#include "common/log.h"
#include "transports/verbs/lane_costs.h"
#include "transports/verbs/verbs_open.h"

namespace swy::tl::verbs {
namespace {

using enum common::ConfigType;

constexpr common::ConfigVar kVars[] = {
    {"VERBS_SEG_SIZE", kSize, "8K",
     "Size of each registered receive and send bounce buffer of the verbs transport: the "
     "largest message sent in one SEND (larger ones are fragmented or use rendezvous)."},
    {"VERBS_RX_CREDITS",
     kUnsigned,
     "64",
     "Most receive buffers the verbs transport grants one connection: each starts with 8 and "
     "a busy sender is lent twice as many each time it used them all, up to this; a sender "
     "never has more messages in flight than its grant, so no receiver-not-ready occurs.",
     {},
     1,
     UINT32_MAX},
    {"VERBS_MAX_INLINE",
     kSize,
     "256",
     "Largest header+payload the verbs transport asks a QP to send inline (the CPU writes it "
     "into the work request: PIO); the device may grant less. 0 disables inline sends.",
     {},
     0,
     4096},
    {"VERBS_SQ_DEPTH",
     kUnsigned,
     "256",
     "Send queue depth (work requests) of each verbs queue pair, at least 16. RDMA chunks "
     "that find it full wait in a backlog and are posted from progress.",
     {},
     16,
     1u << 20},
    {"VERBS_GID_INDEX", kString, "auto",
     "GID table index of the verbs port. \"auto\": a RoCE v2 GID with an IPv4-mapped "
     "address first, then any RoCE v2, RoCE v1 or InfiniBand GID."},
    {"VERBS_DM_CELL_SIZE", kSize, "2K",
     "Device-memory PIO of the verbs transport: size of one message cell (a multiple of 64 B, "
     "at most SWY_VERBS_SEG_SIZE). An endpoint holding a slot stores messages above the inline "
     "limit and up to this size into device memory; a slot has 4 cells."},
    {"VERBS_DM_SLOTS",
     kUnsigned,
     "16",
     "Device-memory PIO of the verbs transport: endpoints that get a slot of the adapter's "
     "memory (first come first served; SWY_PIO_RESERVED of them only for endpoints created "
     "with SWY_EP_FLAG_PIO_FIRST). Fewer if the device has less memory.",
     {},
     0,
     4096},
    {"VERBS_DM_EMULATE", kBool, "n",
     "Testing aid, not for production: where the device has no device memory (rxe), host "
     "memory registered like a bounce buffer stands in for it, so the device-memory send path "
     "runs (all but ibv_memcpy_to_dm). swy-info and swy_ep_query say \"emulated\"."},
    {"VERBS_RCACHE", kString, "auto",
     "Registration cache of the verbs transport: \"auto\" caches registrations and checks "
     "on every reuse, in /proc/self/pagemap, that the same physical pages still back the "
     "buffer (needs CAP_SYS_ADMIN to see them; without it, as with \"off\", every rendezvous "
     "registers its buffer per transfer).",
     "auto|off"},
    {"VERBS_RCACHE_MAX", kSize, "256M",
     "Bytes the verbs registration cache may keep pinned; unused registrations are evicted "
     "least recently used first, and a transfer that does not fit is registered on its own."},
    {"VERBS_RCACHE_ENTRIES", kUnsigned, "128",
     "Registrations the verbs registration cache may keep, at most (evicted as for "
     "SWY_VERBS_RCACHE_MAX)."},
};

Status open_verbs(const OpenParams& p, std::unique_ptr<Interface>* out, std::string* why) {
    VerbsConfig vc;
    Status s = read_settings(p.config, &vc, why);
    if (s != Status::kOk) return s;
    vc.auth_key = p.auth_key;
    vc.costs = verbs_lane_costs(p.costs);
    std::string reason;
    s = open(vc, p.worker_uid, p.iface_index, p.sink, out, &reason);
    if (s == Status::kInvalidParam) {
        *why = reason;
        return s;
    }
    if (s != Status::kOk) {
        // No device, no active port, or built without verbs: the other transports carry on.
        common::log_printf(
            s == Status::kIoError ? common::LogLevel::kWarn : common::LogLevel::kDebug,
            "verbs transport not opened: %s", reason.c_str());
        out->reset();
    }
    return Status::kOk;
}

bool reaches(const ReachQuery&) { return true; }

Status connect_verbs(Interface* iface, const ConnectParams& p, std::unique_ptr<Endpoint>* out,
                     std::string* why) {
    // Inline sends are per QP (no shared window), so every verbs lane gets them; the
    // device-memory PIO window is shared, handed out by the interface under the shm policy
    // (reserved slots for SWY_EP_FLAG_PIO_FIRST, none for SWY_EP_FLAG_NO_PIO).
    return connect(iface, p.remote_uid, p.section, p.section_length, !p.no_pio, p.pio_first, out,
                   why);
}

void set_key(Interface* iface, const common::AuthKey& key) { set_auth_key(iface, key); }

/// "rxe0:1" is a port; "mlx5_0" is an RDMA device if the kernel lists it as one.
bool is_rdma_device(std::string_view device) {
    if (device.find(':') != std::string_view::npos) return true;
    const std::string path = "/sys/class/infiniband/" + std::string(device);
    return access(path.c_str(), F_OK) == 0;
}

/// The costs of a lane with the registration cache on (the default, SWY_VERBS_RCACHE=auto).
LaneCosts expected_lane_costs(const common::CostFigures& figures) {
    return verbs_lane_costs(figures).expected(true);
}

}  // namespace

Status read_settings(const common::Config& config, VerbsConfig* out, std::string* why) {
    common::ConfigReader r(config);
    VerbsConfig& vc = *out;
    vc.devices = r.get_list("NET_DEVICES");
    vc.seg_size = r.get_size("VERBS_SEG_SIZE");
    vc.rx_credits =
        static_cast<uint32_t>(std::min<uint64_t>(r.get_unsigned("VERBS_RX_CREDITS"), UINT32_MAX));
    vc.max_inline = static_cast<uint32_t>(std::min<size_t>(r.get_size("VERBS_MAX_INLINE"), 4096));
    // Clamped, not wrapped: open() rejects a depth below 16 with a clear message.
    vc.sq_depth =
        static_cast<uint32_t>(std::min<uint64_t>(r.get_unsigned("VERBS_SQ_DEPTH"), 1u << 20));
    vc.dm_cell_size = r.get_size("VERBS_DM_CELL_SIZE");
    vc.dm_slots = static_cast<uint32_t>(std::min<uint64_t>(r.get_unsigned("VERBS_DM_SLOTS"), 4096));
    vc.dm_reserved =
        static_cast<uint32_t>(std::min<uint64_t>(r.get_unsigned("PIO_RESERVED"), 4096));
    vc.dm_emulate = r.get_bool("VERBS_DM_EMULATE");
    const std::string gid = r.get_string("VERBS_GID_INDEX");
    if (r.ok() && gid != "auto") {
        char* end = nullptr;
        const long v = std::strtol(gid.c_str(), &end, 10);
        if (gid.empty() || *end != '\0' || v < 0 || v > 0xFFFF) {
            r.fail("SWY_VERBS_GID_INDEX must be auto or a GID table index");
        } else {
            vc.gid_index = static_cast<int>(v);
        }
    }
    vc.rcache = r.get_choice("VERBS_RCACHE", {"auto", "off"}) == "auto";
    vc.rcache_limits.max_bytes = r.get_size("VERBS_RCACHE_MAX");
    vc.rcache_limits.max_entries = r.get_unsigned("VERBS_RCACHE_ENTRIES");
    if (!r.ok()) {
        *why = r.error();
        return Status::kInvalidParam;
    }
    return Status::kOk;
}

std::string availability(const common::Config& config) {
    VerbsConfig vc;
    std::string why;
    if (read_settings(config, &vc, &why) != Status::kOk) return "no: " + why;
    const auto ports = probe(vc, &why);
    for (const auto& p : ports) {
        if (p.usable) return "yes: " + p.device + ":" + std::to_string(p.port);
    }
    if (ports.empty()) return "no: " + why;
    return "no: no selected ACTIVE port (see below)";
}

/// The settings read as open() reads them, at context creation (TransportEntry::check_config).
static Status check_verbs(const common::Config& config, std::string* why) {
    VerbsConfig settings;
    return read_settings(config, &settings, why);
}

const TransportEntry kTransport{
    .name = "verbs",
    .config_prefix = "VERBS_",
    .address_section = kAddressSection,
    .priority = 20,
    .polls_host_memory = false,
    .config_vars = kVars,
    .cost_figures = kCostFigures,
    .open = open_verbs,
    .can_reach = reaches,
    .connect = connect_verbs,
    .set_auth_key = set_key,
    .claims_device = is_rdma_device,
    .lane_costs = expected_lane_costs,
    .availability = availability,
    .check_config = check_verbs,
};

}  // namespace swy::tl::verbs
