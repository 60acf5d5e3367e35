// What a shared-memory lane's operations cost, from the context's cost figures: the FIFO's
// latency and per-cell overheads, the copy bandwidth through cells, and CMA for zero-copy
// rendezvous. The worker puts the result in ShmConfig::costs; every shm lane reports it in
// its attributes (tl::LaneAttr::costs).
#pragma once

#include "common/cost_figures.h"
#include "transports/transport.h"

namespace swy::tl::shm {

/// The calibration figures shm's cost function reads besides memcpy_bw_Bps (the registry
/// entry lists them; file keys). Defaults measured with swy-perf on the 2-vCPU reference VM
/// (docs/protocols.md). cma_* belong here: CMA is shm's zero-copy path.
inline constexpr common::CostFigureVar kCostFigures[] = {
    // shm_copy_bw_Bps and cma_* are the library's own lines, measured with swy-perf ping-pongs
    // of 16-128 KiB on the reference VM (issue 17; docs/protocols.md "Built-in shm figures"):
    // eager_bcopy through 8144-byte fragments (the 8 KiB cells before they counted messages
    // only; 8224 B since) carries a multi-fragment message at ~61 ps/B,
    // of which the per-fragment claim and dispatch are (m + b0) / F = 13.5 ps/B: the cells'
    // end-to-end copy is ~47.5 ps/B. (Through 4048-byte fragments, the PIO cells before
    // SWY_SHM_PIO_CELL_SIZE became 8K, it was ~106 ps/B: a fragment costs ~0.4 us of hand-off
    // between the cores whatever its size, which m + b0 does not count.)
    {"shm_copy_bw_Bps", 21e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "bcopy through shared cells (copy-in and copy-out overlap)"},
    // A GET ping-pong of 16-128 KiB is 3.6 us + 21 ps/B: less the handshake (2L + 2m + b0 =
    // 0.77 us) a call costs 2.8 us, not the 1.5 us that a bare process_vm_readv probe sees
    // (the RTS's unpacking and matching, the iovec, the completion). The per-byte figure is
    // the probe's (16-512 KiB reads: 20-28 GB/s), not the 43 GB/s of cache-resident reads.
    {"cma_bw_Bps", 20e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "process_vm_readv of 16-512 KiB per call, warm buffers"},
    {"cma_call_s", 2.8e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "fixed cost of one GET's process_vm_readv call"},
    {"fifo_latency_s", 0.3e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "one-way latency of one cell through the FIFO"},
    {"cell_overhead_s", 0.06e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kNanos, "per-cell cost of claiming, publishing, dispatching"},
    {"pio_overhead_s", 0.02e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kNanos, "send overhead of a PIO store (no atomic claim)"},
    {"bcopy_overhead_s", 0.05e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kNanos, "send overhead of a shared-FIFO claim"},
};

/// A shm lane's costs under @p figures (fifo_latency_s, cell_overhead_s, pio_overhead_s,
/// bcopy_overhead_s, shm_copy_bw_Bps, cma_call_s, cma_bw_Bps, memcpy_bw_Bps). One set for
/// lanes with and without a PIO ring: the ring changes what the lane can do (LaneAttr::pio),
/// not what each operation costs.
LaneCosts shm_lane_costs(const common::CostFigures& figures);

}  // namespace swy::tl::shm
