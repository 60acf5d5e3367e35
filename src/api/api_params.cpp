// The field_mask rule at the C API boundary: refusing unknown bits, normalising params.
#include "api/api_params.h"

#include <cinttypes>

#include "common/log.h"

namespace swy::api {

swy_status_t unknown_fields(const char* function, const char* type, uint64_t unknown) {
    common::log_printf(common::LogLevel::kError,
                       "%s: %s.field_mask has bits 0x%" PRIx64
                       " that this library does not know (built against a newer header?)",
                       function, type, unknown);
    return SWY_ERR_INVALID_PARAM;
}

swy_status_t refuse_request_memory(const char* function, const swy_request_params_t* params) {
    if (params->request == nullptr) {
        common::log_printf(common::LogLevel::kError,
                           "%s: SWY_REQ_PARAM_FIELD_REQUEST is set but request is NULL", function);
    } else if (params->request_size < kRequestSize) {
        common::log_printf(common::LogLevel::kError,
                           "%s: request_size %zu is too small for a request in caller memory: "
                           "it needs %zu bytes (swy_worker_query, "
                           "SWY_WORKER_ATTR_FIELD_REQUEST_SIZE)",
                           function, params->request_size, kRequestSize);
    } else {
        common::log_printf(common::LogLevel::kError,
                           "%s: request memory %p is not aligned to %zu bytes (swy_worker_query, "
                           "SWY_WORKER_ATTR_FIELD_REQUEST_SIZE)",
                           function, params->request, kRequestAlignment);
    }
    return SWY_ERR_INVALID_PARAM;
}

swy_ep_params_t normalized(const swy_ep_params_t& in) {
    swy_ep_params_t p{};
    p.field_mask = in.field_mask;
    if ((in.field_mask & SWY_EP_PARAM_FIELD_REMOTE_ADDRESS) != 0) {
        p.remote_address = in.remote_address;
        p.remote_address_length = in.remote_address_length;
    }
    if ((in.field_mask & SWY_EP_PARAM_FIELD_FLAGS) != 0) p.flags = in.flags;
    if ((in.field_mask & SWY_EP_PARAM_FIELD_ERR_HANDLER) != 0) {
        p.err_cb = in.err_cb;
        p.err_arg = in.err_arg;
    }
    if ((in.field_mask & SWY_EP_PARAM_FIELD_SOCKADDR) != 0) {
        p.sockaddr = in.sockaddr;
        p.sockaddr_length = in.sockaddr_length;
    }
    if ((in.field_mask & SWY_EP_PARAM_FIELD_CONN_REQUEST) != 0) p.conn_request = in.conn_request;
    if ((in.field_mask & SWY_EP_PARAM_FIELD_AUTH_KEY) != 0) {
        p.auth_key = in.auth_key;
        p.auth_key_length = in.auth_key_length;
    }
    return p;
}

swy_listener_params_t normalized(const swy_listener_params_t& in) {
    swy_listener_params_t p{};
    p.field_mask = in.field_mask;
    if ((in.field_mask & SWY_LISTENER_PARAM_FIELD_SOCKADDR) != 0) {
        p.sockaddr = in.sockaddr;
        p.sockaddr_length = in.sockaddr_length;
    }
    if ((in.field_mask & SWY_LISTENER_PARAM_FIELD_CONN_HANDLER) != 0) {
        p.on_connect = in.on_connect;
        p.arg = in.arg;
    }
    if ((in.field_mask & SWY_LISTENER_PARAM_FIELD_FLAGS) != 0) p.flags = in.flags;
    if ((in.field_mask & SWY_LISTENER_PARAM_FIELD_AUTH_KEY) != 0) {
        p.auth_key = in.auth_key;
        p.auth_key_length = in.auth_key_length;
    }
    return p;
}

}  // namespace swy::api
