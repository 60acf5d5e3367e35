// Registration cost measurement for `swy-info --calibrate` (verbs_open.h). The figures feed
// the selector's GET/PUT choice, so they are taken the way rendezvous pays them: a buffer the
// application has written (pages present), registered for remote access and deregistered.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "transports/verbs/verbs_device.h"

namespace swy::tl::verbs {
namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// Best of @p rounds register + deregister of a fresh, touched buffer of @p bytes; negative
/// with @p why on failure.
double best_registration(ibv_pd* pd, size_t bytes, int rounds, std::string* why) {
    double best = -1;
    for (int i = 0; i < rounds; ++i) {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            *why = std::string("mmap: ") + std::strerror(errno);
            return -1;
        }
        std::memset(p, 0x5a, bytes);
        const double t0 = now_s();
        ibv_mr* mr = ibv_reg_mr(pd, p, bytes,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                    IBV_ACCESS_REMOTE_WRITE);
        if (mr == nullptr) {
            *why = std::string("ibv_reg_mr: ") + std::strerror(errno);
            munmap(p, bytes);
            return -1;
        }
        ibv_dereg_mr(mr);
        const double t = now_s() - t0;
        munmap(p, bytes);
        best = best < 0 ? t : std::min(best, t);
    }
    return best;
}

}  // namespace

Status measure_registration(const VerbsConfig& config, RegistrationFigures* out,
                           std::string* why) {
    DeviceHandle dev;
    PortInfo port;
    Status s = open_device(config, &dev, &port, why);
    if (s != Status::kOk) return s;
    ibv_pd* pd = ibv_alloc_pd(dev.context);
    if (pd == nullptr) {
        *why = std::string("ibv_alloc_pd: ") + std::strerror(errno);
        return Status::kIoError;
    }
    constexpr size_t kSmall = 4096;
    constexpr size_t kLarge = size_t{16} << 20;
    const double small = best_registration(pd, kSmall, 7, why);
    const double large = small < 0 ? -1 : best_registration(pd, kLarge, 3, why);
    ibv_dealloc_pd(pd);
    if (small < 0 || large < 0) return Status::kIoError;
    // Two points: the slope is the pinning rate, the rest is the fixed cost of the calls.
    const double per_byte = std::max(large - small, 1e-12) / static_cast<double>(kLarge - kSmall);
    out->reg_Bps = 1.0 / per_byte;
    out->reg_s = std::max(small - per_byte * static_cast<double>(kSmall), small * 0.5);
    out->hit_measured = false;
    out->hit_why = "no registration cache in this build";
    return Status::kOk;
}

}  // namespace swy::tl::verbs
