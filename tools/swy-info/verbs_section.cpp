// Verbs part of the "Transports" section: the RDMA device ports start-up would see, the one
// that would be opened, and what it can do (inline PIO size, device memory, dma-buf MRs), and
// whether rendezvous registrations are cached.
#include <algorithm>
#include <cstdio>
#include <string>

#include "introspect/introspect.h"
#include "sections.h"

namespace swy::info {

tl::verbs::VerbsConfig verbs_config_from(const common::Config& config) {
    // The library's own reading (the worker's), never a copy of it.
    tl::verbs::VerbsConfig vc;
    std::string why;
    if (tl::verbs::read_settings(config, &vc, &why) != Status::kOk) {
        std::fprintf(stderr, "swy-info: %s (a worker would not open)\n", why.c_str());
    }
    return vc;
}

std::string verbs_availability(const common::Config& config) {
    return tl::verbs::availability(config);
}

namespace {

/// The device-memory PIO window an interface on @p p would hand out, and to whom.
std::string dm_window_text(const tl::verbs::VerbsConfig& vc, const tl::verbs::PortInfo& p) {
    const bool emulated = !p.device_memory && vc.dm_emulate;
    if (!p.device_memory && !emulated) {
        return "inline only (no device memory; SWY_VERBS_DM_EMULATE=y emulates it for tests)";
    }
    const size_t slot = vc.dm_cell_size * tl::verbs::kDmCellsPerSlot;
    // As many whole slots as the device holds (DmPool::create).
    const size_t slots =
        emulated ? vc.dm_slots : std::min<size_t>(vc.dm_slots, p.max_dm_size / slot);
    const size_t reserved = std::min<size_t>(vc.dm_reserved, slots);
    return std::string(emulated ? "EMULATED in host memory (SWY_VERBS_DM_EMULATE, a testing "
                                  "aid): "
                                : "device memory: ") +
           std::to_string(slots) + " slots (SWY_VERBS_DM_SLOTS) of " +
           std::to_string(tl::verbs::kDmCellsPerSlot) + " cells x " +
           std::to_string(vc.dm_cell_size) +
           " B (SWY_VERBS_DM_CELL_SIZE) = " + std::to_string(slots * slot) +
           " B; one slot per endpoint, first come first served, " + std::to_string(reserved) +
           " kept for SWY_EP_FLAG_PIO_FIRST (SWY_PIO_RESERVED); the others send inline only "
           "(swy_ep_query: pio_window)";
}

}  // namespace

void print_verbs_ports(const common::Config& config) {
    std::string why;
    const tl::verbs::VerbsConfig vc = verbs_config_from(config);
    const auto ports = tl::verbs::probe(vc, &why);
    std::printf("\n  verbs devices (SWY_NET_DEVICES selects; the first usable port is opened)\n");
    if (ports.empty()) {
        std::printf("    none: %s\n", why.c_str());
        return;
    }
    for (const auto& p : ports) {
        std::printf("    %s:%d  %s  %s  MTU %d  GID[%d] %s (%s)  LID %u\n", p.device.c_str(),
                    p.port, p.state.c_str(), p.link_layer.c_str(), p.active_mtu, p.gid_index,
                    p.gid.c_str(), p.gid_type.c_str(), p.lid);
        std::printf("      %s\n", p.usable ? "usable" : ("not used: " + p.why_not).c_str());
        std::printf("      inline (PIO) limit   %u B (asked %s B, SWY_VERBS_MAX_INLINE)\n",
                    p.max_inline, std::to_string(config.get_size("VERBS_MAX_INLINE")).c_str());
        std::printf("      device memory        %s\n",
                    p.device_memory ? ("yes, " + std::to_string(p.max_dm_size) + " B").c_str()
                                    : p.device_memory_reason.c_str());
        const std::string dmabuf =
            p.dmabuf_mr
                ? "yes" + (p.dmabuf_reason.empty() ? "" : " (" + p.dmabuf_reason + ")")
                : "no: " + p.dmabuf_reason + " (device memory rendezvous uses the staged pipeline)";
        std::printf("      PIO window           %s\n", dm_window_text(vc, p).c_str());
        std::printf("      dma-buf MRs          %s\n", dmabuf.c_str());
    }
    // Decided per process (pagemap visibility), not per port: printed once.
    std::string rcache_why;
    if (tl::verbs::rcache_page_identity(vc, &rcache_why) != nullptr) {
        std::printf(
            "    registration cache   on: hits validated by page frames, at most %zu "
            "entries / %zu B pinned (SWY_VERBS_RCACHE_ENTRIES, SWY_VERBS_RCACHE_MAX)\n",
            vc.rcache_limits.max_entries, vc.rcache_limits.max_bytes);
    } else {
        std::printf("    registration cache   off: %s; rendezvous registers per transfer\n",
                    rcache_why.c_str());
    }
}

}  // namespace swy::info
