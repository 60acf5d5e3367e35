#include "protocols/cost_figures.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace swy::proto {
namespace {

struct Field {
    const char* key;
    double CostFigures::*member;
};
constexpr Field kFields[] = {
    {"memcpy_bw_Bps", &CostFigures::memcpy_bw_Bps},
    {"shm_copy_bw_Bps", &CostFigures::shm_copy_bw_Bps},
    {"cma_bw_Bps", &CostFigures::cma_bw_Bps},
    {"cma_call_s", &CostFigures::cma_call_s},
    {"fifo_latency_s", &CostFigures::fifo_latency_s},
    {"cell_overhead_s", &CostFigures::cell_overhead_s},
    {"pio_overhead_s", &CostFigures::pio_overhead_s},
    {"bcopy_overhead_s", &CostFigures::bcopy_overhead_s},
    {"verbs_latency_s", &CostFigures::verbs_latency_s},
    {"verbs_overhead_s", &CostFigures::verbs_overhead_s},
    {"verbs_bw_Bps", &CostFigures::verbs_bw_Bps},
    {"verbs_rdma_overhead_s", &CostFigures::verbs_rdma_overhead_s},
    {"verbs_rdma_bw_Bps", &CostFigures::verbs_rdma_bw_Bps},
    {"verbs_reg_s", &CostFigures::verbs_reg_s},
    {"verbs_reg_Bps", &CostFigures::verbs_reg_Bps},
    {"verbs_reg_hit_s", &CostFigures::verbs_reg_hit_s},
    {"verbs_reg_hit_Bps", &CostFigures::verbs_reg_hit_Bps},
};

}  // namespace

std::string CostFigures::default_path() {
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr ? home : "/tmp") + "/.cache/switchyard/calibration.conf";
}

Status CostFigures::load(const std::string& path, CostFigures* out, std::string* why) {
    std::ifstream in(path);
    if (!in) return Status::kNotFound;
    CostFigures f;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        size_t hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        size_t eq = line.find('=');
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        if (eq == std::string::npos) {
            *why = path + ":" + std::to_string(number) + ": expected key = value";
            return Status::kMalformed;
        }
        std::istringstream k(line.substr(0, eq));
        std::string key;
        k >> key;
        const std::string value = line.substr(eq + 1);
        char* end = nullptr;
        double v = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || !(v > 0) || v > 1e15) {
            *why = path + ":" + std::to_string(number) + ": '" + key + "' needs a positive number";
            return Status::kMalformed;
        }
        for (const Field& field : kFields) {
            if (key == field.key) f.*(field.member) = v;
        }
    }
    f.from_file = true;
    f.source = path;
    *out = f;
    return Status::kOk;
}

Status CostFigures::save(const std::string& path, std::string* why) const {
    std::ofstream out(path);
    if (!out) {
        *why = "cannot write " + path + ": " + std::strerror(errno);
        return Status::kIoError;
    }
    out << "# Switchyard cost figures, measured by swy-info --calibrate\n";
    for (const Field& field : kFields) {
        char line[128];
        std::snprintf(line, sizeof(line), "%s = %.6g\n", field.key, this->*(field.member));
        out << line;
    }
    return out ? Status::kOk : Status::kIoError;
}

}  // namespace swy::proto
