// Cost of a registration (ibv_reg_mr + ibv_dereg_mr, what a transfer pays without the cache)
// against a validated cache hit (RegCache::acquire + release of a cached range: lookup,
// /proc/self/pagemap read, frame compare), by size, on the first RDMA device. Run inside the
// Soft-RoCE VM by test/verbs/run-vm.sh. Prints the medians and a fixed + per-byte model of
// each for the selector's cost model:
//   per-byte = least-squares slope over the sizes >= 1 MiB,
//   fixed    = median over the sizes < 1 MiB of (time - per-byte * size).
// Exit 77 when there is no device or page frames are not visible (no cache to measure).
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transports/verbs/rdma.h"
#include "transports/verbs/reg_cache.h"
#include "transports/verbs/verbs_registrar.h"

using swy::Status;
using namespace swy::tl::verbs;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Model {
    double fixed_s = 0;
    double per_byte_s = 0;
};

Model fit(const std::vector<size_t>& sizes, const std::vector<double>& t) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < (size_t{1} << 20)) continue;
        const double x = static_cast<double>(sizes[i]);
        sx += x, sy += t[i], sxx += x * x, sxy += x * t[i], n += 1;
    }
    Model m;
    m.per_byte_s = n >= 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
    std::vector<double> fixed;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < (size_t{1} << 20)) {
            fixed.push_back(t[i] - m.per_byte_s * static_cast<double>(sizes[i]));
        }
    }
    m.fixed_s = fixed.empty() ? 0 : median(fixed);
    return m;
}

}  // namespace

int main() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n == 0) {
        std::fprintf(stderr, "rcache_cost: no RDMA device\n");
        return 77;
    }
    ibv_context* ctx = ibv_open_device(list[0]);
    ibv_pd* pd = ctx != nullptr ? ibv_alloc_pd(ctx) : nullptr;
    if (pd == nullptr) {
        std::fprintf(stderr, "rcache_cost: cannot open %s\n", ibv_get_device_name(list[0]));
        return 1;
    }
    std::string why;
    std::unique_ptr<PageIdentity> identity = PagemapIdentity::open(&why);
    if (identity == nullptr) {
        std::fprintf(stderr, "rcache_cost: no registration cache here: %s\n", why.c_str());
        return 77;
    }
    RegCacheLimits limits;
    limits.max_bytes = size_t{1} << 30;
    {
        RegCache cache(limits, make_verbs_registrar(pd), std::move(identity));
        const unsigned access = swy::tl::kRdmaRemoteRead | swy::tl::kRdmaLocalWrite;
        const std::vector<size_t> sizes{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
        std::vector<double> reg_t, hit_t;
        std::printf("# %s: register+deregister vs validated cache hit (median)\n",
                    ibv_get_device_name(list[0]));
        std::printf("%12s %6s %12s %12s %12s %8s\n", "bytes", "reps", "reg+dereg_us",
                    "miss_us", "hit_us", "reg/hit");
        for (size_t size : sizes) {
            const int reps = size >= (16u << 20) ? 7 : 25;
            void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (p == MAP_FAILED) return 1;
            std::memset(p, 1, size);  // touched, as a send buffer would be
            std::vector<double> reg, hit;
            for (int r = 0; r < reps; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                ibv_mr* mr = ibv_reg_mr(pd, p, size,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
                if (mr == nullptr) {
                    std::perror("ibv_reg_mr");
                    return 1;
                }
                ibv_dereg_mr(mr);
                reg.push_back(seconds_since(t0));
            }
            // First acquire: a miss (registration + reading the frames).
            auto t0 = std::chrono::steady_clock::now();
            RegCache::Handle h;
            if (cache.acquire(p, size, access, &h, &why) != Status::kOk || !h.cached()) {
                std::fprintf(stderr, "rcache_cost: %s\n", why.c_str());
                return 1;
            }
            h.reset();
            const double miss = seconds_since(t0);
            for (int r = 0; r < reps; ++r) {
                t0 = std::chrono::steady_clock::now();
                cache.acquire(p, size, access, &h, &why);
                h.reset();
                hit.push_back(seconds_since(t0));
            }
            const double rm = median(reg), hm = median(hit);
            reg_t.push_back(rm);
            hit_t.push_back(hm);
            std::printf("%12zu %6d %12.1f %12.1f %12.2f %8.0f\n", size, reps, rm * 1e6,
                        miss * 1e6, hm * 1e6, rm / hm);
            cache.flush();
            munmap(p, size);
        }
        const RegCacheStats& st = cache.stats();
        std::printf("# cache: %llu hits, %llu misses, %llu stale\n",
                    static_cast<unsigned long long>(st.hits),
                    static_cast<unsigned long long>(st.misses),
                    static_cast<unsigned long long>(st.stale));
        const Model reg = fit(sizes, reg_t), hit = fit(sizes, hit_t);
        std::printf("reg_fixed_s=%.3g reg_per_byte_s=%.3g\n", reg.fixed_s, reg.per_byte_s);
        std::printf("hit_fixed_s=%.3g hit_per_byte_s=%.3g\n", hit.fixed_s, hit.per_byte_s);
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
