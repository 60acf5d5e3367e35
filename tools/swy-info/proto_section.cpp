// "--proto": the protocol selection tables an endpoint would build on this host, computed
// offline by the library's own selector (proto::select_protocols) from the same lane
// capabilities, overrides and cost figures that core::Endpoint uses when it connects.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "args.h"
#include "cma_probe.h"
#include "common/config.h"
#include "core/context.h"
#include "proto_tables.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "sections.h"
#include "text.h"
#include "transports/cma/cma.h"
#include "transports/shm/ring.h"
#include "transports/verbs/verbs_costs.h"
#include "transports/verbs/verbs_open.h"

namespace swy::info {
namespace {

constexpr size_t kCellHeaderBytes = sizeof(tl::shm::CellHeader);
constexpr size_t kSyncHeaderBytes = sizeof(proto::EagerSyncHeader);
constexpr size_t kFirstHeaderBytes = sizeof(proto::EagerFirstHeader);
constexpr size_t kOnlyHeaderBytes = sizeof(proto::EagerOnlyHeader);
/// tl::self::SelfInterface::kMaxMessage (the self transport's largest am_send).
constexpr size_t kSelfMaxMessage = 64 * 1024;

/// The overrides an endpoint reads from its context's configuration (endpoint.cpp).
proto::SelectOverrides overrides_from(const common::Config& cfg) {
    proto::SelectOverrides o;
    o.rndv_thresh = cfg.get_size("RNDV_THRESH");
    o.zcopy_thresh = cfg.get_size("ZCOPY_THRESH");
    o.rndv_scheme = cfg.get_string("RNDV_SCHEME");
    o.allow = cfg.get_list("PROTO");
    return o;
}

/// Lane capabilities from a lane whose largest am_send is @p max_message, as the endpoint
/// derives them: eager_short carries what one packet with the sync header holds (capped by
/// SWY_PIO_MAX), a bcopy fragment what a cell holds after the first-fragment header.
proto::LaneCaps caps_for(const common::Config& cfg, size_t max_message, bool pio, bool cma,
                         bool rndv) {
    proto::LaneCaps caps;
    const size_t single_packet_max = max_message - kSyncHeaderBytes;
    caps.pio = pio;
    if (pio) {
        const size_t limit = cfg.get_size("PIO_MAX");
        caps.pio_max = limit == 0 ? single_packet_max : std::min(limit, single_packet_max);
    }
    caps.fragment_max = max_message - kFirstHeaderBytes;
    caps.cma = cma;
    caps.split_min = cma ? cfg.get_size("RNDV_SPLIT_MIN") : 0;
    caps.rndv = rndv;
    return caps;
}

/// "4065 B", or "13459 B (13.1 KiB)" when a unit helps.
std::string size_text(size_t n) {
    std::string text = std::to_string(n) + " B";
    if (n >= 1024) text += " (" + format_bytes(n) + ")";
    return text;
}

/// Whether rendezvous may use CMA on a shm lane, and if not, why.
bool cma_usable(const core::Context& context, std::string* why) {
    if (!context.transport_enabled("cma")) {
        std::string tls;
        context.config().get_text("TLS", &tls);
        *why = "not enabled by SWY_TLS=" + tls;
        return false;
    }
    tl::cma::CmaMode mode;
    if (!tl::cma::parse_cma_mode(context.config().get_string("CMA"), &mode)) {
        *why = "SWY_CMA does not parse (auto|y|n|simulate-eperm)";
        return false;
    }
    if (mode == tl::cma::CmaMode::kOff) {
        *why = "disabled by SWY_CMA=n";
        return false;
    }
    if (mode == tl::cma::CmaMode::kSimulateEperm) {
        *why = "EPERM simulated by SWY_CMA=simulate-eperm";
        return false;
    }
    CmaProbe probe = probe_cma();
    if (!probe.works) *why = "probe failed: " + probe.why;
    return probe.works;
}

/// One table: a caption, the lane it assumes, every range with its reason, and the
/// thresholds between ranges on one line.
void print_table(const char* caption, const proto::LaneCaps& caps,
                 const proto::CostFigures& costs, const proto::SelectOverrides& o) {
    std::printf("\n  %s\n", caption);
    std::string lane = "    lane: ";
    lane += caps.pio ? "eager_short up to " + std::to_string(caps.pio_max) + " B"
                     : std::string("no PIO ring");
    lane += ", bcopy fragments of " + std::to_string(caps.fragment_max) + " B";
    lane += ", rendezvous " + std::string(!caps.rndv   ? "not possible"
                                          : caps.rdma ? "with RDMA READ/WRITE"
                                          : caps.cma  ? "with CMA"
                                                      : "without CMA");
    std::printf("%s\n", lane.c_str());

    proto::ProtoTable table = proto::select_protocols(caps, costs, o);
    std::string thresholds;
    size_t lo = 0;
    for (const proto::ProtoRange& r : table.ranges()) {
        std::string range = std::to_string(lo) + ".." +
                            (r.max_size == SIZE_MAX ? std::string("inf")
                                                    : std::to_string(r.max_size));
        std::printf("      %-17s %-14s %s\n", range.c_str(), proto::proto_name(r.proto),
                    r.reason.c_str());
        thresholds += lo == 0 ? proto::proto_name(r.proto)
                              : std::string(" → ") + proto::proto_name(r.proto) + " at " +
                                    size_text(lo);
        if (r.max_size == SIZE_MAX) break;
        lo = r.max_size + 1;
    }
    std::printf("    thresholds: %s%s\n", thresholds.c_str(),
                table.ranges().size() == 1 ? " for every size" : "");
}

/// The SWY_* variables that change selection, as "SWY_X=value" for those set, or "none".
std::string overrides_text(const common::Config& cfg) {
    static const char* const kNames[] = {"PROTO", "RNDV_THRESH", "ZCOPY_THRESH",
                                         "RNDV_SCHEME", "PIO_MAX"};
    std::string text;
    for (const char* name : kNames) {
        if (!cfg.is_set(name)) continue;
        std::string value;
        cfg.get_text(name, &value);
        text += (text.empty() ? "SWY_" : ", SWY_") + std::string(name) + "=" + value;
    }
    return text.empty() ? "none (all automatic)" : text;
}

/// A note when SWY_TLS leaves @p name out: the table is what it would be, but no endpoint
/// of this configuration will use it.
void note_if_disabled(const core::Context& context, const char* name) {
    if (context.transport_enabled(name)) return;
    std::string tls;
    context.config().get_text("TLS", &tls);
    std::printf("  note: SWY_TLS=%s does not enable %s; no endpoint will use this table\n",
                tls.c_str(), name);
}

/// The shm tables: with a PIO ring and on the shared FIFO.
int print_shm_tables(const core::Context& context, const proto::SelectOverrides& o) {
    const common::Config& cfg = context.config();
    const size_t pio_cell = cfg.get_size("SHM_PIO_CELL_SIZE");
    const size_t fifo_cell = cfg.get_size("SHM_CELL_SIZE");
    const size_t min_cell = kCellHeaderBytes + kFirstHeaderBytes + 1;
    if (pio_cell < min_cell || fifo_cell < min_cell || pio_cell > UINT32_MAX ||
        fifo_cell > UINT32_MAX) {
        std::printf("\nshm: SWY_SHM_CELL_SIZE / SWY_SHM_PIO_CELL_SIZE out of range "
                    "(%zu..4 GiB)\n", min_cell);
        return 1;
    }
    std::string why;
    const bool cma = cma_usable(context, &why);
    std::printf("\nshm transport (CMA: %s)\n",
                cma ? "available" : ("no, " + why + "; tables built without it").c_str());
    note_if_disabled(context, "shm");
    print_table("endpoint with a PIO lane",
                caps_for(cfg, pio_cell - kCellHeaderBytes, true, cma, true), context.costs(),
                o);
    print_table("endpoint without PIO (window full or SWY_EP_FLAG_NO_PIO)",
                caps_for(cfg, fifo_cell - kCellHeaderBytes, false, cma, true),
                context.costs(), o);
    return 0;
}

/// The verbs tables: the lane an endpoint gets (inline PIO, bcopy through registered bounce
/// buffers, RDMA rendezvous), and the one for device memory, which RDMA reaches only with
/// dma-buf registration: without it, sends from device memory are staged.
int print_verbs_tables(const core::Context& context, const proto::SelectOverrides& o) {
    const common::Config& cfg = context.config();
    const size_t seg = cfg.get_size("VERBS_SEG_SIZE");
    if (seg < 256) {
        std::printf("\nverbs: SWY_VERBS_SEG_SIZE out of range (256 B..1 GiB)\n");
        return 1;
    }
    std::string why;
    const auto ports = tl::verbs::probe(verbs_config_from(cfg), &why);
    const tl::verbs::PortInfo* port = nullptr;
    for (const auto& p : ports) {
        if (p.usable && port == nullptr) port = &p;
    }
    // Without a device, the inline limit asked for (what a device typically grants).
    const size_t inline_max = port != nullptr
                                  ? port->max_inline
                                  : std::min<size_t>(cfg.get_size("VERBS_MAX_INLINE"), 4096);
    std::printf("\nverbs transport (%s)\n",
                port != nullptr ? (port->device + ":" + std::to_string(port->port) + ", inline " +
                                   std::to_string(inline_max) + " B")
                                      .c_str()
                                : ("no device: " +
                                   (why.empty() ? std::string("none usable") : why) +
                                   "; tables for an inline limit of " +
                                   std::to_string(inline_max) + " B")
                                      .c_str());
    note_if_disabled(context, "verbs");
    tl::LaneAttr a;
    const tl::verbs::LaneCosts costs = tl::verbs::verbs_lane_costs(context.costs());
    a.send_cost = costs.send;
    a.rdma = true;
    a.rdma_cost = costs.rdma;
    std::string rcache_why;
    const bool rcache = tl::verbs::rcache_page_identity(verbs_config_from(cfg), &rcache_why) !=
                        nullptr;
    a.reg_cost = costs.expected_reg(rcache);
    std::printf("  registration per side: %s\n",
                rcache ? "a validated registration-cache hit (buffers reused)"
                       : ("a full registration (registration cache off: " + rcache_why + ")")
                             .c_str());
    proto::LaneCaps caps = caps_for(cfg, seg, inline_max > kOnlyHeaderBytes, false, true);
    if (caps.pio) {
        const size_t limit = cfg.get_size("PIO_MAX");
        const size_t pio = inline_max - kOnlyHeaderBytes;
        caps.pio_max = limit == 0 ? pio : std::min(limit, pio);
    }
    proto::set_rdma_lane_costs(a, &caps);
    print_table("endpoint (inline sends = PIO, bcopy through registered bounce buffers, "
                "RDMA READ/WRITE rendezvous)", caps, context.costs(), o);
    const bool dm = port != nullptr && (port->device_memory || cfg.get_bool("VERBS_DM_EMULATE"));
    if (dm && caps.pio) {
        // An endpoint holding a device-memory slot: PIO up to a cell (verbs_pio.cpp).
        proto::LaneCaps with_dm = caps;
        const size_t limit = cfg.get_size("PIO_MAX");
        const size_t cell = std::min(cfg.get_size("VERBS_DM_CELL_SIZE"), seg);
        const size_t pio = std::max(cell, inline_max) - kOnlyHeaderBytes;
        with_dm.pio_max = limit == 0 ? pio : std::min(limit, pio);
        print_table(port->device_memory
                        ? "endpoint holding a device-memory slot (PIO up to a cell)"
                        : "endpoint holding an EMULATED device-memory slot (SWY_VERBS_DM_EMULATE)",
                    with_dm, context.costs(), o);
    }
    // dma-buf MRs: RDMA reaches dmabuf and CUDA memory (exported by their plugins) directly.
    const bool dmabuf = port != nullptr && port->dmabuf_mr;
    proto::LaneCaps device = caps;
    device.pio = false;
    device.pio_max = 0;
    device.rdma = dmabuf;  // as the lane says (rdma_device_memory)
    device.stage_fixed_s = static_cast<double>(cfg.get_time_ns("SIMDEV_LATENCY")) * 1e-9;
    device.stage_per_byte_s = 1.0 / cfg.get_double("SIMDEV_BW");
    const std::string caption =
        std::string("sends from device memory (dmabuf/cuda; staging costs of SWY_SIMDEV_*): ") +
        (dmabuf ? "the device takes dma-buf MRs: RDMA rendezvous from the exported dma-buf "
                  "(ibv_reg_dmabuf_mr), no staging"
                : "no dma-buf MRs (" +
                      (port != nullptr ? port->dmabuf_reason : std::string("no device")) +
                      "): staged pipeline");
    print_table(caption.c_str(), device, context.costs(), o);
    return 0;
}

}  // namespace

void print_cost_figures(const proto::CostFigures& c) {
    struct Row {
        const char* key;
        double value;
        double scale;
        const char* unit;
    };
    const Row rows[] = {
        {"memcpy_bw_Bps", c.memcpy_bw_Bps, 1e-9, "GB/s"},
        {"shm_copy_bw_Bps", c.shm_copy_bw_Bps, 1e-9, "GB/s"},
        {"cma_bw_Bps", c.cma_bw_Bps, 1e-9, "GB/s"},
        {"cma_call_s", c.cma_call_s, 1e6, "us"},
        {"fifo_latency_s", c.fifo_latency_s, 1e6, "us"},
        {"cell_overhead_s", c.cell_overhead_s, 1e9, "ns"},
        {"pio_overhead_s", c.pio_overhead_s, 1e9, "ns"},
        {"bcopy_overhead_s", c.bcopy_overhead_s, 1e9, "ns"},
    };
    for (const Row& r : rows) {
        std::printf("    %-18s %-11.4g %8.3f %s\n", r.key, r.value, r.value * r.scale, r.unit);
    }
}

int print_lane_tables(const core::Context& context, const std::string& tls) {
    const proto::SelectOverrides o = overrides_from(context.config());
    if (tls == "shm") return print_shm_tables(context, o);
    if (tls == "verbs") return print_verbs_tables(context, o);
    std::printf("\nself transport (loop-back within one worker: no rendezvous)\n");
    note_if_disabled(context, "self");
    print_table("endpoint to its own worker",
                caps_for(context.config(), kSelfMaxMessage, false, false, false),
                context.costs(), o);
    return 0;
}

int print_proto(const Args& args) {
    const std::string* memtype = args.get("--memtype");
    if (memtype != nullptr && *memtype != "host") {
        const bool known = *memtype == "simdev" || *memtype == "dmabuf" || *memtype == "cuda";
        std::fprintf(stderr, "swy-info: --memtype %s: %s (only host for now)\n",
                     memtype->c_str(), known ? "not supported yet" : "unknown memory type");
        return 2;
    }
    const std::string* tls = args.get("--tls");
    if (tls != nullptr && *tls != "shm" && *tls != "self" && *tls != "verbs") {
        std::fprintf(stderr, "swy-info: --tls %s: expected shm, self or verbs\n", tls->c_str());
        return 2;
    }

    common::Config config;
    std::string error;
    if (common::Config::from_environment(&config, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: bad configuration: %s\n", error.c_str());
        return 1;
    }
    core::Context* context = nullptr;
    if (core::Context::create(config, &context, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: cannot create a context: %s\n", error.c_str());
        return 1;
    }
    const proto::CostFigures& costs = context->costs();
    std::printf("Protocol selection for host memory\n");
    std::printf("  cost figures: %s%s\n", costs.source.c_str(),
                costs.from_file ? "" : " (no calibration file; run swy-info --calibrate)");
    print_cost_figures(costs);
    std::printf("  overrides: %s\n", overrides_text(config).c_str());

    int rc = 0;
    if (tls == nullptr || *tls == "shm") rc |= print_lane_tables(*context, "shm");
    if (tls == nullptr || *tls == "self") rc |= print_lane_tables(*context, "self");
    if (tls == nullptr || *tls == "verbs") rc |= print_lane_tables(*context, "verbs");
    delete context;
    return rc;
}

}  // namespace swy::info
