// Runs of swy-perf (installed beside swy-info) for the lane figures that only the real data
// path can give (tcp, verbs): two processes, the protocol forced, the CSV read back.
#include <linux/limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "measure.h"

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

/// Run swy-perf over @p tls with @p env and @p args; the row for the first size, or false.
bool run_perf(const std::string& tls, const std::string& env, const std::string& args, PerfRow* row,
              std::string* why) {
    // The built-in figures decide nothing here (every run forces its protocol), but a stale
    // calibration file must not be read either.
    const std::string cmd = "env SWY_CALIBRATION_FILE=/dev/null " + env + " '" + perf_path() +
                            "' --tls " + tls + " --csv " + args + " 2>&1";
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
        for (std::string x; std::getline(ss, x, ',');)
            f.push_back(x);
        if (f.size() >= 7 && (f[0] == "lat" || f[0] == "bw" || f[0] == "mr") && !found) {
            row->latency_us = std::atof(f[3].c_str());
            row->bandwidth_MBps = std::atof(f[4].c_str());
            row->rate_Mps = std::atof(f[5].c_str());
            row->protocol = f[6].substr(0, f[6].find_first_of("\r\n"));
            row->latency_median_us = f.size() >= 8 ? std::atof(f[7].c_str()) : 0;
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

}  // namespace

bool best_perf_run(const std::string& tls, int rounds, const std::string& env,
                   const std::string& args, PerfRow* best, std::string* why) {
    bool any = false;
    for (int i = 0; i < rounds; ++i) {
        PerfRow row;
        if (!run_perf(tls, env, args, &row, why)) continue;
        if (!any) {
            *best = row;
        } else {
            best->latency_us = std::min(best->latency_us, row.latency_us);
            best->latency_median_us = std::min(best->latency_median_us, row.latency_median_us);
            best->bandwidth_MBps = std::max(best->bandwidth_MBps, row.bandwidth_MBps);
            best->rate_Mps = std::max(best->rate_Mps, row.rate_Mps);
        }
        any = true;
    }
    return any;
}

}  // namespace swy::info
