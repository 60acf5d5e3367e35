// The field_mask rule at the C API boundary (switchyard.h, above swy_context_params_t): bits
// this library does not know are refused with a log line naming the struct and the bits, and
// a params struct is copied into a normalised one where every field whose bit is clear holds
// its default. The core then reads normalised structs only, so it never sees a field the
// caller did not set. Request params are not copied (every tag message passes them): the core
// reads them through core/request_params.h.
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>

#include "core/request.h"

namespace swy::api {

/// Every bit each struct knows. Append a bit here when a field is appended to the struct
/// (CONTRIBUTING.md, "Adding a field to a params or attr struct").
inline constexpr uint64_t kContextParamFields = SWY_CONTEXT_PARAM_FIELD_CONFIG;
inline constexpr uint64_t kWorkerParamFields = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
inline constexpr uint64_t kWorkerAttrFields =
    SWY_WORKER_ATTR_FIELD_PIO | SWY_WORKER_ATTR_FIELD_REQUEST_SIZE;
inline constexpr uint64_t kEpParamFields =
    SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_ERR_HANDLER |
    SWY_EP_PARAM_FIELD_SOCKADDR | SWY_EP_PARAM_FIELD_CONN_REQUEST | SWY_EP_PARAM_FIELD_AUTH_KEY;
inline constexpr uint64_t kEpAttrFields = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
inline constexpr uint64_t kListenerParamFields =
    SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER |
    SWY_LISTENER_PARAM_FIELD_FLAGS | SWY_LISTENER_PARAM_FIELD_AUTH_KEY;
inline constexpr uint64_t kListenerAttrFields = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
inline constexpr uint64_t kConnRequestAttrFields =
    SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR | SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_UID;

/// Log "<function>: <type>.field_mask has unknown bits 0x.." and return
/// SWY_ERR_INVALID_PARAM. Out of line and cold: only a caller's mistake gets here.
[[gnu::cold]] swy_status_t unknown_fields(const char* function, const char* type, uint64_t unknown);

/// SWY_OK when @p field_mask holds only bits of @p known, else unknown_fields().
inline swy_status_t check_fields(const char* function, const char* type, uint64_t field_mask,
                                 uint64_t known) {
    if (__builtin_expect((field_mask & ~known) != 0, 0)) {
        return unknown_fields(function, type, field_mask & ~known);
    }
    return SWY_OK;
}

/// The size and alignment a request in caller memory needs (swy_worker_query).
inline constexpr size_t kRequestSize = sizeof(core::Request);
inline constexpr size_t kRequestAlignment = alignof(core::Request);

/// Log why the caller's request memory was refused; SWY_ERR_INVALID_PARAM.
[[gnu::cold, gnu::noinline]] swy_status_t refuse_request_memory(const char* function,
                                                                const swy_request_params_t* params);

/// SWY_OK when the caller's request memory (SWY_REQ_PARAM_FIELD_REQUEST, whose bit the caller
/// set) can hold a request: non-NULL, request_size at least kRequestSize, aligned. Else
/// SWY_ERR_INVALID_PARAM with a log line naming @p function and what is wrong.
inline swy_status_t check_request_memory(const char* function, const swy_request_params_t* params) {
    const auto address = reinterpret_cast<uintptr_t>(params->request);
    if (__builtin_expect(address != 0 && params->request_size >= kRequestSize &&
                             (address & (kRequestAlignment - 1)) == 0,
                         1)) {
        return SWY_OK;
    }
    return refuse_request_memory(function, params);
}

/// @p in with every field whose bit is clear set to its default (zero: no flags, no error
/// handler, no address, no key). The field_mask is kept.
swy_ep_params_t normalized(const swy_ep_params_t& in);

/// As above for a listener (no flags, no key; sockaddr and on_connect stay null and are
/// refused by the listener as missing).
swy_listener_params_t normalized(const swy_listener_params_t& in);

}  // namespace swy::api
