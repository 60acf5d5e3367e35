// "--calibrate": measure this host, write the calibration file, show what it changes.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "args.h"
#include "calibrate_guard.h"
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

/// One round of measurements: the figures (built-in where not measured) and which were.
struct Round {
    common::CostFigures figures;
    std::set<std::string> measured;
};

/// Finish a step's line: set the figure @p key (declared in cost_figure_table(), whose unit
/// shows it) in @p r when measured, else keep the built-in value and say why.
void end_step(const Measured& m, std::string_view key, Round* r) {
    common::CostFigures* f = &r->figures;
    const common::CostFigureVar* figure = common::find_cost_figure(key);
    const double scale = common::figure_unit_scale(figure->unit);
    const char* unit = common::figure_unit_name(figure->unit);
    if (m.ok) {
        f->set(key, m.value);
        r->measured.emplace(key);
        std::printf("%.3f %s\n", m.value * scale, unit);
    } else {
        std::printf("kept built-in %.3f %s (%s)\n", f->get(key) * scale, unit, m.why.c_str());
    }
    std::fflush(stdout);
}

/// Load average and usable CPUs of this process, for busy_reason().
std::string host_busy_reason() {
    std::ifstream in("/proc/loadavg");
    double load = 0;
    if (!(in >> load)) return "";
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return busy_reason(load, cpus);
}

/// Per figure, the better of two rounds (the higher rate, the shorter time): the worse one
/// was disturbed by something else; a figure measured in one round only keeps that value.
common::CostFigures best_of(const Round& a, const Round& b) {
    common::CostFigures best = a.figures;
    for (const std::string& key : b.measured) {
        const double vb = b.figures.get(key);
        if (!a.measured.contains(key)) {
            best.set(key, vb);
            continue;
        }
        const double va = a.figures.get(key);
        const bool rate = common::find_cost_figure(key)->unit == common::FigureUnit::kGBps;
        best.set(key, rate ? std::max(va, vb) : std::min(va, vb));
    }
    return best;
}

/// The figures both rounds measured, for scattered_figures().
std::vector<FigurePair> pairs_of(const Round& a, const Round& b) {
    std::vector<FigurePair> pairs;
    for (const std::string& key : a.measured) {
        if (b.measured.contains(key))
            pairs.push_back({key, a.figures.get(key), b.figures.get(key)});
    }
    return pairs;
}

/// The verbs steps, when an RDMA port is usable (else the built-in verbs figures stay).
void measure_verbs_lane(const common::Config& config, const std::string& verbs, Round* r) {
    if (verbs.rfind("yes", 0) != 0) {
        std::printf("  verbs: not measured (%s)\n", verbs.c_str());
        return;
    }
    std::printf("  verbs (%s; swy-perf, two processes, protocols forced):\n", verbs.c_str() + 5);
    begin_step("verbs: 8 B latency, 8 B message rate, bandwidth");
    std::fflush(stdout);
    const VerbsFigures v = measure_verbs(config, r->figures.get("memcpy_bw_Bps"));
    std::printf("done\n");
    begin_step("verbs one-way latency (less overhead)");
    end_step(v.latency_s, "verbs_latency_s", r);
    begin_step("verbs send overhead (1 / 8 B message rate)");
    end_step(v.overhead_s, "verbs_overhead_s", r);
    begin_step("verbs eager bandwidth (1 MiB eager_bcopy)");
    end_step(v.bw_Bps, "verbs_bw_Bps", r);
    begin_step("verbs RDMA bandwidth (1 and 4 MiB GET)");
    end_step(v.rdma_bw_Bps, "verbs_rdma_bw_Bps", r);
    begin_step("verbs registration, fixed (4 KiB .. 16 MiB)");
    end_step(v.reg_s, "verbs_reg_s", r);
    begin_step("verbs registration rate (page pinning)");
    end_step(v.reg_Bps, "verbs_reg_Bps", r);
    begin_step("verbs registration-cache hit, fixed");
    end_step(v.hit_s, "verbs_reg_hit_s", r);
    begin_step("verbs registration-cache hit rate (page check)");
    end_step(v.hit_Bps, "verbs_reg_hit_Bps", r);
}

/// The tcp steps, over loopback (tcp is always built; a worker that cannot open it says why).
void measure_tcp_lane(Round* r) {
    std::printf("  tcp (loopback; swy-perf, two processes, protocols forced):\n");
    begin_step("tcp: 8 B latency, 8 B message rate, bandwidth");
    const TcpFigures t = measure_tcp(r->figures.get("memcpy_bw_Bps"));
    std::printf("done\n");
    begin_step("tcp one-way latency (less overhead)");
    end_step(t.latency_s, "tcp_latency_s", r);
    begin_step("tcp per-message overhead (1 / 8 B message rate)");
    end_step(t.overhead_s, "tcp_overhead_s", r);
    begin_step("tcp eager bandwidth (1 MiB eager_bcopy)");
    end_step(t.bw_Bps, "tcp_bw_Bps", r);
}

/// Run every measurement; @p f starts as the built-in figures and receives the measured ones.
void measure_all(const common::Config& config, const std::string& verbs, Round* r) {
    const CpuPair cpus = pick_cpus();
    if (cpus.peer >= 0) {
        std::printf("Calibrating: two-process tests pin the processes to CPUs %d and %d.\n",
                    cpus.self, cpus.peer);
    } else {
        std::printf(
            "Calibrating: only one CPU is available, so the two-process copy and "
            "latency tests are skipped.\n");
    }
    begin_step("memcpy, 64 MiB, one thread, best of 8");
    end_step(measure_memcpy_bw(), "memcpy_bw_Bps", r);
    begin_step("shm copy, 4 KiB cells, 2 processes, 64 MiB");
    end_step(measure_shm_copy_bw(cpus), "shm_copy_bw_Bps", r);
    begin_step("fifo latency, cache-line ping-pong / 2");
    end_step(measure_fifo_latency(cpus), "fifo_latency_s", r);

    // As a GET reads: 16 KiB .. 512 KiB per call from another process's own send buffer;
    // the call's fixed cost and the bandwidth are one line through those times.
    begin_step("cma call (16-512 KiB reads, fixed part)");
    const CmaFigures cma = measure_cma(cpus);
    end_step(cma.call_s, "cma_call_s", r);
    begin_step("cma bandwidth (16-512 KiB reads, per byte)");
    end_step(cma.bw_Bps, "cma_bw_Bps", r);

    begin_step("PIO send: claim + publish a private cell");
    ClaimFigures claim = measure_claim_overheads();
    end_step(claim.pio_s, "pio_overhead_s", r);
    begin_step("bcopy send: CAS-claim + publish a FIFO cell");
    end_step(claim.bcopy_s, "bcopy_overhead_s", r);
    begin_step("cell overhead (receive-side dispatch)");
    end_step(Measured::failed("not measured: needs the real receive path"), "cell_overhead_s", r);
    measure_tcp_lane(r);
    measure_verbs_lane(config, verbs, r);
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
    const bool force = args.has("--force");
    // Checked before measuring: figures taken on a busy host describe the other work.
    if (const std::string busy = host_busy_reason(); !busy.empty()) {
        if (!force) {
            std::fprintf(stderr,
                         "swy-info: not calibrating: the host is busy (%s), so the figures "
                         "would describe the other work, not this host. Rerun when it is "
                         "idle, or pass --force to measure and write them anyway.\n",
                         busy.c_str());
            return 1;
        }
        std::printf("Warning: the host is busy (%s); measuring anyway (--force).\n", busy.c_str());
    }
    const double t0 = now_s();
    // Probed once: opening every device again for the tables below would repeat the I/O.
    const std::string verbs = verbs_availability(config);
    // Two rounds, built-in values where a step cannot measure: their scatter tells whether
    // the host was quiet enough, and the better of the two is what gets written.
    Round rounds[2];
    for (int i = 0; i < 2; ++i) {
        std::printf("%sRound %d of 2:\n", i == 0 ? "" : "\n", i + 1);
        measure_all(config, verbs, &rounds[i]);
    }
    if (const auto scattered = scattered_figures(pairs_of(rounds[0], rounds[1]));
        !scattered.empty()) {
        std::FILE* out = force ? stdout : stderr;
        std::fprintf(out,
                     "\n%s: %zu figure(s) differ by more than %.0fx between the rounds "
                     "(something else is using the CPUs or memory):\n",
                     force ? "Warning" : "swy-info", scattered.size(), kMaxScatter);
        for (const std::string& line : scattered)
            std::fprintf(out, "  %s\n", line.c_str());
        if (!force) {
            std::fprintf(stderr,
                         "swy-info: not writing %s. Rerun when the host is idle, or pass "
                         "--force to write the better of the two rounds anyway.\n",
                         path.c_str());
            return 1;
        }
    }
    const common::CostFigures figures = best_of(rounds[0], rounds[1]);
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
