// Reading swy_request_params_t under its field_mask: a field is read only when the caller set
// its bit, otherwise its default applies (whatever the struct holds there). Every tag send and
// receive goes through these, so each is one inline test of a bit, never a call.
//
// The API layer has already refused unknown bits (api::unknown_request_fields) before the core
// sees the struct; params may be null everywhere (all defaults).
#pragma once

#include <switchyard/switchyard.h>

#include <cstdint>

namespace swy::core::request_params {

/// Every swy_request_params_t bit this library knows. Append a bit here when a field is
/// appended to the struct (docs: CONTRIBUTING.md, "Adding a field to a params struct").
inline constexpr uint64_t kKnownFields =
    SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
    SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO | SWY_REQ_PARAM_FIELD_DATATYPE |
    SWY_REQ_PARAM_FIELD_REQUEST;

/// True when @p params is non-null and the caller set @p bit.
inline bool has(const swy_request_params_t* params, uint64_t bit) {
    return params != nullptr && (params->field_mask & bit) != 0;
}

/// The bits of @p params this library does not know (0 for null params).
inline uint64_t unknown_bits(const swy_request_params_t* params) {
    return params != nullptr ? params->field_mask & ~kKnownFields : 0;
}

/// enum swy_request_flags (and swy_am_send_flags); default none.
inline uint32_t flags(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_FLAGS) ? params->flags : 0;
}

/// The completion callback for sends, put, get, atomics, flush; default none.
inline swy_send_cb_t send_cb(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_CALLBACK) ? params->send_cb : nullptr;
}

/// The completion callback for receives; default none.
inline swy_recv_cb_t recv_cb(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_CALLBACK) ? params->recv_cb : nullptr;
}

/// What the callback receives; default null.
inline void* user_data(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_USER_DATA) ? params->user_data : nullptr;
}

/// The memory type the caller stated; default SWY_MEMTYPE_UNKNOWN (detect).
inline swy_memtype_t memtype(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_MEMTYPE) ? params->memtype : SWY_MEMTYPE_UNKNOWN;
}

/// Where a receive that completes at once reports what it matched; default nowhere.
inline swy_tag_recv_info_t* recv_info(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_RECV_INFO) ? params->recv_info : nullptr;
}

/// How buffer and count are read; default SWY_DATATYPE_CONTIG.
inline swy_datatype_t datatype(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_DATATYPE) ? params->datatype
                                                     : swy_datatype_t{SWY_DATATYPE_CONTIG};
}

/// The caller's memory for the request (SWY_REQ_PARAM_FIELD_REQUEST); default none (the pool).
/// The API layer has checked its size and alignment (api::check_request_memory).
inline void* request_memory(const swy_request_params_t* params) {
    return has(params, SWY_REQ_PARAM_FIELD_REQUEST) ? params->request : nullptr;
}

}  // namespace swy::core::request_params
