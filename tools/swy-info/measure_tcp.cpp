// tcp lane figures for --calibrate, over loopback: swy-perf runs two processes over tcp (and
// self, which every worker has) with the protocol forced, and its CSV is read back. A real
// network's latency is longer than loopback's; these figures are what this host's own stack
// costs, which is what a tcp lane inside one machine (containers, no shm) pays.
#include <algorithm>
#include <string>

#include "introspect/introspect.h"
#include "measure.h"

namespace swy::info {
namespace {

constexpr int kRounds = 3;

bool best_of(const std::string& env, const std::string& args, PerfRow* best, std::string* why) {
    return best_perf_run("tcp,self", kRounds, env, args, best, why);
}

}  // namespace

TcpFigures measure_tcp(double memcpy_bw_Bps) {
    TcpFigures t;
    std::string why;
    PerfRow lat, rate, eager;
    const bool have_lat = best_of("", "--test lat --sizes 8 --iters 2000 --warmup 200", &lat, &why);
    if (!have_lat) t.latency_s = Measured::failed(why);
    const bool have_rate =
        best_of("", "--test mr --sizes 8 --iters 200 --warmup 20", &rate, &why) &&
        rate.rate_Mps > 0;
    if (!have_rate) t.overhead_s = Measured::failed(why);
    double overhead = have_rate ? 1e-6 / rate.rate_Mps : 0;
    if (have_lat) {
        // The model's message costs latency + overhead, which the ping-pong measures whole:
        // the one-way time. The median: a busy host's scheduler adds hundreds of
        // microseconds to a few round trips, which the mean would carry. A message rate that
        // implies more CPU per message than half a one-way trip measured the scheduler too
        // (both processes share CPUs with other work): the overhead is capped there, so
        // latency + overhead stays what the ping-pong saw.
        const double one_way =
            (lat.latency_median_us > 0 ? lat.latency_median_us : lat.latency_us) * 1e-6;
        if (have_rate) overhead = std::min(overhead, 0.5 * one_way);
        t.latency_s = Measured::of(one_way - overhead);
    }
    if (have_rate) t.overhead_s = Measured::of(overhead);
    // At 1 MiB, where eager and rendezvous cross on tcp.
    if (best_of("SWY_PROTO=eager_short,eager_bcopy",
                "--test bw --sizes 1M --iters 8 --warmup 1 --window 8", &eager, &why) &&
        eager.bandwidth_MBps > 0) {
        // eager_bcopy per byte = 1 / tcp_bw + the unexpected share (0.25 copy) + a message
        // overhead per fragment: keep what is left for the socket path.
        const double seen = 1.0 / (eager.bandwidth_MBps * 1e6);
        const double fragment = static_cast<double>(tl::tcp::kMaxFrameBody);
        const double wire = seen - 0.25 / memcpy_bw_Bps - overhead / fragment;
        t.bw_Bps = Measured::of(1.0 / std::max(wire, 0.5 * seen));
    } else {
        t.bw_Bps = Measured::failed(why);
    }
    return t;
}

}  // namespace swy::info
