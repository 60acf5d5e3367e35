// Verbs lane figures for --calibrate. The data-path figures come from the real data path:
// swy-perf (installed beside swy-info) runs two processes over the first usable RDMA port with
// the protocol forced, and its CSV is read back (measure_perf.cpp). Registration is measured
// in-process by the transport (tl::verbs::measure_registration).
#include <algorithm>
#include <string>

#include "introspect/introspect.h"
#include "measure.h"
#include "sections.h"

namespace swy::info {
namespace {

constexpr int kRounds = 3;

/// swy-perf over verbs (and self, which every worker has).
bool best_of(int rounds, const std::string& env, const std::string& args, PerfRow* best,
             std::string* why) {
    return best_perf_run("verbs,self", rounds, env, args, best, why);
}

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
    const bool have_1m =
        best_of(kRounds, "SWY_RNDV_SCHEME=get SWY_RNDV_THRESH=1K",
                "--test bw --sizes 1M --iters 8 --warmup 1 --window 8", &rdma, &why);
    const bool have_4m =
        best_of(kRounds, "SWY_RNDV_SCHEME=get SWY_RNDV_THRESH=1K",
                "--test bw --sizes 4M --iters 4 --warmup 1 --window 4", &rdma4, &why);
    const double rdma_MBps =
        std::max(have_1m ? rdma.bandwidth_MBps : 0, have_4m ? rdma4.bandwidth_MBps : 0);
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
