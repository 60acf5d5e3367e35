#include "session.h"

#include <cstdio>
#include <vector>

namespace swy::perf {
namespace {

bool check(swy_status_t status, const char* what) {
    if (status == SWY_OK) return true;
    std::fprintf(stderr, "swy-perf: %s failed: %s\n", what, swy_status_string(status));
    return false;
}

} // namespace

void Session::on_ep_error(void* arg, swy_ep_h, swy_status_t status) {
    static_cast<Session*>(arg)->failed_status_ = status;
}

bool Session::open(const Options& opts, Bootstrap& boot) {
    swy_config_h config = nullptr;
    if (!check(swy_config_read(&config), "reading the SWY_* environment")) return false;
    if (!opts.tls.empty()) {
        swy_status_t s = swy_config_set(config, "TLS", opts.tls.c_str());
        if (s != SWY_OK) {
            std::fprintf(stderr, "swy-perf: --tls %s rejected: %s\n", opts.tls.c_str(),
                         swy_status_string(s));
            swy_config_release(config);
            return false;
        }
    }
    swy_context_params_t cparams{};
    cparams.config = config;
    swy_status_t s = swy_context_create(&cparams, &context_);
    swy_config_release(config);  // the context keeps its own copy
    if (!check(s, "swy_context_create")) return false;

    swy_worker_params_t wparams{};
    wparams.thread_mode = SWY_THREAD_MODE_SINGLE;
    if (!check(swy_worker_create(context_, &wparams, &worker_), "swy_worker_create")) return false;

    void* address = nullptr;
    size_t length = 0;
    if (!check(swy_worker_get_address(worker_, &address, &length), "swy_worker_get_address")) {
        return false;
    }
    std::vector<uint8_t> remote;
    bool ok = true;
    if (boot.role() == Role::kSelf) {
        remote.assign(static_cast<uint8_t*>(address), static_cast<uint8_t*>(address) + length);
    } else {
        ok = boot.exchange(address, length, &remote);
    }
    swy_worker_release_address(worker_, address);
    if (!ok) return false;

    swy_ep_params_t eparams{};
    eparams.remote_address = remote.data();
    eparams.remote_address_length = remote.size();
    eparams.err_cb = &Session::on_ep_error;
    eparams.err_arg = this;
    return check(swy_ep_create(worker_, &eparams, &ep_), "swy_ep_create");
}

bool Session::close_endpoint() {
    if (!ep_) return true;
    swy_request_h req = nullptr;
    swy_status_t s = swy_ep_close_nb(ep_, failed() ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &req);
    if (s == SWY_INPROGRESS) {
        s = swy_request_wait(worker_, req);
        swy_request_free(req);
    }
    ep_ = nullptr;
    if (s != SWY_OK && !failed()) {
        std::fprintf(stderr, "swy-perf: closing the endpoint: %s\n", swy_status_string(s));
        return false;
    }
    return true;
}

void Session::close() {
    close_endpoint();
    if (worker_) swy_worker_destroy(worker_);
    if (context_) swy_context_destroy(context_);
    worker_ = nullptr;
    context_ = nullptr;
}

std::string Session::describe() const {
    swy_ep_attr_t attr{};
    if (!ep_ || swy_ep_query(ep_, &attr) != SWY_OK) return {};
    char line[256];
    std::snprintf(line, sizeof line, "# transport %s, pio %s, credits %u%s, pio_max %zu B",
                  attr.transport ? attr.transport : "?", attr.pio ? "yes" : "no", attr.credits,
                  attr.credits_shared ? " (shared)" : "", attr.pio_max_size);
    return line;
}

std::string Session::protocol_table() const {
    if (!ep_) return {};
    std::vector<char> buf(16 << 10);
    for (;;) {
        swy_status_t s = swy_ep_print_protocols(ep_, SWY_MEMTYPE_HOST, buf.data(), buf.size());
        if (s == SWY_OK) {
            buf.back() = '\0';
            return buf.data();
        }
        if (s != SWY_ERR_NO_RESOURCE || buf.size() >= (1u << 20)) return {};
        buf.resize(buf.size() * 4);
    }
}

} // namespace swy::perf
