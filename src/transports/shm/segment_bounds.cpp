#include "transports/shm/segment_bounds.h"

#include <utility>

namespace swy::tl::shm {
namespace {

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

bool geometry_within_bounds(const SegmentGeometry& g, std::string* why) {
    std::string problems;
    auto fail = [&](const std::string& what) {
        if (!problems.empty()) problems += "; ";
        problems += what;
    };
    const auto n = [](uint64_t v) { return std::to_string(v); };
    if (g.fifo_cells < kMinFifoCells || g.fifo_cells > kMaxFifoCells ||
        !is_power_of_two(g.fifo_cells)) {
        fail("SWY_SHM_FIFO_CELLS=" + n(g.fifo_cells) + " must be a power of two from " +
             n(kMinFifoCells) + " to " + n(kMaxFifoCells));
    }
    if (g.pio_credits < kMinPioCredits || g.pio_credits > kMaxPioCredits ||
        !is_power_of_two(g.pio_credits)) {
        fail("SWY_SHM_PIO_CREDITS=" + n(g.pio_credits) + " must be a power of two from " +
             n(kMinPioCredits) + " to " + n(kMaxPioCredits));
    }
    for (auto [name, size] : {std::pair{"SWY_SHM_CELL_SIZE", g.fifo_cell_size},
                              std::pair{"SWY_SHM_PIO_CELL_SIZE", g.pio_cell_size}}) {
        if (size < kMinCellSize || size > kMaxCellSize || size % kCacheLine != 0) {
            fail(std::string(name) + "=" + n(size) + " must be a multiple of " + n(kCacheLine) +
                 " from " + n(kMinCellSize) + " B to " + mib(kMaxCellSize));
        }
    }
    if (g.pio_cell_size > g.fifo_cell_size) {
        fail("SWY_SHM_PIO_CELL_SIZE=" + n(g.pio_cell_size) + " is larger than SWY_SHM_CELL_SIZE=" +
             n(g.fifo_cell_size) + " (a fragment must fit either lane)");
    }
    if (g.max_senders < kMinMaxSenders || g.max_senders > kMaxMaxSenders) {
        fail("SWY_SHM_MAX_SENDERS=" + n(g.max_senders) + " must be from " + n(kMinMaxSenders) +
             " to " + n(kMaxMaxSenders));
    }
    if (g.pio_slots > kMaxPioSlots) {
        fail("SWY_SHM_PIO_SLOTS=" + n(g.pio_slots) + " is more than " + n(kMaxPioSlots));
    }
    if (problems.empty()) {
        // Products only once each factor is bounded: none of them can overflow 64 bits then.
        const uint64_t fifo_bytes = uint64_t{g.fifo_cells} * g.fifo_cell_size;
        if (fifo_bytes > kMaxFifoBytes) {
            fail("the FIFO (SWY_SHM_FIFO_CELLS x SWY_SHM_CELL_SIZE = " + n(g.fifo_cells) + " x " +
                 n(g.fifo_cell_size) + " B) is more than " + mib(kMaxFifoBytes));
        }
        // The messages a ring holds, as the user sets them: the records' headers (one cache
        // line at most each, pio_ring_bytes()) come on top.
        if (uint64_t{g.pio_credits} * g.pio_cell_size > kMaxPioRingBytes) {
            fail("a PIO ring (SWY_SHM_PIO_CREDITS x SWY_SHM_PIO_CELL_SIZE = " + n(g.pio_credits) +
                 " x " + n(g.pio_cell_size) + " B) is more than " + mib(kMaxPioRingBytes));
        }
        if (problems.empty() && g.total_size() > kMaxSegmentBytes) {
            fail("the segment (FIFO plus SWY_SHM_PIO_SLOTS=" + n(g.pio_slots) + " rings) is " +
                 n(g.total_size() >> 20) + " MiB, more than " + mib(kMaxSegmentBytes));
        }
    }
    if (problems.empty()) return true;
    *why = "shm: " + problems;
    return false;
}

}  // namespace swy::tl::shm
