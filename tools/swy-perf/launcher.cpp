// Launched mode of the swy-perf bootstrap: `mpirun -np 2 swy-perf ...` (or prterun, or srun
// --mpi=pmix). The launcher's PMIx server replaces the pipe or TCP channel: rank 0 is the
// server, rank 1 the client; the worker address is published and fetched through
// switchyard/bootstrap.h, and barriers are PMIx fences.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap.h"

namespace swy::perf {

bool Bootstrap::launched_by_pmix() {
    return std::getenv("PMIX_RANK") != nullptr && std::getenv("PMIX_NAMESPACE") != nullptr;
}

bool Bootstrap::start_launched() {
    // The rank is needed now (to pick the role and the core to pin) but PMIx is joined only
    // once the worker exists: the launcher's environment already says which rank we are.
    const char* text = std::getenv("PMIX_RANK");
    char* end = nullptr;
    long rank = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || rank < 0) {
        std::fprintf(stderr, "swy-perf: PMIX_RANK='%s' is not a rank\n", text);
        return false;
    }
    if (rank > 1) {
        std::fprintf(stderr,
                     "swy-perf: started with rank %ld: swy-perf runs 2 ranks "
                     "(mpirun -np 2)\n",
                     rank);
        return false;
    }
    launched_ = true;
    role_ = rank == 0 ? Role::kServer : Role::kClient;
    return true;
}

bool Bootstrap::connect_launched(swy_worker_h worker, const swy_ep_params_t& ep_template,
                                 swy_ep_h* ep) {
    swy_status_t s = swy_bootstrap_pmix_init(worker, &pmix_);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: joining the launcher's job (PMIx) failed: %s\n",
                     swy_status_string(s));
        return false;
    }
    uint32_t rank = 0, size = 0;
    swy_bootstrap_rank(pmix_, &rank);
    swy_bootstrap_size(pmix_, &size);
    if (size != 2) {
        std::fprintf(stderr, "swy-perf: the job has %u ranks: swy-perf runs 2 (mpirun -np 2)\n",
                     size);
        return false;
    }
    s = swy_bootstrap_ep(pmix_, 1 - rank, &ep_template, ep);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: endpoint to rank %u: %s\n", 1 - rank, swy_status_string(s));
        return false;
    }
    return true;
}

bool Bootstrap::close_launched(bool force) {
    if (pmix_ == nullptr) return true;
    swy_status_t s =
        swy_bootstrap_close_endpoints(pmix_, force ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH);
    if (s != SWY_OK && !force) {
        std::fprintf(stderr, "swy-perf: closing the endpoint: %s\n", swy_status_string(s));
        return false;
    }
    return true;
}

void Bootstrap::leave_launched() {
    if (pmix_ == nullptr) return;
    swy_status_t s = swy_bootstrap_finalize(pmix_);
    pmix_ = nullptr;
    if (s != SWY_OK) std::fprintf(stderr, "swy-perf: leaving PMIx: %s\n", swy_status_string(s));
}

bool Bootstrap::barrier_launched() {
    if (pmix_ == nullptr) return false;
    swy_status_t s = swy_bootstrap_barrier(pmix_);  // progresses the worker while it waits
    if (s != SWY_OK) std::fprintf(stderr, "swy-perf: PMIx barrier: %s\n", swy_status_string(s));
    return s == SWY_OK;
}

}  // namespace swy::perf
