#include "transports/shm/shm_costs.h"

namespace swy::tl::shm {
namespace {

// Rendezvous moves large buffers with one process_vm_readv/writev call per chunk of about
// this size: the call's fixed cost, spread over the chunk, is part of the per-byte cost.
constexpr double kCmaChunkBytes = 512.0 * 1024;

}  // namespace

LaneCosts shm_lane_costs(const common::CostFigures& f) {
    const double fifo_latency = f.get("fifo_latency_s");
    const double cma_call = f.get("cma_call_s");
    LaneCosts c;
    c.latency_s = fifo_latency;
    // Every cell is claimed, published and dispatched, whichever path it took.
    c.message_s = f.get("cell_overhead_s");
    // Copy-in and copy-out of a cell overlap: shm_copy_bw_Bps is the end-to-end rate.
    const double cell_copy = 1.0 / f.get("shm_copy_bw_Bps");
    c.am_short = {f.get("pio_overhead_s"), cell_copy};    // plain stores into a private ring
    c.am_bcopy = {f.get("bcopy_overhead_s"), cell_copy};  // a compare-and-swap on the shared head
    c.unexpected_copy_per_byte_s = 1.0 / f.get("memcpy_bw_Bps");
    const double cma_per_byte = 1.0 / f.get("cma_bw_Bps") + cma_call / kCmaChunkBytes;
    c.get_zcopy = {cma_call, cma_per_byte};
    // A PUT is done for the receiver when the FIN, sent after the write, has arrived.
    c.put_zcopy = {cma_call + fifo_latency, cma_per_byte};
    c.reg = {};  // CMA needs no registration
    return c;
}

}  // namespace swy::tl::shm
