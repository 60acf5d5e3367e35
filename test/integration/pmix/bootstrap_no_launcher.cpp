// bootstrap_no_launcher: what switchyard/bootstrap.h promises outside a launcher, run directly
// by ctest (no mpirun). NULL arguments are refused with SWY_ERR_INVALID_PARAM; joining a job
// without a PMIx server fails with SWY_ERR_UNREACHABLE and leaves the worker usable. In a
// build without PMIx (argv[1] == "unsupported") every call returns SWY_ERR_UNSUPPORTED.
#include <switchyard/bootstrap.h>
#include <switchyard/switchyard.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int failures = 0;

void expect_status(swy_status_t got, swy_status_t want, const char* what) {
    if (got == want) return;
    std::fprintf(stderr, "bootstrap_no_launcher: %s: got %s, expected %s\n", what,
                 swy_status_string(got), swy_status_string(want));
    ++failures;
}

}  // namespace

int main(int argc, char** argv) {
    const bool built_with_pmix = !(argc > 1 && std::strcmp(argv[1], "unsupported") == 0);
    // A launcher's variables (if ctest itself runs under one) must not leak in.
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
    unsetenv("PMIX_SERVER_URI41");
    unsetenv("PMIX_SERVER_URI4");
    unsetenv("PMIX_SERVER_URI3");
    unsetenv("PMIX_SERVER_URI2");
    swy_context_h context = nullptr;
    swy_worker_h worker = nullptr;
    if (swy_context_create(nullptr, &context) != SWY_OK ||
        swy_worker_create(context, nullptr, &worker) != SWY_OK) {
        std::fprintf(stderr, "bootstrap_no_launcher: cannot create context and worker\n");
        return 1;
    }
    swy_bootstrap_h boot = reinterpret_cast<swy_bootstrap_h>(&failures);  // must be reset
    uint32_t value = 0;
    swy_ep_h ep = nullptr;
    if (built_with_pmix) {
        expect_status(swy_bootstrap_pmix_init(nullptr, &boot), SWY_ERR_INVALID_PARAM,
                      "init without a worker");
        expect_status(swy_bootstrap_pmix_init(worker, nullptr), SWY_ERR_INVALID_PARAM,
                      "init without an output");
        expect_status(swy_bootstrap_rank(nullptr, &value), SWY_ERR_INVALID_PARAM, "rank(NULL)");
        expect_status(swy_bootstrap_size(nullptr, &value), SWY_ERR_INVALID_PARAM, "size(NULL)");
        expect_status(swy_bootstrap_ep(nullptr, 0, nullptr, &ep), SWY_ERR_INVALID_PARAM,
                      "ep(NULL)");
        expect_status(swy_bootstrap_barrier(nullptr), SWY_ERR_INVALID_PARAM, "barrier(NULL)");
        expect_status(swy_bootstrap_close_endpoints(nullptr, SWY_EP_CLOSE_FLUSH),
                      SWY_ERR_INVALID_PARAM, "close_endpoints(NULL)");
        expect_status(swy_bootstrap_finalize(nullptr), SWY_ERR_INVALID_PARAM, "finalize(NULL)");
        boot = nullptr;
        expect_status(swy_bootstrap_pmix_init(worker, &boot), SWY_ERR_UNREACHABLE,
                      "init outside a launcher");
        if (boot != nullptr) {
            std::fprintf(stderr, "bootstrap_no_launcher: a failed init returned a handle\n");
            ++failures;
        }
    } else {
        expect_status(swy_bootstrap_pmix_init(worker, &boot), SWY_ERR_UNSUPPORTED, "init");
        if (boot != nullptr) ++failures;
        expect_status(swy_bootstrap_ep(nullptr, 0, nullptr, &ep), SWY_ERR_UNSUPPORTED, "ep");
        expect_status(swy_bootstrap_barrier(nullptr), SWY_ERR_UNSUPPORTED, "barrier");
        expect_status(swy_bootstrap_finalize(nullptr), SWY_ERR_UNSUPPORTED, "finalize");
    }
    // The worker is untouched by the failed join: a message to itself still goes through.
    void* address = nullptr;
    size_t length = 0;
    swy_ep_params_t params{};
    params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    uint64_t out = 0x0123456789abcdefull, in = 0;
    swy_request_h rreq = nullptr, sreq = nullptr;
    if (swy_worker_get_address(worker, &address, &length) != SWY_OK) return 1;
    params.remote_address = address;
    params.remote_address_length = length;
    expect_status(swy_ep_create(worker, &params, &ep), SWY_OK, "endpoint to self");
    swy_worker_release_address(worker, address);
    swy_status_t rs = swy_tag_recv_nb(worker, &in, sizeof in, 5, ~swy_tag_t{0}, nullptr, &rreq);
    swy_status_t ss = swy_tag_send_nb(ep, &out, sizeof out, 5, nullptr, &sreq);
    if (ss == SWY_INPROGRESS) {
        ss = swy_request_wait(worker, sreq);
        swy_request_free(sreq);
    }
    if (rs == SWY_INPROGRESS) {
        rs = swy_request_wait(worker, rreq);
        swy_request_free(rreq);
    }
    expect_status(ss, SWY_OK, "send to self");
    expect_status(rs, SWY_OK, "receive from self");
    if (in != out) {
        std::fprintf(stderr, "bootstrap_no_launcher: message to self arrived damaged\n");
        ++failures;
    }
    swy_request_h creq = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &creq) == SWY_INPROGRESS) {
        swy_request_wait(worker, creq);
        swy_request_free(creq);
    }
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    if (failures == 0) std::printf("bootstrap_no_launcher: ok\n");
    return failures ? 1 : 0;
}
