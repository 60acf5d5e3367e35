// Cost figures of this machine: measured by `swy-info --calibrate` and read from a small
// key = value file at context creation; sensible defaults when no file exists. Nothing reads
// them directly to choose a protocol: each transport turns them into its lanes' costs
// (tl::LaneAttr::costs, by transports/<name>/<name>_costs.h), and the selector reads those.
//
// The file is read by every context and written by a tool, so both sides treat its path as
// possibly hostile (security issue #12): the reader never blocks, never follows a final
// symlink, reads a bounded amount and falls back to the defaults with a warning; the writer
// never writes through a symlink. Ranges of each figure are listed in cost_figures.cpp.
#pragma once

#include <cstddef>
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
    // tcp lanes: measured by `swy-info --calibrate` over loopback (swy-perf, two processes).
    // Defaults from such runs on the 2-vCPU reference VM (docs/protocols.md): a median
    // one-way time of 9-13 us for 8 B, 0.4-0.8 GB/s for a 1 MiB eager stream. A real network
    // has a longer latency, which only moves rendezvous later.
    double tcp_latency_s = 6e-6;        ///< one-way latency of a small message, less overhead
    double tcp_overhead_s = 4e-6;       ///< CPU time per message (system calls on both sides)
    double tcp_bw_Bps = 0.75e9;         ///< bandwidth of a large eager_bcopy stream
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

    /// Largest calibration file read (a real one is under 1 KiB); a larger file is refused.
    static constexpr size_t kMaxFileBytes = 64 * 1024;

    /// Read the calibration file at @p path into @p out, without following a symbolic link
    /// in its last component and without blocking. Refused (kInvalidParam, reason in @p why):
    /// anything but a regular file (FIFO, device, directory, symlink), a file over
    /// kMaxFileBytes, a file owned by neither the effective uid nor root, a file writable by
    /// group or others. kNotFound if it does not exist, kIoError if it cannot be opened or
    /// read, kMalformed for a line that is not `key = number` (a NUL byte, text after the
    /// number). A known key whose value lies outside its documented range is ignored (the
    /// built-in value stays) and an unknown key is skipped (forward compatibility); both log
    /// a warning naming the file. @p out is written only on kOk. Thread-safe.
    static Status load(const std::string& path, CostFigures* out, std::string* why);

    /// The figures a context uses: the file @p configured (SWY_CALIBRATION_FILE) when it is
    /// not empty, else default_path() when that is not empty and the file exists. A file that
    /// cannot be used — missing when named explicitly, refused or malformed — logs a warning
    /// naming it and the reason, and the built-in defaults are returned: a bad file never
    /// fails or blocks context creation. "/dev/null" means "no file" and is silent.
    static CostFigures load_configured(const std::string& configured);

    /// Write as key = value lines to @p path, atomically and without following symlinks:
    /// missing directories are created with mode 0700; the parent directory must be owned by
    /// the effective uid or root and not writable by others; the figures go to a new file
    /// created with O_EXCL|O_NOFOLLOW and mode 0600 in that directory, are fsync'ed, and the
    /// file is rename()d over @p path. A @p path that is a symbolic link or not a regular file
    /// is refused (kInvalidParam), never written through nor replaced. A value outside its
    /// field's range is written commented out (the reader would ignore it). kIoError with
    /// @p why if a system call fails; nothing is left behind then.
    Status save(const std::string& path, std::string* why) const;

    /// The path used when SWY_CALIBRATION_FILE is empty: $HOME/.cache/switchyard/
    /// calibration.conf, or "" (no default file) when HOME is unset or not an absolute path —
    /// never a shared directory such as /tmp, where another user could plant the file.
    static std::string default_path();
};

}  // namespace swy::proto
