// Verbs lane figures for --calibrate. The data-path figures come from the real data path:
// swy-perf (installed beside swy-info) runs two processes over the first usable RDMA port with
// the protocol forced, and its CSV is read back. Registration is measured in-process by the
// transport (tl::verbs::measure_registration).
#include <linux/limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "measure.h"
#include "sections.h"
#include "introspect/introspect.h"

namespace swy::info {
namespace {

/// swy-perf beside this executable.
std::string perf_path() {
    char self[PATH_MAX] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return "swy-perf";
    std::string dir(self, static_cast<size_t>(n));
    return dir.substr(0, dir.rfind('/') + 1) + "swy-perf";
}

/// One CSV row of swy-perf: test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,protocol.
struct PerfRow {
    double latency_us = 0;
    double bandwidth_MBps = 0;
    double rate_Mps = 0;
    std::string protocol;
};

/// Run swy-perf over verbs with @p env and @p args; the row for the first size, or !ok.
bool run_perf(const std::string& env, const std::string& args, PerfRow* row, std::string* why) {
    // The built-in figures decide nothing here (every run forces its protocol), but a stale
    // calibration file must not be read either.
    const std::string cmd = "env SWY_CALIBRATION_FILE=/dev/null " + env + " '" +
                            perf_path() + "' --tls verbs,self --csv " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) {
        *why = "cannot run swy-perf";
        return false;
    }
    std::string last_error;
    bool found = false;
    char line[512];
    while (std::fgets(line, sizeof(line), p) != nullptr) {
        std::string s(line);
        std::vector<std::string> f;
        std::stringstream ss(s);
        for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
        if (f.size() >= 7 && (f[0] == "lat" || f[0] == "bw" || f[0] == "mr") && !found) {
            row->latency_us = std::atof(f[3].c_str());
            row->bandwidth_MBps = std::atof(f[4].c_str());
            row->rate_Mps = std::atof(f[5].c_str());
            row->protocol = f[6].substr(0, f[6].find_first_of("\r\n"));
            found = true;
        } else if (!s.empty()) {
            last_error = s.substr(0, s.find('\n'));
        }
    }
    const int rc = pclose(p);
    if (!found || rc != 0) {
        *why = "swy-perf " + args + " failed" + (last_error.empty() ? "" : ": " + last_error);
        return false;
    }
    return true;
}

/// Best of @p rounds runs (TCG guests and busy hosts make single runs scatter by factors):
/// the lowest latency, the highest bandwidth and message rate seen.
bool best_of(int rounds, const std::string& env, const std::string& args, PerfRow* best,
             std::string* why) {
    bool any = false;
    for (int i = 0; i < rounds; ++i) {
        PerfRow row;
        if (!run_perf(env, args, &row, why)) continue;
        if (!any) {
            *best = row;
        } else {
            best->latency_us = std::min(best->latency_us, row.latency_us);
            best->bandwidth_MBps = std::max(best->bandwidth_MBps, row.bandwidth_MBps);
            best->rate_Mps = std::max(best->rate_Mps, row.rate_Mps);
        }
        any = true;
    }
    return any;
}

constexpr int kRounds = 3;

}  // namespace

VerbsFigures measure_verbs(const common::Config& config, double memcpy_bw_Bps) {
    VerbsFigures v;
    std::string why;
    PerfRow lat, rate, eager, rdma;
    // Latency and message rate of 8 B inline sends, then eager and RDMA bandwidth.
    const bool have_lat =
        best_of(kRounds, "", "--test lat --sizes 8 --iters 1000 --warmup 100", &lat, &why);
    if (!have_lat) v.latency_s = Measured::failed(why);
    const bool have_rate =
        best_of(kRounds, "", "--test mr --sizes 8 --iters 200 --warmup 20", &rate, &why) &&
        rate.rate_Mps > 0;
    const double overhead = have_rate ? 1e-6 / rate.rate_Mps : 0;
    v.overhead_s = have_rate ? Measured::of(overhead) : Measured::failed(why);
    if (have_lat) {
        // The model's eager_short costs latency + overhead: the one-way time less the
        // sender's part (never below a tenth of it).
        const double one_way = lat.latency_us * 1e-6;
        v.latency_s = Measured::of(std::max(one_way - overhead, 0.1 * one_way));
    }
    // At 1 MiB, like the RDMA stream below: the two are compared where eager and rendezvous
    // cross, and a small eager stream (cache-resident, fewer fragments in flight) flatters it.
    if (best_of(kRounds, "SWY_PROTO=eager_short,eager_bcopy",
                "--test bw --sizes 1M --iters 8 --warmup 1 --window 8", &eager, &why) &&
        eager.bandwidth_MBps > 0) {
        // eager_bcopy per byte = wire + copy in + copy out + the unexpected share (0.25 copy)
        // + a message overhead per 8 KiB fragment: keep the wire's part of what was seen.
        const double seen = 1.0 / (eager.bandwidth_MBps * 1e6);
        const double wire = seen - 2.25 / memcpy_bw_Bps - overhead / 8192.0;
        v.bw_Bps = Measured::of(1.0 / std::max(wire, 0.5 * seen));
    } else {
        v.bw_Bps = Measured::failed(why);
    }
    // Two sizes, three runs each, the best seen: single runs of a software device in a
    // guest scatter by 3x, and a low figure here would wrongly keep zero-copy out.
    PerfRow rdma4;
    const bool have_1m = best_of(kRounds, "SWY_RNDV_SCHEME=get SWY_RNDV_THRESH=1K",
                                 "--test bw --sizes 1M --iters 8 --warmup 1 --window 8", &rdma,
                                 &why);
    const bool have_4m = best_of(kRounds, "SWY_RNDV_SCHEME=get SWY_RNDV_THRESH=1K",
                                 "--test bw --sizes 4M --iters 4 --warmup 1 --window 4", &rdma4,
                                 &why);
    const double rdma_MBps = std::max(have_1m ? rdma.bandwidth_MBps : 0,
                                      have_4m ? rdma4.bandwidth_MBps : 0);
    if (rdma_MBps > 0) {
        v.rdma_bw_Bps = Measured::of(rdma_MBps * 1e6);
    } else {
        v.rdma_bw_Bps = Measured::failed(why);
    }
    tl::verbs::RegistrationFigures reg;
    if (tl::verbs::measure_registration(verbs_config_from(config), &reg, &why) == Status::kOk) {
        v.reg_s = Measured::of(reg.reg_s);
        v.reg_Bps = Measured::of(reg.reg_Bps);
        v.hit_s = reg.hit_measured ? Measured::of(reg.hit_s) : Measured::failed(reg.hit_why);
        v.hit_Bps = reg.hit_measured ? Measured::of(reg.hit_Bps) : Measured::failed(reg.hit_why);
    } else {
        v.reg_s = v.reg_Bps = v.hit_s = v.hit_Bps = Measured::failed(why);
    }
    return v;
}

}  // namespace swy::info
