// switchyard/bootstrap.h in a build without PMIx (SWY_WITH_PMIX=OFF, or AUTO and pkg-config
// found no pmix): every call says so instead of failing obscurely at link time.
#include <switchyard/bootstrap.h>

#include "common/log.h"

namespace {

swy_status_t unsupported(const char* function) {
    swy::common::log_printf(swy::common::LogLevel::kError,
                            "%s: this Switchyard was built without PMIx (configure with "
                            "SWY_WITH_PMIX=ON and libpmix-dev installed)",
                            function);
    return SWY_ERR_UNSUPPORTED;
}

}  // namespace

extern "C" {

swy_status_t swy_bootstrap_pmix_init(swy_worker_h, swy_bootstrap_h* bootstrap) {
    if (bootstrap != nullptr) *bootstrap = nullptr;
    return unsupported(__func__);
}

swy_status_t swy_bootstrap_rank(swy_bootstrap_h, uint32_t*) { return unsupported(__func__); }

swy_status_t swy_bootstrap_size(swy_bootstrap_h, uint32_t*) { return unsupported(__func__); }

swy_status_t swy_bootstrap_ep(swy_bootstrap_h, uint32_t, const swy_ep_params_t*, swy_ep_h* ep) {
    if (ep != nullptr) *ep = nullptr;
    return unsupported(__func__);
}

swy_status_t swy_bootstrap_barrier(swy_bootstrap_h) { return unsupported(__func__); }

swy_status_t swy_bootstrap_close_endpoints(swy_bootstrap_h, swy_ep_close_mode_t) {
    return unsupported(__func__);
}

swy_status_t swy_bootstrap_finalize(swy_bootstrap_h) { return unsupported(__func__); }

}  // extern "C"
