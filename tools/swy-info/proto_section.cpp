// "--proto": the protocol selection tables an endpoint would build on this host, computed
// offline through the library's own path: each transport's lane attributes (its own
// function: tl::shm::lane_attr, tl::tcp::lane_attr, tl::verbs::lane_attr, a real self lane),
// with costs from its own cost function, then proto::lane_caps / proto::table_for, exactly
// as core::Endpoint::wire does when a lane connects.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "args.h"
#include "cma_probe.h"
#include "introspect/introspect.h"
#include "proto_tables.h"
#include "sections.h"
#include "text.h"

namespace swy::info {
namespace {

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

/// "0.300 us" / "12.5 ns" for a time in seconds.
std::string time_text(double s) {
    char buf[32];
    if (s >= 1e-6) {
        std::snprintf(buf, sizeof(buf), "%.3f us", s * 1e6);
    } else {
        std::snprintf(buf, sizeof(buf), "%.1f ns", s * 1e9);
    }
    return buf;
}

/// "24.0 GB/s" for a per-byte time.
std::string rate_text(double per_byte_s) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3g GB/s", per_byte_s > 0 ? 1e-9 / per_byte_s : 0.0);
    return buf;
}

/// The lane's own cost figures (tl::LaneAttr::costs), as the selector reads them.
void print_lane_costs(const proto::LaneCaps& caps) {
    const tl::LaneCosts& c = caps.costs;
    std::printf("    lane costs: latency %s, per message %s", time_text(c.latency_s).c_str(),
                time_text(c.message_s).c_str());
    if (caps.pio) {
        std::printf(", short +%s at %s", time_text(c.am_short.fixed_s).c_str(),
                    rate_text(c.am_short.per_byte_s).c_str());
    }
    std::printf(", bcopy +%s per fragment at %s\n", time_text(c.am_bcopy.fixed_s).c_str(),
                rate_text(c.am_bcopy.per_byte_s).c_str());
    if (caps.rndv && caps.zcopy) {
        std::printf(
            "                zero-copy get %s at %s, put %s at %s, registration %s "
            "at %s per side\n",
            time_text(c.get_zcopy.fixed_s).c_str(), rate_text(c.get_zcopy.per_byte_s).c_str(),
            time_text(c.put_zcopy.fixed_s).c_str(), rate_text(c.put_zcopy.per_byte_s).c_str(),
            time_text(c.reg.fixed_s).c_str(),
            c.reg.per_byte_s > 0 ? rate_text(c.reg.per_byte_s).c_str() : "-");
    }
}

/// One table: a caption, the lane it assumes and its cost figures, every range with its
/// reason, and the thresholds between ranges on one line. @p lane is what the transport
/// reports; the caps and the table come from the library (proto::lane_caps, table_for).
void print_table(const char* caption, const tl::LaneAttr& lane, const proto::SelectOverrides& o,
                 const proto::DeviceMemoryPath* device = nullptr) {
    const proto::LaneCaps caps = proto::lane_caps(lane, o, device);
    std::printf("\n  %s\n", caption);
    std::string text = "    lane: ";
    text += caps.pio ? "eager_short up to " + std::to_string(caps.pio_max) + " B"
                     : std::string("no PIO");
    text += ", bcopy fragments of " + std::to_string(caps.fragment_max) + " B";
    text += ", rendezvous " + std::string(!caps.rndv    ? "not possible"
                                          : !caps.zcopy ? "without zero-copy"
                                          // as the transports name their zero-copy
                                          : caps.remote_keys ? "with RDMA READ/WRITE"
                                                             : "with CMA");
    std::printf("%s\n", text.c_str());
    print_lane_costs(caps);

    proto::ProtoTable table = proto::table_for(lane, o, device);
    std::string thresholds;
    size_t lo = 0;
    for (const proto::ProtoRange& r : table.ranges()) {
        std::string range =
            std::to_string(lo) + ".." +
            (r.max_size == SIZE_MAX ? std::string("inf") : std::to_string(r.max_size));
        std::printf("      %-17s %-14s %s\n", range.c_str(), proto::proto_name(r.proto),
                    r.reason.c_str());
        thresholds +=
            lo == 0 ? proto::proto_name(r.proto)
                    : std::string(" → ") + proto::proto_name(r.proto) + " at " + size_text(lo);
        if (r.max_size == SIZE_MAX) break;
        lo = r.max_size + 1;
    }
    std::printf("    thresholds: %s%s\n", thresholds.c_str(),
                table.ranges().size() == 1 ? " for every size" : "");
}

/// The SWY_* variables that change selection, as "SWY_X=value" for those set, or "none".
std::string overrides_text(const common::Config& cfg) {
    static const char* const kNames[] = {"PROTO", "RNDV_THRESH", "ZCOPY_THRESH", "RNDV_SCHEME",
                                         "PIO_MAX"};
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

/// The shm tables: with a PIO ring and on the shared FIFO, from the lanes tl::shm::lane_attr
/// describes for a peer with this configuration's geometry.
int print_shm_tables(const core::Context& context, const proto::SelectOverrides& o) {
    const common::Config& cfg = context.config();
    const size_t pio_cell = cfg.get_size("SHM_PIO_CELL_SIZE");
    const size_t fifo_cell = cfg.get_size("SHM_CELL_SIZE");
    // A cell carries a message only (its header lives apart): a fragment needs room after
    // the first-fragment header.
    const size_t min_cell = sizeof(proto::EagerFirstHeader) + 1;
    if (pio_cell < min_cell || fifo_cell < min_cell || pio_cell > UINT32_MAX ||
        fifo_cell > UINT32_MAX) {
        std::printf(
            "\nshm: SWY_SHM_CELL_SIZE / SWY_SHM_PIO_CELL_SIZE out of range "
            "(%zu..4 GiB)\n",
            min_cell);
        return 1;
    }
    std::string why;
    const bool cma = cma_usable(context, &why);
    std::printf("\nshm transport (CMA: %s)\n",
                cma ? "available" : ("no, " + why + "; tables built without it").c_str());
    note_if_disabled(context, "shm");
    tl::shm::SegmentGeometry geometry{};
    geometry.fifo_cells = static_cast<uint32_t>(cfg.get_unsigned("SHM_FIFO_CELLS"));
    geometry.fifo_cell_size = static_cast<uint32_t>(fifo_cell);
    geometry.pio_slots = static_cast<uint32_t>(cfg.get_unsigned("SHM_PIO_SLOTS"));
    geometry.pio_credits = static_cast<uint32_t>(cfg.get_unsigned("SHM_PIO_CREDITS"));
    geometry.pio_cell_size = static_cast<uint32_t>(pio_cell);
    const tl::LaneCosts costs = tl::shm::shm_lane_costs(context.costs());
    // What ShmEndpoint::set_cma adds to a lane once the probe passed.
    const auto with_cma = [&](tl::LaneAttr a) {
        if (cma) a.caps |= tl::cap::kGetZcopy | tl::cap::kPutZcopy;
        a.zcopy_reason = cma ? "" : why;
        return a;
    };
    const tl::LaneAttr pio = with_cma(tl::shm::lane_attr(geometry, true, costs));
    const tl::LaneAttr fifo = with_cma(tl::shm::lane_attr(geometry, false, costs));
    print_table("endpoint with a PIO lane", pio, o);
    print_table("endpoint without PIO (window full or SWY_EP_FLAG_NO_PIO)", fifo, o);
    return 0;
}

/// The names of @p figures, comma-separated (the figures a transport declares).
std::string figure_names(std::span<const common::CostFigureVar> figures) {
    std::string names;
    for (const common::CostFigureVar& figure : figures) {
        if (!names.empty()) names += ", ";
        names += figure.name;
    }
    return names;
}

/// The tcp table: the lane tl::tcp::lane_attr describes for this configuration, with tcp's
/// own cost figures (tl::tcp::kCostFigures).
int print_tcp_tables(const core::Context& context, const proto::SelectOverrides& o) {
    std::printf("\ntcp transport (figures: %s)\n", figure_names(tl::tcp::kCostFigures).c_str());
    note_if_disabled(context, "tcp");
    tl::tcp::TcpConfig tc;
    tc.sndbuf_limit = context.config().get_size("TCP_SNDBUF_LIMIT");
    tc.costs = tl::tcp::tcp_lane_costs(context.costs());
    print_table("endpoint (every send a system call, rendezvous through the pipeline)",
                tl::tcp::lane_attr(tc), o);
    return 0;
}

/// The self table: of a real self lane (a self interface costs nothing to open).
int print_self_tables(const core::Context& context, const proto::SelectOverrides& o) {
    std::printf("\nself transport (loop-back within one worker: no rendezvous)\n");
    note_if_disabled(context, "self");
    tl::self::SelfInterface self(1, 0, nullptr, tl::self::self_lane_costs(context.costs()));
    std::unique_ptr<tl::Endpoint> lane;
    std::string why;
    if (self.connect(1, nullptr, 0, false, &lane, &why) != Status::kOk) {
        std::printf("  self: %s\n", why.c_str());
        return 1;
    }
    print_table("endpoint to its own worker", lane->attr(), o);
    return 0;
}

/// The verbs tables: the lane an endpoint gets (inline PIO, bcopy through registered bounce
/// buffers, RDMA rendezvous), and the one for device memory, which RDMA reaches only with
/// dma-buf registration: without it, sends from device memory are staged.
int print_verbs_tables(const core::Context& context, const proto::SelectOverrides& o) {
    const common::Config& cfg = context.config();
    tl::verbs::VerbsConfig vc = verbs_config_from(cfg);
    if (vc.seg_size < 256) {
        std::printf("\nverbs: SWY_VERBS_SEG_SIZE out of range (256 B..1 GiB)\n");
        return 1;
    }
    vc.costs = tl::verbs::verbs_lane_costs(context.costs());
    std::string why;
    const auto ports = tl::verbs::probe(vc, &why);
    const tl::verbs::PortInfo* port = nullptr;
    for (const auto& p : ports) {
        if (p.usable && port == nullptr) port = &p;
    }
    // Without a device, the inline limit asked for (what a device typically grants).
    const uint32_t inline_max = port != nullptr ? port->max_inline : vc.max_inline;
    std::printf("\nverbs transport (%s)\n",
                port != nullptr
                    ? (port->device + ":" + std::to_string(port->port) + ", inline " +
                       std::to_string(inline_max) + " B")
                          .c_str()
                    : ("no device: " + (why.empty() ? std::string("none usable") : why) +
                       "; tables for an inline limit of " + std::to_string(inline_max) + " B")
                          .c_str());
    note_if_disabled(context, "verbs");
    std::string rcache_why;
    const bool rcache = tl::verbs::rcache_page_identity(vc, &rcache_why) != nullptr;
    std::printf("  registration per side: %s\n",
                rcache
                    ? "a validated registration-cache hit (buffers reused)"
                    : ("a full registration (registration cache off: " + rcache_why + ")").c_str());
    const bool dmabuf = port != nullptr && port->dmabuf_mr;
    const tl::LaneAttr lane = tl::verbs::lane_attr(vc, inline_max, dmabuf, rcache);
    print_table(
        "endpoint (inline sends = PIO, bcopy through registered bounce buffers, "
        "RDMA READ/WRITE rendezvous)",
        lane, o);
    const bool dm = port != nullptr && (port->device_memory || vc.dm_emulate);
    if (dm && lane.pio) {
        const size_t cell = std::min(vc.dm_cell_size, vc.seg_size);
        print_table(port->device_memory
                        ? "endpoint holding a device-memory slot (PIO up to a cell)"
                        : "endpoint holding an EMULATED device-memory slot (SWY_VERBS_DM_EMULATE)",
                    tl::verbs::lane_attr(vc, inline_max, dmabuf, rcache, cell), o);
    }
    // dma-buf MRs: RDMA reaches dmabuf and CUDA memory (exported by their plugins) directly.
    proto::DeviceMemoryPath device;
    device.stage_fixed_s = static_cast<double>(cfg.get_time_ns("SIMDEV_LATENCY")) * 1e-9;
    device.stage_per_byte_s = 1.0 / cfg.get_double("SIMDEV_BW");
    device.zcopy_reaches = dmabuf;  // as the lane says (cap::kDeviceMemory)
    const std::string caption =
        std::string("sends from device memory (dmabuf/cuda; staging costs of SWY_SIMDEV_*): ") +
        (dmabuf ? "the device takes dma-buf MRs: RDMA rendezvous from the exported dma-buf "
                  "(ibv_reg_dmabuf_mr), no staging"
                : "no dma-buf MRs (" +
                      (port != nullptr ? port->dmabuf_reason : std::string("no device")) +
                      "): staged pipeline");
    print_table(caption.c_str(), lane, o, &device);
    return 0;
}

}  // namespace

void print_cost_figures(const common::CostFigures& c) {
    // Every declared figure (common, then each transport's), as the file lists them.
    for (const common::CostFigureVar& figure : common::cost_figure_table()) {
        const double value = c.get(figure.name);
        std::printf("    %-21.*s %-11.4g %8.3f %s\n", static_cast<int>(figure.name.size()),
                    figure.name.data(), value, value * common::figure_unit_scale(figure.unit),
                    common::figure_unit_name(figure.unit));
    }
}

int print_lane_tables(const core::Context& context, const std::string& tls) {
    const proto::SelectOverrides o = proto::overrides_from(context.config());
    if (tls == "shm") return print_shm_tables(context, o);
    if (tls == "tcp") return print_tcp_tables(context, o);
    if (tls == "verbs") return print_verbs_tables(context, o);
    return print_self_tables(context, o);
}

int print_proto(const Args& args) {
    const std::string* memtype = args.get("--memtype");
    if (memtype != nullptr && *memtype != "host") {
        const bool known = *memtype == "simdev" || *memtype == "dmabuf" || *memtype == "cuda";
        std::fprintf(stderr, "swy-info: --memtype %s: %s (only host for now)\n", memtype->c_str(),
                     known ? "not supported yet" : "unknown memory type");
        return 2;
    }
    const std::string* tls = args.get("--tls");
    if (tls != nullptr && *tls != "shm" && *tls != "self" && *tls != "tcp" && *tls != "verbs") {
        std::fprintf(stderr, "swy-info: --tls %s: expected shm, self, tcp or verbs\n",
                     tls->c_str());
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
    const common::CostFigures& costs = context->costs();
    std::printf("Protocol selection for host memory\n");
    std::printf("  cost figures: %s%s\n", costs.source.c_str(),
                costs.from_file ? "" : " (no calibration file; run swy-info --calibrate)");
    print_cost_figures(costs);
    std::printf("  overrides: %s\n", overrides_text(config).c_str());
    const proto::Oversubscription busy = proto::detect_oversubscription(config);
    std::printf("  oversubscribed: %s (%s)%s\n", busy.busy ? "yes" : "no", busy.why.c_str(),
                busy.busy ? ": rendezvous on shm is GET alone, never split" : "");

    int rc = 0;
    if (tls == nullptr || *tls == "shm") rc |= print_lane_tables(*context, "shm");
    if (tls == nullptr || *tls == "self") rc |= print_lane_tables(*context, "self");
    if (tls == nullptr || *tls == "tcp") rc |= print_lane_tables(*context, "tcp");
    if (tls == nullptr || *tls == "verbs") rc |= print_lane_tables(*context, "verbs");
    delete context;
    return rc;
}

}  // namespace swy::info
