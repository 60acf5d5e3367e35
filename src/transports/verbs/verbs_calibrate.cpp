// Registration cost measurement for `swy-info --calibrate` (verbs_open.h). The figures feed
// the selector's GET/PUT choice, so they are taken the way rendezvous pays them: a buffer the
// application has written (pages present), registered for remote access and deregistered; and
// a validated registration-cache hit (lookup, pagemap read, frame compare) on such a buffer.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "transports/verbs/reg_cache.h"
#include "transports/verbs/verbs_device.h"
#include "transports/verbs/verbs_registrar.h"
#include "transports/zcopy.h"

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
        ibv_mr* mr =
            ibv_reg_mr(pd, p, bytes,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
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

/// Best of @p rounds validated hits on a touched buffer of @p bytes that @p cache registered
/// first; negative with @p why on failure.
double best_hit(RegCache* cache, size_t bytes, int rounds, std::string* why) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        *why = std::string("mmap: ") + std::strerror(errno);
        return -1;
    }
    std::memset(p, 0x5a, bytes);
    const unsigned access = kZcopyRemoteRead | kZcopyRemoteWrite;
    double best = -1;
    RegCache::Handle h;
    if (cache->acquire(p, bytes, access, &h, why) != Status::kOk || !h.cached()) {
        if (why->empty()) *why = "the registration cache did not keep the buffer";
    } else {
        h.reset();
        for (int i = 0; i < rounds; ++i) {
            const double t0 = now_s();
            cache->acquire(p, bytes, access, &h, why);
            h.reset();
            const double t = now_s() - t0;
            best = best < 0 ? t : std::min(best, t);
        }
    }
    cache->flush();
    munmap(p, bytes);
    return best;
}

}  // namespace

Status measure_registration(const VerbsConfig& config, RegistrationFigures* out, std::string* why) {
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
    if (small < 0 || large < 0) {
        ibv_dealloc_pd(pd);
        return Status::kIoError;
    }
    // Two points: the slope is the pinning rate, the rest is the fixed cost of the calls.
    auto fit = [](double t_small, double t_large, double* fixed_s, double* Bps) {
        const double per_byte =
            std::max(t_large - t_small, 1e-12) / static_cast<double>(kLarge - kSmall);
        *Bps = 1.0 / per_byte;
        *fixed_s = std::max(t_small - per_byte * static_cast<double>(kSmall), t_small * 0.5);
    };
    fit(small, large, &out->reg_s, &out->reg_Bps);
    out->hit_measured = false;
    std::unique_ptr<PageIdentity> identity = rcache_page_identity(config, &out->hit_why);
    if (identity == nullptr) {
        out->hit_why = "registration cache off: " + out->hit_why;
    } else {
        RegCache cache(RegCacheLimits{size_t{1} << 30, 16}, make_verbs_registrar(pd),
                       std::move(identity));
        std::string hit_why;
        const double hit_small = best_hit(&cache, kSmall, 15, &hit_why);
        const double hit_large = hit_small < 0 ? -1 : best_hit(&cache, kLarge, 5, &hit_why);
        if (hit_small < 0 || hit_large < 0) {
            out->hit_why = hit_why;
        } else {
            fit(hit_small, hit_large, &out->hit_s, &out->hit_Bps);
            out->hit_measured = true;
        }
    }  // the cache deregisters everything before the PD goes
    ibv_dealloc_pd(pd);
    return Status::kOk;
}

}  // namespace swy::tl::verbs
