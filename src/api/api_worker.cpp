// C API: worker, endpoints.
#include <switchyard/switchyard.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "api/api_guard.h"
#include "api/api_listener.h"
#include "api/api_params.h"
#include "core/worker.h"

using namespace swy;
using api::WorkerGuard;

namespace {
/// The SWY_EP_ATTR_FIELD_LANE fields of swy_ep_query().
void fill_lane(core::Endpoint* e, const tl::LaneAttr& a, swy_ep_attr_t* attr) {
    attr->pio = a.pio ? 1 : 0;
    attr->credits = a.credits;
    attr->credits_shared = a.credits_shared ? 1 : 0;
    attr->pio_max_size = e->pio_max();
    attr->bcopy_max_size = e->fragment_max();
    attr->transport = a.transport;
    attr->small_protocol =
        e->wired() ? proto::proto_name(e->host_table().lookup(8)) : "";  // "" until wired
    attr->fallback_protocol = "eager_bcopy";
    attr->connected = e->failed() ? 0 : 1;
    // "cma" in the public struct: zero-copy that needs no remote keys (the lane's verified
    // peer is the key), which is what CMA is.
    const bool zcopy = (a.caps & tl::cap::kGetZcopy) != 0;
    attr->cma = zcopy && (a.caps & tl::cap::kRemoteKeys) == 0 ? 1 : 0;
}

/// swy_worker_progress's body (api::with_worker: under the lock in multi-thread mode).
unsigned progress_body(core::Worker* w) { return w->progress(); }
}  // namespace

extern "C" {

swy_status_t swy_worker_create(swy_context_h context, const swy_worker_params_t* params,
                               swy_worker_h* worker) {
    if (context == nullptr || worker == nullptr) {
        return api::invalid(__func__, "context and worker must not be NULL");
    }
    const uint64_t fields = params != nullptr ? params->field_mask : 0;
    if (swy_status_t c =
            api::check_fields(__func__, "swy_worker_params_t", fields, api::kWorkerParamFields);
        c != SWY_OK) {
        return c;
    }
    swy_worker_params_t p{};  // normalised: the core reads every field
    p.field_mask = api::kWorkerParamFields;
    p.thread_mode = (fields & SWY_WORKER_PARAM_FIELD_THREAD_MODE) != 0 ? params->thread_mode
                                                                       : SWY_THREAD_MODE_SINGLE;
    if (p.thread_mode != SWY_THREAD_MODE_SINGLE && p.thread_mode != SWY_THREAD_MODE_MULTI) {
        return api::invalid(__func__, "unknown thread_mode");
    }
    core::Worker* w = nullptr;
    std::string why;
    Status s = core::Worker::create(reinterpret_cast<core::Context*>(context), &p, &w, &why);
    if (s != Status::kOk) {
        common::log_printf(common::LogLevel::kError, "swy_worker_create: %s", why.c_str());
        return api::to_c(s);
    }
    *worker = reinterpret_cast<swy_worker_h>(w);
    return SWY_OK;
}

void swy_worker_destroy(swy_worker_h worker) {
    core::Worker* w = api::worker_of(worker);
    if (w != nullptr && !core::Worker::usable(w)) {
        // A fork()ed child's copy: let go of it without touching the parent's lanes.
        common::log_printf(common::LogLevel::kInfo,
                           "swy_worker_destroy: a worker inherited through fork(); this "
                           "process's copy is dropped without closing anything (the creating "
                           "process's worker is unaffected)");
        core::Worker::abandon(w);
        return;
    }
    delete w;
}

unsigned swy_worker_progress(swy_worker_h worker) {
    core::Worker* w = api::worker_of(worker);
    if (__builtin_expect(!core::Worker::usable(w), 0)) return api::progress_refused(w);
    return api::with_worker<progress_body>(w);
}

swy_status_t swy_worker_get_efd(swy_worker_h worker, int* fd) {
    if (worker == nullptr || fd == nullptr) return api::invalid(__func__, "NULL argument");
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    return api::to_c(w->get_efd(fd));
}

swy_status_t swy_worker_arm(swy_worker_h worker) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    return api::to_c(w->arm());
}

swy_status_t swy_worker_wait(swy_worker_h worker, int timeout_ms) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    return api::to_c(w->wait(timeout_ms));
}

swy_status_t swy_worker_signal(swy_worker_h worker) {
    // No log call on the error path either: this must stay async-signal-safe.
    if (worker == nullptr) return SWY_ERR_INVALID_PARAM;
    api::worker_of(worker)->signal();
    return SWY_OK;
}

swy_status_t swy_worker_get_address(swy_worker_h worker, void** address, size_t* length) {
    if (worker == nullptr || address == nullptr || length == nullptr) {
        return api::invalid(__func__, "NULL argument");
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    std::vector<uint8_t> bytes = w->address();
    void* p = std::malloc(bytes.size());
    if (p == nullptr) return SWY_ERR_NO_MEMORY;
    std::memcpy(p, bytes.data(), bytes.size());
    *address = p;
    *length = bytes.size();
    return SWY_OK;
}

void swy_worker_release_address(swy_worker_h, void* address) { std::free(address); }

swy_status_t swy_worker_query(swy_worker_h worker, swy_worker_attr_t* attr) {
    if (worker == nullptr || attr == nullptr) return api::invalid(__func__, "NULL argument");
    if (swy_status_t c = api::check_fields(__func__, "swy_worker_attr_t", attr->field_mask,
                                           api::kWorkerAttrFields);
        c != SWY_OK) {
        return c;
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    w->query(attr);
    return SWY_OK;
}

swy_status_t swy_ep_create(swy_worker_h worker, const swy_ep_params_t* in, swy_ep_h* ep) {
    if (worker == nullptr || in == nullptr || ep == nullptr) {
        return api::invalid(__func__, "worker, params and ep must not be NULL");
    }
    if (swy_status_t c =
            api::check_fields(__func__, "swy_ep_params_t", in->field_mask, api::kEpParamFields);
        c != SWY_OK) {
        return c;
    }
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    const swy_ep_params_t normal = api::normalized(*in);
    const swy_ep_params_t* params = &normal;
    constexpr uint32_t kConnected = SWY_EP_FLAG_SOCKADDR | SWY_EP_FLAG_CONN_REQUEST;
    constexpr uint32_t kKnown =
        SWY_EP_FLAG_PIO_FIRST | SWY_EP_FLAG_NO_PIO | kConnected | SWY_EP_FLAG_AUTH_KEY;
    if ((params->flags & ~kKnown) != 0 ||
        ((params->flags & SWY_EP_FLAG_PIO_FIRST) && (params->flags & SWY_EP_FLAG_NO_PIO)) ||
        (params->flags & kConnected) == kConnected ||
        ((params->flags & SWY_EP_FLAG_AUTH_KEY) && !(params->flags & SWY_EP_FLAG_SOCKADDR))) {
        return api::invalid(__func__, "unknown or contradictory flags");
    }
    // A flag that names a field without that field's bit: a caller that forgot the bit, whose
    // field would otherwise be ignored in silence.
    const auto flag_without_field = [&](uint32_t flag, uint64_t field) {
        return (params->flags & flag) != 0 && (params->field_mask & field) == 0;
    };
    if (flag_without_field(SWY_EP_FLAG_SOCKADDR, SWY_EP_PARAM_FIELD_SOCKADDR) ||
        flag_without_field(SWY_EP_FLAG_CONN_REQUEST, SWY_EP_PARAM_FIELD_CONN_REQUEST) ||
        flag_without_field(SWY_EP_FLAG_AUTH_KEY, SWY_EP_PARAM_FIELD_AUTH_KEY)) {
        return api::invalid(__func__,
                            "SWY_EP_FLAG_SOCKADDR, _CONN_REQUEST and _AUTH_KEY need their field's "
                            "bit in field_mask (SWY_EP_PARAM_FIELD_SOCKADDR, _CONN_REQUEST, "
                            "_AUTH_KEY)");
    }
    // The sockaddr/conn_request fields exist only in callers that set one of these flags.
    if ((params->flags & kConnected) != 0) return api::ep_create_connected(worker, params, ep);
    if (params->remote_address == nullptr || params->remote_address_length == 0) {
        return api::invalid(__func__,
                            "params->remote_address is required (with "
                            "SWY_EP_PARAM_FIELD_REMOTE_ADDRESS in field_mask)");
    }
    WorkerGuard guard(w);
    core::Endpoint* e = nullptr;
    std::string why;
    Status s = w->create_endpoint(*params, &e, &why);
    if (s != Status::kOk) {
        common::log_printf(common::LogLevel::kError, "swy_ep_create: %s", why.c_str());
        return api::to_c(s);
    }
    *ep = api::handle_of(e);
    return SWY_OK;
}

swy_status_t swy_ep_close_nb(swy_ep_h ep, swy_ep_close_mode_t mode, swy_request_h* req) {
    if (ep == nullptr || req == nullptr) return api::invalid(__func__, "NULL argument");
    if (mode != SWY_EP_CLOSE_FLUSH && mode != SWY_EP_CLOSE_FORCE) {
        return api::invalid(__func__, "unknown close mode");
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    core::Worker* w = e->worker();
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    Status s = w->close_endpoint(e, mode, &r);
    *req = api::handle_of(r);
    return api::to_c(s);
}

swy_status_t swy_ep_query(swy_ep_h ep, swy_ep_attr_t* attr) {
    if (ep == nullptr || attr == nullptr) return api::invalid(__func__, "NULL argument");
    if (swy_status_t c =
            api::check_fields(__func__, "swy_ep_attr_t", attr->field_mask, api::kEpAttrFields);
        c != SWY_OK) {
        return c;
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    WorkerGuard guard(e->worker());
    const tl::LaneAttr& a = e->lane_attr();
    if ((attr->field_mask & SWY_EP_ATTR_FIELD_LANE) != 0) fill_lane(e, a, attr);
    if ((attr->field_mask & SWY_EP_ATTR_FIELD_PIO_DETAIL) != 0) {
        attr->pio_inline_size = a.pio_inline_max;
        attr->pio_dm_size = a.pio_dm_bytes;
        attr->pio_credits = !a.pio ? 0 : a.pio_credits != 0 ? a.pio_credits : a.credits;
        attr->pio_window = a.pio_window.c_str();
    }
    return SWY_OK;
}

swy_status_t swy_ep_print_protocols(swy_ep_h ep, swy_memtype_t memtype, char* buf, size_t buflen) {
    if (ep == nullptr || buf == nullptr || buflen == 0) {
        return api::invalid(__func__, "NULL argument");
    }
    if (static_cast<unsigned>(memtype) >= mem::kMemTypeCount) {
        return api::invalid(__func__, "unknown memory type");
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    WorkerGuard guard(e->worker());
    const auto type =
        memtype == SWY_MEMTYPE_UNKNOWN ? mem::MemType::kHost : static_cast<mem::MemType>(memtype);
    if (e->table(type).empty()) return SWY_ERR_UNSUPPORTED;  // that memory type is not loaded
    std::string text = e->table(type).print();
    std::strncpy(buf, text.c_str(), buflen - 1);
    buf[buflen - 1] = '\0';
    return text.size() < buflen ? SWY_OK : SWY_ERR_NO_RESOURCE;
}

}  // extern "C"
