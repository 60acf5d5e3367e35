// Cost of a registration (ibv_reg_mr + ibv_dereg_mr, what a transfer pays without the cache)
// against a validated cache hit (RegCache::acquire + release of a cached range: lookup,
// /proc/self/pagemap read, frame compare), and a miss (registration + frames read), by size,
// on the first RDMA device. Run inside the Soft-RoCE VM by test/verbs/run-vm.sh. The three are
// timed interleaved, rep by rep, so they see the same host noise. Prints minimum and median
// of each, and a fixed + per-byte model from the minima (on a shared host the minimum is the
// cost; the rest is waiting for a CPU) for the selector's cost model:
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

#include "transports/verbs/reg_cache.h"
#include "transports/verbs/verbs_registrar.h"
#include "transports/zcopy.h"

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
        const unsigned access = swy::tl::kZcopyRemoteRead | swy::tl::kZcopyLocalWrite;
        const std::vector<size_t> sizes{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
        std::vector<double> reg_t, hit_t;
        std::printf("# %s: register+deregister vs validated cache hit\n",
                    ibv_get_device_name(list[0]));
        std::printf("%12s %5s %18s %18s %18s %8s\n", "bytes", "reps", "reg+dereg_us min/med",
                    "miss_us min/med", "hit_us min/med", "reg/hit");
        for (size_t size : sizes) {
            const int reps = size >= (16u << 20) ? 9 : 31;
            void* p =
                mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return 1;
            std::memset(p, 1, size);  // touched, as a send buffer would be
            std::vector<double> reg, miss, hit;
            RegCache::Handle h;
            for (int r = 0; r < reps; ++r) {
                auto t0 = std::chrono::steady_clock::now();
                ibv_mr* mr =
                    ibv_reg_mr(pd, p, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
                if (mr == nullptr) {
                    std::perror("ibv_reg_mr");
                    return 1;
                }
                ibv_dereg_mr(mr);
                reg.push_back(seconds_since(t0));
                cache.flush();
                t0 = std::chrono::steady_clock::now();
                if (cache.acquire(p, size, access, &h, &why) != Status::kOk || !h.cached()) {
                    std::fprintf(stderr, "rcache_cost: not cached: %s\n", why.c_str());
                    return 1;
                }
                h.reset();
                miss.push_back(seconds_since(t0));
                t0 = std::chrono::steady_clock::now();
                cache.acquire(p, size, access, &h, &why);
                h.reset();
                hit.push_back(seconds_since(t0));
            }
            const double rmin = *std::min_element(reg.begin(), reg.end());
            const double hmin = *std::min_element(hit.begin(), hit.end());
            const double mmin = *std::min_element(miss.begin(), miss.end());
            reg_t.push_back(rmin);
            hit_t.push_back(hmin);
            std::printf("%12zu %5d %9.1f/%-8.1f %9.1f/%-8.1f %9.1f/%-8.1f %8.1f\n", size, reps,
                        rmin * 1e6, median(reg) * 1e6, mmin * 1e6, median(miss) * 1e6, hmin * 1e6,
                        median(hit) * 1e6, rmin / hmin);
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
