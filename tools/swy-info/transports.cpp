// "Transports" section: enabled/available per transport, then the shm attributes.
#include <cstdio>
#include <string>

#include "cma_probe.h"
#include "introspect/introspect.h"
#include "sections.h"
#include "text.h"

namespace swy::info {
namespace {

/// Bytes of the header a synchronous single-packet message carries: the PIO limit is what a
/// PIO cell has left after it (core::Endpoint sizes eager_short by the sync header, so that
/// a sync send of the same size also fits). A cell size counts messages only: the cell's
/// own header lives apart (in the FIFO's slot, before a PIO record).
constexpr size_t kTagHeaderBytes = sizeof(proto::EagerSyncHeader);
/// A bcopy fragment is what a FIFO cell holds after the first-fragment header.
constexpr size_t kFragmentHeaderBytes = sizeof(proto::EagerFirstHeader);
static_assert(kTagHeaderBytes == 16 && kFragmentHeaderBytes == 32, "update the text below");

/// Whether cross-memory attach works on this host. CMA is not an interface of its own (it
/// serves shm and self rendezvous), so it has no registry entry but SWY_TLS still names it.
std::string cma_availability(const common::Config& config) {
    if (config.get_string("CMA") == "n") return "no: disabled by SWY_CMA=n";
    CmaProbe probe = probe_cma();
    return probe.works ? "yes" : "no: " + probe.why;
}

/// One "name  value  (source)" line of the shm attribute list.
void attr_line(const char* name, const std::string& value, const std::string& source) {
    std::printf("    %-21s %-9s %s\n", name, value.c_str(), source.c_str());
}

/// The shm transport's limits as the configuration makes them.
void print_shm_attributes(const common::Config& config) {
    // The settings as the shm transport reads them when a worker opens it.
    tl::shm::ShmConfig sc;
    std::string why;
    if (tl::shm::read_settings(config, &sc, &why) != Status::kOk) {
        std::printf("  shm attributes: %s\n", why.c_str());
        return;
    }
    const tl::shm::SegmentGeometry& geometry = sc.geometry;
    const uint64_t fifo_cells = geometry.fifo_cells;
    const size_t cell_size = geometry.fifo_cell_size;
    const uint64_t pio_slots = geometry.pio_slots;
    const uint64_t pio_credits = geometry.pio_credits;
    const size_t pio_cell_size = geometry.pio_cell_size;
    // Cells too small for their headers are rejected by the transport itself; here they would
    // only make the arithmetic below meaningless.
    if (cell_size <= kFragmentHeaderBytes || pio_cell_size <= kTagHeaderBytes) {
        std::printf("  shm attributes: configuration out of range (see swy-info -c)\n");
        return;
    }

    std::printf("\n  shm attributes (from the configuration)\n");
    attr_line("receive FIFO cells", std::to_string(fifo_cells), "SWY_SHM_FIFO_CELLS");
    attr_line("bcopy fragment size", std::to_string(cell_size - kFragmentHeaderBytes) + " B",
              "SWY_SHM_CELL_SIZE " + std::to_string(cell_size) + " B - 32 B fragment header");
    attr_line("PIO rings per worker", std::to_string(pio_slots), "SWY_SHM_PIO_SLOTS");
    attr_line("PIO credits per ring", std::to_string(pio_credits), "SWY_SHM_PIO_CREDITS");
    attr_line("PIO max message size", std::to_string(pio_cell_size - kTagHeaderBytes) + " B",
              "SWY_SHM_PIO_CELL_SIZE " + std::to_string(pio_cell_size) + " B - 16 B sync header");
    attr_line(
        "segment size", format_bytes(geometry.total_size()),
        std::to_string(geometry.total_size()) + " B per worker: FIFO, PIO rings, slot tables");
}

}  // namespace

void print_transports(const common::Config& config, const core::Context& context) {
    std::string tls;
    config.get_text("TLS", &tls);
    std::printf("\nTransports (SWY_TLS=%s)\n", tls.c_str());
    std::printf("  %-9s %-8s %s\n", "name", "enabled", "available on this host");
    // Every registered transport, as the worker would open them, then CMA.
    for (const tl::TransportEntry* t : tl::transports()) {
        const std::string name(t->name);
        const std::string available = t->availability != nullptr ? t->availability(config) : "yes";
        std::printf("  %-9s %-8s %s\n", name.c_str(),
                    yes_no(context.transport_enabled(name.c_str())), available.c_str());
    }
    std::printf("  %-9s %-8s %s\n", "cma", yes_no(context.transport_enabled("cma")),
                cma_availability(config).c_str());
    print_shm_attributes(config);
    if (context.transport_enabled("verbs")) print_verbs_ports(config);
}

}  // namespace swy::info
