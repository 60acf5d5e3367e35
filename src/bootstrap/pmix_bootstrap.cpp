// PMIx bootstrap (switchyard/bootstrap.h): publish the worker address at init, fetch a peer's
// address only when an endpoint to it is first asked for.
//
// Why no fence at start-up: the launchers we target serve a PMIx_Get for a key another
// process has committed but nobody has fenced ("direct modex": the local PMIx server asks the
// daemon hosting the peer, which answers as soon as the peer commits). Open MPI 4.1's ORTE
// (Debian's mpirun, built against the system libpmix 4.2 through its ext3x component), PRRTE
// and Slurm all do. So init costs one put and one commit, and each peer costs one get when
// (and if) it is first needed. The get carries PMIX_TIMEOUT so a rank that never publishes
// turns into an error instead of a hang.
#include <pmix.h>

#include <switchyard/bootstrap.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/api_guard.h"
#include "common/auth.h"
#include "common/log.h"

namespace swy::bootstrap {
namespace {

using common::log_printf;
using common::LogLevel;

/// Key of the worker address in the job's key-value store (versioned with the blob format).
constexpr const char* kAddressKey = "swy.worker.address.1";
/// Key of the job's shared authentication key (hex text), put by rank 0 (docs/security-tcp.md).
constexpr const char* kAuthKeyKey = "swy.auth.key.1";
constexpr size_t kJobKeyBytes = 32;
/// How long swy_bootstrap_ep() waits for a rank to publish (a rank still starting up, or
/// one stuck before init on a loaded machine).
constexpr int kGetTimeoutSeconds = 120;

/// One non-blocking PMIx call in flight: the callback (PMIx's progress thread) fills it, the
/// caller's thread waits for `done` while progressing the worker.
struct Pending {
    std::atomic<bool> done{false};
    pmix_status_t status = PMIX_SUCCESS;
    std::vector<uint8_t> bytes;  ///< a get's byte object, copied in the callback
};

void on_op(pmix_status_t status, void* cbdata) {
    auto* p = static_cast<Pending*>(cbdata);
    p->status = status;
    p->done.store(true, std::memory_order_release);
}

void on_value(pmix_status_t status, pmix_value_t* kv, void* cbdata) {
    auto* p = static_cast<Pending*>(cbdata);
    p->status = status;
    // PMIx keeps ownership of kv: copy what we need before returning.
    if (status == PMIX_SUCCESS) {
        if (kv != nullptr && kv->type == PMIX_BYTE_OBJECT && kv->data.bo.bytes != nullptr) {
            const auto* b = reinterpret_cast<const uint8_t*>(kv->data.bo.bytes);
            p->bytes.assign(b, b + kv->data.bo.size);
        } else {
            p->status = PMIX_ERR_BAD_PARAM;  // someone else's value under our key
        }
    }
    p->done.store(true, std::memory_order_release);
}

/// Progress the worker until @p p completes. Yields the core when nothing happens: launched
/// jobs are often oversubscribed, and the process we wait for may need this core.
void wait_for(swy_worker_h worker, const Pending& p) {
    unsigned idle = 0;
    while (!p.done.load(std::memory_order_acquire)) {
        if (swy_worker_progress(worker) != 0) {
            idle = 0;
        } else if (++idle > 256) {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }
}

/// Progress the worker for about @p us microseconds.
void progress_for(swy_worker_h worker, unsigned us) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (std::chrono::steady_clock::now() < until) {
        if (swy_worker_progress(worker) == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }
}

swy_status_t pmix_failure(const char* what, pmix_status_t rc) {
    log_printf(LogLevel::kError, "bootstrap: %s failed: %s", what, PMIx_Error_string(rc));
    switch (rc) {
        case PMIX_ERR_TIMEOUT: return SWY_ERR_TIMED_OUT;
        case PMIX_ERR_NOT_FOUND: return SWY_ERR_NOT_FOUND;
        case PMIX_ERR_UNREACH: return SWY_ERR_UNREACHABLE;
        case PMIX_ERR_NOMEM: return SWY_ERR_NO_MEMORY;
        default: return SWY_ERR_IO;
    }
}

}  // namespace
}  // namespace swy::bootstrap

struct swy_bootstrap {
    swy_worker_h worker = nullptr;
    pmix_proc_t self{};
    uint32_t size = 0;
    std::vector<uint8_t> own_address;                  ///< for an endpoint to ourselves
    std::unordered_map<uint32_t, swy_ep_h> endpoints;  ///< by rank; sparse at scale
};

namespace swy::bootstrap {
namespace {

/// Fetch @p rank's value of @p key (its address, or rank 0's job key) into @p out. A get
/// normally waits in the server until the peer commits. But Open MPI 4.1.4's ORTE with
/// PMIx 4.2.2 was seen (2 runs in 8 of an 8-rank ring on a loaded machine) answering
/// NOT-FOUND at once for a local peer that had not committed yet, so NOT-FOUND is retried,
/// backing off from 1 to 32 ms with the worker progressed, until the deadline. Still no
/// collective: a fence at init would also be correct, but would make every rank wait for the
/// slowest one even if it never talks to it.
pmix_status_t fetch_value(swy_bootstrap* b, uint32_t rank, const char* key, Pending* out) {
    pmix_proc_t peer{};
    PMIX_LOAD_PROCID(&peer, b->self.nspace, rank);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(kGetTimeoutSeconds);
    unsigned backoff_us = 1000;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::seconds>(
            deadline - std::chrono::steady_clock::now());
        pmix_info_t info[1];
        int timeout = std::max<int>(1, static_cast<int>(left.count()));
        PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &timeout, PMIX_INT);
        Pending get;
        pmix_status_t rc = PMIx_Get_nb(&peer, key, info, 1, &on_value, &get);
        if (rc == PMIX_SUCCESS) {
            wait_for(b->worker, get);  // info stays alive until the callback ran
            rc = get.status;
        }
        PMIX_INFO_DESTRUCT(&info[0]);
        if (rc == PMIX_SUCCESS) {
            out->bytes = std::move(get.bytes);
            return PMIX_SUCCESS;
        }
        if (rc != PMIX_ERR_NOT_FOUND) return rc;
        if (std::chrono::steady_clock::now() >= deadline) return PMIX_ERR_TIMEOUT;
        log_printf(LogLevel::kDebug, "bootstrap: rank %u has not published %s yet: retrying", rank,
                   key);
        progress_for(b->worker, backoff_us);
        backoff_us = std::min(backoff_us * 2, 32000u);
    }
}

swy_status_t install_key(swy_bootstrap* b, const swy::common::AuthKey& key) {
    swy::core::Worker* w = swy::api::worker_of(b->worker);
    swy::api::WorkerGuard guard(w);
    return swy::api::to_c(w->set_auth_key(key));
}

swy_status_t install_job_key(swy_bootstrap* b) {
    swy::common::AuthKey key;
    std::string why;
    if (b->self.rank == 0) {
        if (swy::common::AuthKey::random(kJobKeyBytes, &key, &why) != swy::Status::kOk) {
            log_printf(LogLevel::kError, "bootstrap: no job key: %s", why.c_str());
            return SWY_ERR_IO;
        }
        std::string hex = key.to_hex();
        pmix_value_t v{};
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = hex.data();
        v.data.bo.size = hex.size();
        pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, kAuthKeyKey, &v);  // PMIx copies the value
        if (rc != PMIX_SUCCESS) return pmix_failure("PMIx_Put (job key)", rc);
        return install_key(b, key);
    }
    Pending get;
    pmix_status_t rc = fetch_value(b, 0, kAuthKeyKey, &get);
    if (rc != PMIX_SUCCESS) {
        log_printf(LogLevel::kError, "bootstrap: no job key from rank 0");
        return pmix_failure("PMIx_Get_nb (job key)", rc);
    }
    const std::string_view hex(reinterpret_cast<const char*>(get.bytes.data()), get.bytes.size());
    if (swy::common::AuthKey::from_hex(hex, &key, &why) != swy::Status::kOk) {
        log_printf(LogLevel::kError, "bootstrap: rank 0's job key is unusable: %s", why.c_str());
        return SWY_ERR_MALFORMED;
    }
    return install_key(b, key);
}

}  // namespace
}  // namespace swy::bootstrap

using namespace swy::bootstrap;

extern "C" {

swy_status_t swy_bootstrap_pmix_init(swy_worker_h worker, swy_bootstrap_h* bootstrap) {
    if (worker == nullptr || bootstrap == nullptr) {
        log_printf(LogLevel::kError, "%s: worker and bootstrap must not be NULL", __func__);
        return SWY_ERR_INVALID_PARAM;
    }
    auto* b = new (std::nothrow) swy_bootstrap;
    if (b == nullptr) return SWY_ERR_NO_MEMORY;
    b->worker = worker;
    pmix_status_t rc = PMIx_Init(&b->self, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        log_printf(LogLevel::kError,
                   "bootstrap: PMIx_Init failed (%s): was this process started by a PMIx "
                   "launcher (mpirun, prterun, srun --mpi=pmix)?",
                   PMIx_Error_string(rc));
        delete b;
        return rc == PMIX_ERR_UNREACH ? SWY_ERR_UNREACHABLE : SWY_ERR_IO;
    }
    swy_status_t status = SWY_OK;
    pmix_proc_t job{};
    PMIX_LOAD_PROCID(&job, b->self.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* value = nullptr;
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
    if (rc != PMIX_SUCCESS || value == nullptr || value->type != PMIX_UINT32 ||
        value->data.uint32 == 0 || b->self.rank >= value->data.uint32) {
        status = rc != PMIX_SUCCESS ? pmix_failure("PMIx_Get(PMIX_JOB_SIZE)", rc) : SWY_ERR_IO;
        if (rc == PMIX_SUCCESS) log_printf(LogLevel::kError, "bootstrap: bad job size");
    } else {
        b->size = value->data.uint32;
    }
    if (value != nullptr) PMIX_VALUE_RELEASE(value);

    // A per-job key, so that only this job's workers can talk to ours over tcp: rank 0 makes
    // it and puts it first; every other rank gets it (waiting for rank 0 as for an address)
    // and installs it before publishing its own address, so no peer ever finds us unkeyed.
    if (status == SWY_OK) status = install_job_key(b);

    void* address = nullptr;
    size_t length = 0;
    if (status == SWY_OK) status = swy_worker_get_address(worker, &address, &length);
    if (status == SWY_OK) {
        const auto* a = static_cast<const uint8_t*>(address);
        b->own_address.assign(a, a + length);
        swy_worker_release_address(worker, address);
        pmix_value_t v{};
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = reinterpret_cast<char*>(b->own_address.data());
        v.data.bo.size = b->own_address.size();
        rc = PMIx_Put(PMIX_GLOBAL, kAddressKey, &v);  // PMIx copies the value
        if (rc != PMIX_SUCCESS) status = pmix_failure("PMIx_Put", rc);
    }
    if (status == SWY_OK && (rc = PMIx_Commit()) != PMIX_SUCCESS) {
        status = pmix_failure("PMIx_Commit", rc);
    }
    if (status != SWY_OK) {
        PMIx_Finalize(nullptr, 0);
        delete b;
        return status;
    }
    *bootstrap = b;
    return SWY_OK;
}

swy_status_t swy_bootstrap_rank(swy_bootstrap_h bootstrap, uint32_t* rank) {
    if (bootstrap == nullptr || rank == nullptr) return SWY_ERR_INVALID_PARAM;
    *rank = bootstrap->self.rank;
    return SWY_OK;
}

swy_status_t swy_bootstrap_size(swy_bootstrap_h bootstrap, uint32_t* size) {
    if (bootstrap == nullptr || size == nullptr) return SWY_ERR_INVALID_PARAM;
    *size = bootstrap->size;
    return SWY_OK;
}

swy_status_t swy_bootstrap_ep(swy_bootstrap_h bootstrap, uint32_t rank,
                              const swy_ep_params_t* ep_template, swy_ep_h* ep) {
    if (bootstrap == nullptr || ep == nullptr) {
        log_printf(LogLevel::kError, "%s: bootstrap and ep must not be NULL", __func__);
        return SWY_ERR_INVALID_PARAM;
    }
    if (rank >= bootstrap->size) {
        log_printf(LogLevel::kError, "%s: rank %u is outside the job (size %u)", __func__, rank,
                   bootstrap->size);
        return SWY_ERR_INVALID_PARAM;
    }
    if (auto it = bootstrap->endpoints.find(rank); it != bootstrap->endpoints.end()) {
        *ep = it->second;
        return SWY_OK;
    }
    Pending get;
    const std::vector<uint8_t>* address = &bootstrap->own_address;
    if (rank != bootstrap->self.rank) {
        pmix_status_t rc = fetch_value(bootstrap, rank, kAddressKey, &get);
        if (rc != PMIX_SUCCESS) {
            log_printf(LogLevel::kError, "bootstrap: no address for rank %u", rank);
            return pmix_failure("PMIx_Get_nb (address)", rc);
        }
        address = &get.bytes;
    }
    swy_ep_params_t params{};
    if (ep_template != nullptr) params = *ep_template;
    params.field_mask |= SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.remote_address = address->data();
    params.remote_address_length = address->size();
    swy_ep_h created = nullptr;
    swy_status_t s = swy_ep_create(bootstrap->worker, &params, &created);
    if (s != SWY_OK) return s;
    try {
        bootstrap->endpoints.emplace(rank, created);
    } catch (const std::bad_alloc&) {
        swy_request_h req = nullptr;
        if (swy_ep_close_nb(created, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) {
            swy_request_wait(bootstrap->worker, req);
            swy_request_free(req);
        }
        return SWY_ERR_NO_MEMORY;
    }
    *ep = created;
    return SWY_OK;
}

swy_status_t swy_bootstrap_barrier(swy_bootstrap_h bootstrap) {
    if (bootstrap == nullptr) return SWY_ERR_INVALID_PARAM;
    // Every process of our namespace; no PMIX_COLLECT_DATA: nothing is gathered, so the
    // fence is one small message up and down the daemon tree.
    pmix_proc_t all{};
    PMIX_LOAD_PROCID(&all, bootstrap->self.nspace, PMIX_RANK_WILDCARD);
    Pending fence;
    pmix_status_t rc = PMIx_Fence_nb(&all, 1, nullptr, 0, &on_op, &fence);
    if (rc != PMIX_SUCCESS) return pmix_failure("PMIx_Fence_nb", rc);
    wait_for(bootstrap->worker, fence);
    return fence.status == PMIX_SUCCESS ? SWY_OK : pmix_failure("PMIx fence", fence.status);
}

swy_status_t swy_bootstrap_close_endpoints(swy_bootstrap_h bootstrap, swy_ep_close_mode_t mode) {
    if (bootstrap == nullptr || (mode != SWY_EP_CLOSE_FLUSH && mode != SWY_EP_CLOSE_FORCE)) {
        log_printf(LogLevel::kError, "%s: NULL bootstrap or unknown mode", __func__);
        return SWY_ERR_INVALID_PARAM;
    }
    swy_status_t first = SWY_OK;
    for (auto& [rank, ep] : bootstrap->endpoints) {
        swy_request_h req = nullptr;
        swy_status_t s = swy_ep_close_nb(ep, mode, &req);
        if (s == SWY_INPROGRESS) {
            s = swy_request_wait(bootstrap->worker, req);
            swy_request_free(req);
        }
        if (s != SWY_OK && first == SWY_OK) first = s;
    }
    bootstrap->endpoints.clear();
    return first;
}

swy_status_t swy_bootstrap_finalize(swy_bootstrap_h bootstrap) {
    if (bootstrap == nullptr) return SWY_ERR_INVALID_PARAM;
    swy_status_t status = swy_bootstrap_close_endpoints(bootstrap, SWY_EP_CLOSE_FLUSH);
    pmix_status_t rc = PMIx_Finalize(nullptr, 0);
    if (rc != PMIX_SUCCESS && status == SWY_OK) status = pmix_failure("PMIx_Finalize", rc);
    delete bootstrap;
    return status;
}

}  // extern "C"
