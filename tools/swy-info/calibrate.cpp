// "--calibrate": measure this host, write the calibration file, show what it changes.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "args.h"
#include "introspect/introspect.h"
#include "measure.h"
#include "proto_tables.h"
#include "sections.h"

namespace swy::info {
namespace {

/// Print the label of a step before it runs, so a slow step shows where it is.
void begin_step(const char* label) {
    std::printf("  %-48s ", label);
    std::fflush(stdout);
}

/// Finish a step's line: set the figure @p key (declared in cost_figure_table(), whose unit
/// shows it) in @p f when measured, else keep the built-in value and say why.
void end_step(const Measured& m, std::string_view key, common::CostFigures* f) {
    const common::CostFigureVar* figure = common::find_cost_figure(key);
    const double scale = common::figure_unit_scale(figure->unit);
    const char* unit = common::figure_unit_name(figure->unit);
    if (m.ok) {
        f->set(key, m.value);
        std::printf("%.3f %s\n", m.value * scale, unit);
    } else {
        std::printf("kept built-in %.3f %s (%s)\n", f->get(key) * scale, unit, m.why.c_str());
    }
    std::fflush(stdout);
}

/// Warn when other work keeps the CPUs busy: the two-process tests then measure the
/// scheduler more than the memory system, and their figures come out pessimistic.
void warn_if_busy() {
    std::ifstream in("/proc/loadavg");
    double load = 0;
    if (!(in >> load)) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    if (load > 0.5 * cpus) {
        std::printf(
            "Warning: the host is busy (load average %.1f on %d CPUs); copy and latency "
            "figures may come out pessimistic. Rerun when it is idle.\n",
            load, cpus);
    }
}

/// The verbs steps, when an RDMA port is usable (else the built-in verbs figures stay).
void measure_verbs_lane(const common::Config& config, const std::string& verbs,
                        common::CostFigures* f) {
    if (verbs.rfind("yes", 0) != 0) {
        std::printf("  verbs: not measured (%s)\n", verbs.c_str());
        return;
    }
    std::printf("  verbs (%s; swy-perf, two processes, protocols forced):\n", verbs.c_str() + 5);
    begin_step("verbs: 8 B latency, 8 B message rate, bandwidth");
    std::fflush(stdout);
    const VerbsFigures v = measure_verbs(config, f->get("memcpy_bw_Bps"));
    std::printf("done\n");
    begin_step("verbs one-way latency (less overhead)");
    end_step(v.latency_s, "verbs_latency_s", f);
    begin_step("verbs send overhead (1 / 8 B message rate)");
    end_step(v.overhead_s, "verbs_overhead_s", f);
    begin_step("verbs eager bandwidth (1 MiB eager_bcopy)");
    end_step(v.bw_Bps, "verbs_bw_Bps", f);
    begin_step("verbs RDMA bandwidth (1 and 4 MiB GET)");
    end_step(v.rdma_bw_Bps, "verbs_rdma_bw_Bps", f);
    begin_step("verbs registration, fixed (4 KiB .. 16 MiB)");
    end_step(v.reg_s, "verbs_reg_s", f);
    begin_step("verbs registration rate (page pinning)");
    end_step(v.reg_Bps, "verbs_reg_Bps", f);
    begin_step("verbs registration-cache hit, fixed");
    end_step(v.hit_s, "verbs_reg_hit_s", f);
    begin_step("verbs registration-cache hit rate (page check)");
    end_step(v.hit_Bps, "verbs_reg_hit_Bps", f);
}

/// The tcp steps, over loopback (tcp is always built; a worker that cannot open it says why).
void measure_tcp_lane(common::CostFigures* f) {
    std::printf("  tcp (loopback; swy-perf, two processes, protocols forced):\n");
    begin_step("tcp: 8 B latency, 8 B message rate, bandwidth");
    const TcpFigures t = measure_tcp(f->get("memcpy_bw_Bps"));
    std::printf("done\n");
    begin_step("tcp one-way latency (less overhead)");
    end_step(t.latency_s, "tcp_latency_s", f);
    begin_step("tcp per-message overhead (1 / 8 B message rate)");
    end_step(t.overhead_s, "tcp_overhead_s", f);
    begin_step("tcp eager bandwidth (1 MiB eager_bcopy)");
    end_step(t.bw_Bps, "tcp_bw_Bps", f);
}

/// Run every measurement; @p f starts as the built-in figures and receives the measured ones.
void measure_all(const common::Config& config, const std::string& verbs, common::CostFigures* f) {
    const CpuPair cpus = pick_cpus();
    if (cpus.peer >= 0) {
        std::printf("Calibrating: two-process tests pin the processes to CPUs %d and %d.\n",
                    cpus.self, cpus.peer);
    } else {
        std::printf(
            "Calibrating: only one CPU is available, so the two-process copy and "
            "latency tests are skipped.\n");
    }
    warn_if_busy();
    begin_step("memcpy, 64 MiB, one thread, best of 8");
    end_step(measure_memcpy_bw(), "memcpy_bw_Bps", f);
    begin_step("shm copy, 4 KiB cells, 2 processes, 64 MiB");
    end_step(measure_shm_copy_bw(cpus), "shm_copy_bw_Bps", f);
    begin_step("fifo latency, cache-line ping-pong / 2");
    end_step(measure_fifo_latency(cpus), "fifo_latency_s", f);

    begin_step("cma call, 8 B process_vm_readv");
    CmaFigures cma = measure_cma(cpus);
    end_step(cma.call_s, "cma_call_s", f);
    // The selector uses CMA bandwidth where eager and rendezvous cross (kilobytes to a few
    // MiB, in cache): the 4 MiB figure is the one recorded; 64 MiB is shown for reference.
    begin_step("cma bandwidth, 4 MiB reads");
    end_step(cma.bw_4m_Bps, "cma_bw_Bps", f);
    begin_step("cma bandwidth, 64 MiB reads (not recorded)");
    common::CostFigures unrecorded = *f;  // shown, then dropped
    end_step(cma.bw_64m_Bps, "cma_bw_Bps", &unrecorded);

    begin_step("PIO send: claim + publish a private cell");
    ClaimFigures claim = measure_claim_overheads();
    end_step(claim.pio_s, "pio_overhead_s", f);
    begin_step("bcopy send: CAS-claim + publish a FIFO cell");
    end_step(claim.bcopy_s, "bcopy_overhead_s", f);
    begin_step("cell overhead (receive-side dispatch)");
    end_step(Measured::failed("not measured: needs the real receive path"), "cell_overhead_s", f);
    measure_tcp_lane(f);
    measure_verbs_lane(config, verbs, f);
}

/// Where to write: --output, else SWY_CALIBRATION_FILE, else the default path ("" when HOME
/// is unset or relative: there is no default file then).
std::string output_path(const Args& args, const common::Config& config) {
    if (const std::string* out = args.get("--output")) return *out;
    std::string path = config.get_string("CALIBRATION_FILE");
    return path.empty() ? common::CostFigures::default_path() : path;
}

}  // namespace

int run_calibrate(const Args& args) {
    common::Config config;
    std::string error;
    if (common::Config::from_environment(&config, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: bad configuration: %s\n", error.c_str());
        return 1;
    }
    const std::string path = output_path(args, config);
    const std::string loaded_by_default = output_path(Args{}, config);
    if (path.empty()) {  // checked before measuring: nowhere to put the result
        std::fprintf(stderr,
                     "swy-info: no calibration file path: HOME is unset or not absolute, "
                     "so there is no default file; pass --output PATH and set "
                     "SWY_CALIBRATION_FILE=PATH for the library\n");
        return 1;
    }
    const double t0 = now_s();
    common::CostFigures figures;  // built-in values: what is not measured stays as it is
    // Probed once: opening every device again for the tables below would repeat the I/O.
    const std::string verbs = verbs_availability(config);
    measure_all(config, verbs, &figures);
    if (figures.save(path, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: %s\n",
                     error.empty() ? ("cannot write " + path).c_str() : error.c_str());
        return 1;
    }
    std::printf("\nWrote %s (measured in %.1f s)\n", path.c_str(), now_s() - t0);

    // Read the file back through a context, exactly as the library will.
    config.set("CALIBRATION_FILE", path);
    core::Context* context = nullptr;
    if (core::Context::create(config, &context, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: cannot create a context with %s: %s\n", path.c_str(),
                     error.c_str());
        return 1;
    }
    if (!context->costs().from_file) {  // the warning logged above says why
        std::fprintf(stderr, "swy-info: the library does not accept %s\n", path.c_str());
        delete context;
        return 1;
    }
    std::printf("Cost figures read back from %s\n", context->costs().source.c_str());
    print_cost_figures(context->costs());
    int rc = print_lane_tables(*context, "shm");
    rc = std::max(rc, print_lane_tables(*context, "tcp"));
    if (verbs.rfind("yes", 0) == 0) {
        rc = std::max(rc, print_lane_tables(*context, "verbs"));
    }
    delete context;
    if (loaded_by_default.empty()) {
        std::printf(
            "\nNote: HOME is unset or not absolute, so the library reads no calibration "
            "file by default; set SWY_CALIBRATION_FILE=%s to use these figures.\n",
            path.c_str());
    } else if (path != loaded_by_default) {
        std::printf(
            "\nNote: the library reads %s by default; set SWY_CALIBRATION_FILE=%s to "
            "use these figures.\n",
            loaded_by_default.c_str(), path.c_str());
    }
    return rc;
}

}  // namespace swy::info
