// Cost figures of this machine: measured by `swy-info --calibrate` and read from a small
// key = value file at context creation; sensible defaults when no file exists.
#pragma once

#include <string>

#include "common/status.h"

namespace swy::proto {

struct CostFigures {
    double memcpy_bw_Bps = 10e9;        ///< single-thread memcpy, large out-of-cache buffers
    // Defaults measured with swy-perf on the 2-vCPU reference VM (docs/protocols.md):
    double shm_copy_bw_Bps = 24e9;      ///< bcopy through shared cells (copy-in and copy-out overlap)
    double cma_bw_Bps = 10e9;           ///< process_vm_readv, in-cache buffers
    double cma_call_s = 3e-6;           ///< fixed cost of one process_vm_readv call
    double fifo_latency_s = 0.3e-6;     ///< one-way latency of one cell through the FIFO
    double cell_overhead_s = 0.06e-6;   ///< per-cell cost of claiming, publishing, dispatching
    double pio_overhead_s = 0.02e-6;    ///< send overhead of a PIO store (no atomic claim)
    double bcopy_overhead_s = 0.05e-6;  ///< send overhead of a shared-FIFO claim
    // Verbs lanes (RDMA): measured by `swy-info --calibrate` on the first usable port. The
    // defaults are placeholders of a 10 Gb/s-class RoCE adapter, not a measurement.
    double verbs_latency_s = 2e-6;        ///< one-way latency of a small SEND, less overhead
    double verbs_overhead_s = 0.3e-6;     ///< sender CPU time per message (1 / message rate)
    double verbs_bw_Bps = 1.25e9;         ///< eager SEND bandwidth
    double verbs_rdma_overhead_s = 0.5e-6;  ///< posting one RDMA READ/WRITE and its completion
    double verbs_rdma_bw_Bps = 1.25e9;    ///< RDMA READ/WRITE bandwidth of large transfers
    double verbs_reg_s = 5e-6;            ///< ibv_reg_mr + ibv_dereg_mr, fixed part
    double verbs_reg_Bps = 20e9;          ///< ... per byte (page pinning), as a rate
    double verbs_reg_hit_s = 1e-6;        ///< a validated registration-cache hit, fixed part
    double verbs_reg_hit_Bps = 200e9;     ///< ... per byte (page-frame check), as a rate
    bool from_file = false;             ///< true when loaded from a calibration file
    std::string source = "built-in defaults";

    /// Parse a calibration file. kNotFound if it does not exist; kMalformed with @p why for
    /// a line that does not parse (unknown keys are ignored for forward compatibility).
    static Status load(const std::string& path, CostFigures* out, std::string* why);
    /// Write as key = value lines.
    Status save(const std::string& path, std::string* why) const;
    /// The path used when SWY_CALIBRATION_FILE is empty: ~/.cache/switchyard/calibration.conf.
    static std::string default_path();
};

}  // namespace swy::proto
