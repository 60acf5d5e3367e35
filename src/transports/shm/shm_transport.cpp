// The shm transport as the registry sees it: its variables, typed settings, open, reach
// (same host: boot id and network namespace) and PIO policy (a shared window of dedicated
// rings, granted within the worker's PIO quota).
#include "transports/shm/shm_transport.h"

#include "common/config_reader.h"
#include "transports/shm/segment_bounds.h"
#include "transports/shm/shm_costs.h"
#include "transports/shm/shm_iface.h"

namespace swy::tl::shm {
namespace {

using enum common::ConfigType;

constexpr common::ConfigVar kVars[] = {
    {"SHM_FIFO_CELLS",
     kUnsigned,
     "256",
     "Cells in the shared multi-producer receive FIFO of each worker: a power of two. The "
     "FIFO (this x SHM_CELL_SIZE) is at most 64 MiB: its cells are initialised, so "
     "committed, when the worker is created.",
     {},
     kMinFifoCells,
     kMaxFifoCells},
    {"SHM_CELL_SIZE",
     kSize,
     "8256",
     "Largest message of a receive-FIFO cell (protocol header and payload; the cell's own "
     "header lives apart): a multiple of 64. Bounds the fragment size of eager bcopy sends. "
     "8256 = 8 KiB + 64: an 8 KiB message and its protocol header travel in one cell.",
     {},
     kMinCellSize,
     kMaxCellSize},
    {"SHM_PIO_SLOTS",
     kUnsigned,
     "8",
     "Dedicated PIO rings that a worker's receive window offers to senders.",
     {},
     0,
     kMaxPioSlots},
    {"SHM_PIO_CREDITS",
     kUnsigned,
     "64",
     "Size of each dedicated PIO ring, in its largest records (the ring holds "
     "SHM_PIO_CREDITS x (SHM_PIO_CELL_SIZE + 64) bytes of packed, cache-line aligned records): a "
     "power of two, the ring at most 16 MiB, the whole segment (FIFO and rings) 256 MiB.",
     {},
     kMinPioCredits,
     kMaxPioCredits},
    {"SHM_PIO_CELL_SIZE",
     kSize,
     "8256",
     "Largest message of a dedicated PIO ring's record (protocol header and payload; the "
     "record's 16-byte header comes on top): bounds the largest PIO message and the "
     "fragment size of endpoints that hold a PIO ring. A multiple of 64, at most "
     "SHM_CELL_SIZE. 8256 = 8 KiB + 64: an 8 KiB message and its protocol header travel in "
     "one record.",
     {},
     kMinCellSize,
     kMaxCellSize},
    {"SHM_MAX_SENDERS",
     kUnsigned,
     "16384",
     "Sender slots in each worker's receive segment: each shm endpoint to the worker takes "
     "one; replies use that endpoint's lane, or a reply lane (one more slot) to a process the "
     "worker has no endpoint to. Slots of closed endpoints and dead processes are reused. "
     "With the table full, creating an endpoint fails with SWY_ERR_NO_RESOURCE, and so do the "
     "requests of a peer that cannot be answered.",
     {},
     kMinMaxSenders,
     kMaxMaxSenders},
    {"SHM_PEER_WATCH", kString, "pidfd",
     "How a worker notices that an shm peer died: \"pidfd\" holds a process descriptor per "
     "peer it exchanged messages with (a blocked wait wakes at once); \"poll\" holds none: "
     "every SWY_KEEPALIVE_INTERVAL, progress checks that each peer still holds its segment "
     "file, and one timer wakes a blocked wait at that interval.",
     "pidfd|poll"},
    {"SHM_TEST_DIE_AFTER_CLAIM",
     kUnsigned,
     "0",
     "Test hook, not for production: the process kills itself (SIGKILL) after claiming its "
     "N-th shared-FIFO cell and before publishing it, to test that receivers skip a dead "
     "sender's cell. 0: off.",
     {},
     0,
     UINT32_MAX},
};

Status open_shm(const OpenParams& p, std::unique_ptr<Interface>* out, std::string* why) {
    ShmConfig sc;
    Status s = read_settings(p.config, &sc, why);
    if (s != Status::kOk) return s;
    // Rendezvous zero-copy of shm lanes: CMA, as SWY_CMA says and where SWY_TLS enables it.
    const bool cma_enabled = p.tls_enabled == nullptr || p.tls_enabled(cma::kTlsName);
    s = cma::configured_mode(p.config, cma_enabled, &sc.cma_mode, why);
    if (s != Status::kOk) return s;
    sc.costs = shm_lane_costs(p.costs);
    sc.place_segment = p.place_local_memory;
    std::unique_ptr<ShmInterface> shm;
    s = ShmInterface::open(sc, p.worker_uid, p.iface_index, p.sink, &shm, why);
    if (s == Status::kOk) *out = std::move(shm);
    return s;
}

bool reaches(const ReachQuery& q) { return q.same_host; }

Status connect_shm(Interface* iface, const ConnectParams& p, std::unique_ptr<Endpoint>* out,
                   std::string* why) {
    // The rings are a window shared by every endpoint of the worker: one only within the
    // quota, and never for an endpoint that asked for none.
    const bool want_pio = !p.no_pio && p.pio_quota_left;
    return iface->connect(p.remote_uid, p.section, p.section_length, want_pio, out, why);
}

bool pio_window(const Interface* iface, unsigned* slots, unsigned* free) {
    const auto* shm = static_cast<const ShmInterface*>(iface);
    *slots = shm->pio_window_slots();
    *free = shm->pio_window_free();
    return true;
}

std::string always(const common::Config&) { return "yes"; }

Status check_shm(const common::Config& config, std::string* why) {
    ShmConfig sc;
    return read_settings(config, &sc, why);
}

}  // namespace

Status read_settings(const common::Config& config, ShmConfig* out, std::string* why) {
    common::ConfigReader r(config);
    // The declared bounds (segment_bounds.h) keep every value within 32 bits; the rules that
    // tie them together are geometry_within_bounds()'s.
    SegmentGeometry& g = out->geometry;
    g.fifo_cells =
        static_cast<uint32_t>(r.get_unsigned("SHM_FIFO_CELLS", kMinFifoCells, kMaxFifoCells));
    g.fifo_cell_size =
        static_cast<uint32_t>(r.get_size("SHM_CELL_SIZE", kMinCellSize, kMaxCellSize));
    g.pio_slots = static_cast<uint32_t>(r.get_unsigned("SHM_PIO_SLOTS", 0, kMaxPioSlots));
    g.pio_credits =
        static_cast<uint32_t>(r.get_unsigned("SHM_PIO_CREDITS", kMinPioCredits, kMaxPioCredits));
    g.pio_cell_size =
        static_cast<uint32_t>(r.get_size("SHM_PIO_CELL_SIZE", kMinCellSize, kMaxCellSize));
    g.max_senders =
        static_cast<uint32_t>(r.get_unsigned("SHM_MAX_SENDERS", kMinMaxSenders, kMaxMaxSenders));
    out->test_die_after_claim =
        static_cast<uint32_t>(r.get_unsigned("SHM_TEST_DIE_AFTER_CLAIM", 0, UINT32_MAX));
    out->keepalive_ns = r.get_time_ns("KEEPALIVE_INTERVAL");
    out->watch_with_pidfd = r.get_choice("SHM_PEER_WATCH", {"pidfd", "poll"}) == "pidfd";
    if (!r.ok()) {
        *why = r.error();
        return Status::kInvalidParam;
    }
    return geometry_within_bounds(g, why) ? Status::kOk : Status::kInvalidParam;
}

const TransportEntry kTransport{
    .name = "shm",
    .config_prefix = "SHM_",
    .address_section = kAddressSection,
    .priority = 30,
    .polls_host_memory = true,
    .config_vars = kVars,
    .cost_figures = kCostFigures,
    .open = open_shm,
    .can_reach = reaches,
    .connect = connect_shm,
    .pio_window = pio_window,
    .lane_costs = shm_lane_costs,
    .availability = always,
    .check_config = check_shm,
};

}  // namespace swy::tl::shm
