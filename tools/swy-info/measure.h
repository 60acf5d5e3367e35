// The measurements behind `swy-info --calibrate`. Each returns a Measured: ok with a value,
// or not ok with the reason (the caller then keeps the built-in figure and says so).
// All of them fork or pin the calling process; call them before starting threads.
#pragma once

#include <string>

#include "introspect/introspect.h"
#include "peer.h"

namespace swy::info {

/// One measured figure, or why there is none.
struct Measured {
    bool ok = false;
    double value = 0;  ///< in the unit of the CostFigures field it feeds
    std::string why;   ///< when !ok

    static Measured of(double v) { return {true, v, {}}; }
    static Measured failed(std::string why) { return {false, 0, std::move(why)}; }
};

/// Single-thread memcpy bandwidth (bytes copied per second) between two 64 MiB buffers, best
/// of several copies.
Measured measure_memcpy_bw();

/// Copy bandwidth through a shared mapping between two processes on @p cpus: the parent
/// copies 4 KiB blocks from a 64 MiB private buffer into a 64-cell MAP_SHARED ring (publishing
/// each with a release store, as a FIFO cell is published), the child copies each out into
/// its own 64 MiB buffer and frees the cell. Bytes delivered per second, best of several runs
/// of 64 MiB: what eager bcopy achieves end to end when cells are pipelined.
Measured measure_shm_copy_bw(const CpuPair& cpus);

/// One-way latency of a cache line between two processes on @p cpus: ping-pong of a counter
/// in a MAP_SHARED page, half the best average round trip over batches (at most 1.5 s). A lower bound of the
/// FIFO latency (a real cell adds a header line and dispatch; cell_overhead_s covers those).
Measured measure_fifo_latency(const CpuPair& cpus);

/// Cross-memory attach as a rendezvous GET uses it: process_vm_readv of 16 KiB .. 512 KiB
/// (one call each, one GET chunk at most) from a forked child's own, warm send buffer into a
/// warm receive buffer; a line through the best time per size gives both figures.
struct CmaFigures {
    Measured call_s;  ///< the line's intercept: the fixed cost of one call (cma_call_s)
    Measured bw_Bps;  ///< 1 / the line's slope (cma_bw_Bps)
};
/// A straight line t = call_s + n / bw_Bps.
struct CmaLine {
    bool ok = false;  ///< false when the points have no positive slope
    double call_s = 0;
    double bw_Bps = 0;
};
/// Least-squares line through (@p sizes[i] bytes, @p seconds[i]), i < @p count; the
/// intercept is kept positive (at least the smaller of 100 ns and the fastest time), as no
/// call is free. Not ok for fewer than two points or a slope that is not positive.
CmaLine fit_cma_line(const double* sizes, const double* seconds, size_t count);
CmaFigures measure_cma(const CpuPair& cpus);

/// Send-side claim and publish of one cell, in a tight loop on cached memory: with a private
/// ring (plain head increment, header stores, release store of the sequence: PIO) and with a
/// shared FIFO (the same after an uncontended compare-and-swap on the head: bcopy). Seconds
/// per message; a lower bound, as am_send's call path is not included.
struct ClaimFigures {
    Measured pio_s;
    Measured bcopy_s;
};
ClaimFigures measure_claim_overheads();

/// Verbs lane figures, for the first usable RDMA port (each the best of three runs): one-way latency (less the overhead)
/// and sender overhead of 8 B sends, eager SEND bandwidth (the wire's part of a 1 MiB
/// eager_bcopy stream, given @p memcpy_bw_Bps), RDMA bandwidth (1 and 4 MiB GET streams), and
/// registration costs (miss, and a validated cache hit where the cache can run). Runs
/// swy-perf, which must sit beside swy-info.
struct VerbsFigures {
    Measured latency_s, overhead_s, bw_Bps, rdma_bw_Bps;
    Measured reg_s, reg_Bps, hit_s, hit_Bps;
};
VerbsFigures measure_verbs(const common::Config& config, double memcpy_bw_Bps);

/// tcp lane figures over loopback (each the best of three swy-perf runs, --tls tcp,self):
/// one-way latency of 8 B messages less the overhead (from the median round trip: a loaded
/// host's scheduler makes the mean meaningless), the per-message overhead (1 / the 8 B message
/// rate, at most half the one-way time: their sum is what the ping-pong measured), and the bandwidth of a 1 MiB eager_bcopy stream less the parts the model counts
/// apart (the unexpected share of a copy at @p memcpy_bw_Bps, a message per fragment).
struct TcpFigures {
    Measured latency_s, overhead_s, bw_Bps;
};
TcpFigures measure_tcp(double memcpy_bw_Bps);

/// One CSV row of swy-perf: test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,protocol,
/// latency_median_us.
struct PerfRow {
    double latency_us = 0;
    double bandwidth_MBps = 0;
    double rate_Mps = 0;
    std::string protocol;
    double latency_median_us = 0;  ///< lat only: half the median round trip (0: not given)
};

/// Run swy-perf (beside this executable) @p rounds times over @p tls with environment @p env
/// ("A=x B=y") and arguments @p args, ignoring any calibration file; @p best gets the lowest
/// latencies and the highest bandwidth and rate seen. False (with @p why) if no run worked.
bool best_perf_run(const std::string& tls, int rounds, const std::string& env,
                   const std::string& args, PerfRow* best, std::string* why);

}  // namespace swy::info
