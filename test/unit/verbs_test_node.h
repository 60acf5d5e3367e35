// A context and worker with SWY_TLS=verbs,self plus settings, shared by the verbs device tests
// (verbs_transport_test, verbs_dm_transport_test, verbs_liveness_test, verbs_auth_test,
// verbs_crossing_test). On a host without an
// RDMA device the verbs interface does not open and those tests skip (SKIP_WITHOUT_VERBS).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <switchyard/switchyard.h>

#include "core/address.h"
#include "test_context.h"
#include "transports/verbs/verbs_transport.h"

namespace swy::test {

/// Settings by name without SWY_ ({"VERBS_SQ_DEPTH", "16"}), applied after TLS=verbs,self.
using VerbsSettings = Settings;

struct VerbsNode {
    swy_context_h ctx = nullptr;
    swy_worker_h worker = nullptr;
    std::vector<uint8_t> address;  ///< empty when the context or worker could not be made

    explicit VerbsNode(const VerbsSettings& settings = {}) {
        VerbsSettings all{{"TLS", "verbs,self"}};
        all.insert(all.end(), settings.begin(), settings.end());
        ctx = make_context(all);
        if (ctx == nullptr) return;
        swy_worker_params_t wp{SWY_WORKER_PARAM_FIELD_THREAD_MODE, SWY_THREAD_MODE_SINGLE};
        EXPECT_EQ(swy_worker_create(ctx, &wp, &worker), SWY_OK);
        void* a = nullptr;
        size_t n = 0;
        if (worker != nullptr && swy_worker_get_address(worker, &a, &n) == SWY_OK) {
            address.assign(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
            swy_worker_release_address(worker, a);
        }
    }
    ~VerbsNode() {
        if (worker != nullptr) swy_worker_destroy(worker);
        if (ctx != nullptr) swy_context_destroy(ctx);
    }
    VerbsNode(const VerbsNode&) = delete;
    VerbsNode& operator=(const VerbsNode&) = delete;

    /// Whether the worker opened the verbs interface (its address has a verbs section).
    bool has_verbs() const {
        core::WorkerAddress a;
        std::string why;
        return !address.empty() &&
               core::decode_address(address.data(), address.size(), &a, &why) == Status::kOk &&
               a.find(tl::verbs::kAddressSection) != nullptr;
    }
};

/// Close an endpoint at once (its requests are done or do not matter any more).
inline void close_now(swy_ep_h ep) {
    swy_request_h req = nullptr;
    swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req);
    if (req != nullptr) swy_request_free(req);
}

/// What an endpoint's error callback saw: how often it ran and the last status.
struct EpFailure {
    int calls = 0;
    swy_status_t status = SWY_OK;
    static void cb(void* arg, swy_ep_h, swy_status_t st) {
        auto* f = static_cast<EpFailure*>(arg);
        ++f->calls;
        f->status = st;
    }
};

/// An endpoint from @p from to @p to whose failures are counted in @p f.
inline swy_ep_h connect_counting_failures(const VerbsNode& from, const VerbsNode& to,
                                          EpFailure* f) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = to.address.data();
    p.remote_address_length = to.address.size();
    p.err_cb = &EpFailure::cb;
    p.err_arg = f;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from.worker, &p, &ep), SWY_OK);
    return ep;
}

}  // namespace swy::test

// A macro because GTEST_SKIP must return from the test body itself.
#define SKIP_WITHOUT_VERBS(node)                                   \
    if (!(node).has_verbs())                                       \
    GTEST_SKIP() << "no RDMA device: the verbs transport did not " \
                    "open (run test/verbs/run-vm.sh)"
