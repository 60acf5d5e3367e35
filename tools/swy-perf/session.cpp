#include "session.h"

#include <cstdio>
#include <string_view>
#include <vector>

#include <switchyard/memtype.h>

namespace swy::perf {
namespace {

bool check(swy_status_t status, const char* what) {
    if (status == SWY_OK) return true;
    std::fprintf(stderr, "swy-perf: %s failed: %s\n", what, swy_status_string(status));
    return false;
}

swy_memtype_t memtype_of(std::string_view name) {
    if (name == "simdev") return SWY_MEMTYPE_SIMDEV;
    if (name == "cuda") return SWY_MEMTYPE_CUDA;
    return SWY_MEMTYPE_HOST;  // options.cpp let nothing else through
}

}  // namespace

// Both processes load every type named in --memtype (on top of what SWY_MEMTYPES already
// lists), so each side's tables and detection are the same whichever side a type is on.
bool Session::configure_memtypes(const Options& opts, swy_config_h config) {
    if (opts.host_only()) return true;  // leave SWY_MEMTYPES as the environment has it
    char current[256] = {};
    std::string list = "host";
    if (swy_config_get(config, "MEMTYPES", current, sizeof current) == SWY_OK) list = current;
    auto listed = [&list](const std::string& name) {
        std::string_view rest(list);
        while (!rest.empty()) {
            size_t comma = rest.find(',');
            if (rest.substr(0, comma) == name) return true;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
        return false;
    };
    for (const char* needed : {"host", opts.memtype[0].c_str(), opts.memtype[1].c_str()}) {
        if (!listed(needed)) list += std::string(list.empty() ? "" : ",") + needed;
    }
    swy_status_t s = swy_config_set(config, "MEMTYPES", list.c_str());
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: SWY_MEMTYPES=%s rejected: %s\n", list.c_str(),
                     swy_status_string(s));
        return false;
    }
    return true;
}

// A plugin that cannot work here (cuda without a driver) does not fail the context: it is
// left out with a warning. Find out now, with a clear message, rather than at the first send.
bool Session::check_memtype(swy_memtype_t type, const std::string& name) {
    if (type == SWY_MEMTYPE_HOST) return true;
    void* probe = nullptr;
    swy_status_t s = swy_mem_alloc(context_, type, 4096, &probe);
    if (s != SWY_OK) {
        std::fprintf(stderr,
                     "swy-perf: --memtype %s: cannot allocate %s memory in this process (%s)%s\n",
                     name.c_str(), name.c_str(), swy_status_string(s),
                     type == SWY_MEMTYPE_CUDA
                         ? "; the cuda plugin needs the NVIDIA driver (libcuda) and a GPU"
                         : "; see the warnings above");
        return false;
    }
    swy_mem_free(context_, probe);
    return true;
}

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
    if (!configure_memtypes(opts, config)) {
        swy_config_release(config);
        return false;
    }
    swy_context_params_t cparams{};
    cparams.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cparams.config = config;
    swy_status_t s = swy_context_create(&cparams, &context_);
    swy_config_release(config);  // the context keeps its own copy
    if (!check(s, "swy_context_create")) return false;

    // The client's buffers are the SENDER's, the server's the RECEIVER's; one process on its
    // own (--tls self) sends from the first and receives into the second.
    Role role = boot.role();
    const std::string& send_name = opts.memtype[role == Role::kServer ? 1 : 0];
    const std::string& recv_name = opts.memtype[role == Role::kClient ? 0 : 1];
    send_memtype_ = memtype_of(send_name);
    recv_memtype_ = memtype_of(recv_name);
    table_memtype_ = memtype_of(opts.memtype[0]);
    if (!check_memtype(send_memtype_, send_name) || !check_memtype(recv_memtype_, recv_name)) {
        return false;
    }

    swy_worker_params_t wparams{};
    wparams.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = SWY_THREAD_MODE_SINGLE;
    if (!check(swy_worker_create(context_, &wparams, &worker_), "swy_worker_create")) return false;
    if (opts.two_workers()) return open_loopback(wparams);
    if (boot.launched()) {
        launcher_ = &boot;
        swy_ep_params_t ep_template{};
        ep_template.field_mask = SWY_EP_PARAM_FIELD_ERR_HANDLER;
        ep_template.err_cb = &Session::on_ep_error;
        ep_template.err_arg = this;
        return boot.connect_launched(worker_, ep_template, &ep_);
    }
    if (boot.sockaddr_mode()) {  // --server / --client: the listener API meets the peer
        sockaddr_boot_ = &boot;
        swy_ep_params_t ep_template{};
        ep_template.field_mask = SWY_EP_PARAM_FIELD_ERR_HANDLER;
        ep_template.err_cb = &Session::on_ep_error;
        ep_template.err_arg = this;
        return boot.connect_sockaddr(worker_, ep_template, &ep_);
    }

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
    eparams.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    eparams.remote_address = remote.data();
    eparams.remote_address_length = remote.size();
    eparams.err_cb = &Session::on_ep_error;
    eparams.err_arg = this;
    return check(swy_ep_create(worker_, &eparams, &ep_), "swy_ep_create");
}

namespace {

bool connect_to(swy_worker_h from, swy_worker_h to, const swy_ep_params_t& base, swy_ep_h* ep) {
    void* address = nullptr;
    size_t length = 0;
    if (!check(swy_worker_get_address(to, &address, &length), "swy_worker_get_address")) {
        return false;
    }
    swy_ep_params_t eparams = base;
    eparams.field_mask |= SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.remote_address = address;
    eparams.remote_address_length = length;
    swy_status_t s = swy_ep_create(from, &eparams, ep);
    swy_worker_release_address(to, address);
    return check(s, "swy_ep_create");
}

}  // namespace

// --loopback: a second (client) worker in the same context, an endpoint each way. worker_
// stays the server worker (receives, active-message handlers, the target of one-sided
// operations), ep_ goes client -> server, so the runners' self-mode code works unchanged.
bool Session::open_loopback(const swy_worker_params_t& wparams) {
    if (!check(swy_worker_create(context_, &wparams, &client_worker_), "swy_worker_create")) {
        return false;
    }
    swy_ep_params_t base{};
    base.field_mask = SWY_EP_PARAM_FIELD_ERR_HANDLER;
    base.err_cb = &Session::on_ep_error;
    base.err_arg = this;
    return connect_to(client_worker_, worker_, base, &ep_) &&
           connect_to(worker_, client_worker_, base, &back_ep_);
}

bool Session::close_loopback_endpoints() {
    bool ok = true;
    swy_ep_h* eps[] = {&ep_, &back_ep_};
    for (swy_ep_h* ep : eps) {
        if (!*ep) continue;
        swy_request_h req = nullptr;
        swy_status_t s =
            swy_ep_close_nb(*ep, failed() ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &req);
        if (s == SWY_INPROGRESS) {
            while ((s = swy_request_test(req)) == SWY_INPROGRESS)
                progress();
            swy_request_free(req);
        }
        *ep = nullptr;
        if (s != SWY_OK && !failed()) {
            std::fprintf(stderr, "swy-perf: closing a loopback endpoint: %s\n",
                         swy_status_string(s));
            ok = false;
        }
    }
    return ok;
}

bool Session::close_endpoint() {
    if (client_worker_) return close_loopback_endpoints();
    if (!ep_) return true;
    if (launcher_) {
        ep_ = nullptr;
        return launcher_->close_launched(failed());
    }
    if (sockaddr_boot_) {
        ep_ = nullptr;
        return sockaddr_boot_->close_sockaddr(failed());
    }
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
    if (launcher_) launcher_->leave_launched();
    launcher_ = nullptr;
    if (client_worker_) swy_worker_destroy(client_worker_);
    client_worker_ = nullptr;
    if (worker_) swy_worker_destroy(worker_);
    if (context_) swy_context_destroy(context_);
    worker_ = nullptr;
    context_ = nullptr;
}

std::string Session::describe() const {
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    if (!ep_ || swy_ep_query(ep_, &attr) != SWY_OK) return {};
    char line[512];
    std::snprintf(line, sizeof line, "# transport %s, pio %s, credits %u%s, pio_max %zu B",
                  attr.transport ? attr.transport : "?", attr.pio ? "yes" : "no", attr.credits,
                  attr.credits_shared ? " (shared)" : "", attr.pio_max_size);
    std::string text = line;
    if (attr.pio_window != nullptr && attr.pio_window[0] != '\0') {
        // Two-tier PIO (verbs): inline, then device memory if the endpoint got a slot.
        std::snprintf(line, sizeof line,
                      "\n# pio: inline %zu B, device memory %zu B, %u in flight; %s",
                      attr.pio_inline_size, attr.pio_dm_size, attr.pio_credits, attr.pio_window);
        text += line;
    }
    return text;
}

std::string Session::protocol_table() const {
    if (!ep_) return {};
    std::vector<char> buf(16 << 10);
    for (;;) {
        swy_status_t s = swy_ep_print_protocols(ep_, table_memtype_, buf.data(), buf.size());
        if (s == SWY_OK) {
            buf.back() = '\0';
            return buf.data();
        }
        if (s != SWY_ERR_NO_RESOURCE || buf.size() >= (1u << 20)) return {};
        buf.resize(buf.size() * 4);
    }
}

}  // namespace swy::perf
