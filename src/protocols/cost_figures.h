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
