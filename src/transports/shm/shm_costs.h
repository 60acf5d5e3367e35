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
    {"shm_copy_bw_Bps", 24e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "bcopy through shared cells (copy-in and copy-out overlap)"},
    // cma_*: what swy-info --calibrate's GET-shaped probe (16-512 KiB reads of another
    // process's warm buffer) measured here, 13-22 GB/s and 0.8-1.7 us under load; swy-perf's
    // GET and eager latencies cross between 64 and 128 KiB with these (issue 17).
    {"cma_bw_Bps", 15e9, common::kFigureBwMin, common::kFigureBwMax, common::FigureUnit::kGBps,
     "process_vm_readv of 16-512 KiB per call, warm buffers"},
    {"cma_call_s", 1.5e-6, common::kFigureTimeMin, common::kFigureTimeMax,
     common::FigureUnit::kMicros, "fixed cost of one process_vm_readv call"},
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
