/* Helpers shared by both halves of the UCP shim: status translation, logging, datatype and
 * request-parameter translation. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"
#include "ucp_shim_dt.h"

/* The tag receive info and iov layouts are handed through unchanged. */
_Static_assert(sizeof(ucp_tag_recv_info_t) == sizeof(swy_tag_recv_info_t), "recv info layout");
_Static_assert(offsetof(ucp_tag_recv_info_t, length) == offsetof(swy_tag_recv_info_t, length),
               "recv info layout");
_Static_assert(sizeof(ucp_dt_iov_t) == sizeof(swy_dt_iov_t), "iov layout");
_Static_assert(offsetof(ucp_dt_iov_t, length) == offsetof(swy_dt_iov_t, length), "iov layout");
_Static_assert(sizeof(ucp_shim_request_t) % 16 == 0, "request size multiple of 16");

ucs_status_t ucp_shim_status(swy_status_t status) {
    switch (status) {
        case SWY_OK: return UCS_OK;
        case SWY_INPROGRESS: return UCS_INPROGRESS;
        case SWY_ERR_NO_MEMORY: return UCS_ERR_NO_MEMORY;
        case SWY_ERR_INVALID_PARAM: return UCS_ERR_INVALID_PARAM;
        case SWY_ERR_NO_RESOURCE: return UCS_ERR_NO_RESOURCE;
        case SWY_ERR_MESSAGE_TRUNCATED: return UCS_ERR_MESSAGE_TRUNCATED;
        case SWY_ERR_CANCELED: return UCS_ERR_CANCELED;
        case SWY_ERR_UNREACHABLE: return UCS_ERR_UNREACHABLE;
        case SWY_ERR_CONNECTION_RESET: return UCS_ERR_CONNECTION_RESET;
        case SWY_ERR_TIMED_OUT: return UCS_ERR_TIMED_OUT;
        case SWY_ERR_UNSUPPORTED: return UCS_ERR_UNSUPPORTED;
        case SWY_ERR_NO_MESSAGE: return UCS_ERR_NO_MESSAGE;
        case SWY_ERR_IO: return UCS_ERR_IO_ERROR;
        case SWY_ERR_BUSY: return UCS_ERR_BUSY;
        case SWY_ERR_MALFORMED: return UCS_ERR_INVALID_ADDR;
        case SWY_ERR_ENDPOINT_CLOSED: return UCS_ERR_NOT_CONNECTED;
        case SWY_ERR_NOT_FOUND: return UCS_ERR_NO_ELEM;
        case SWY_ERR_ACCESS_DENIED: return UCS_ERR_REJECTED;
    }
    return UCS_ERR_IO_ERROR;
}

swy_status_t ucp_shim_swy_status(ucs_status_t status) {
    switch (status) {
        case UCS_OK: return SWY_OK;
        case UCS_INPROGRESS: return SWY_INPROGRESS;
        case UCS_ERR_NO_MEMORY: return SWY_ERR_NO_MEMORY;
        case UCS_ERR_INVALID_PARAM: return SWY_ERR_INVALID_PARAM;
        case UCS_ERR_NO_RESOURCE: return SWY_ERR_NO_RESOURCE;
        case UCS_ERR_MESSAGE_TRUNCATED: return SWY_ERR_MESSAGE_TRUNCATED;
        case UCS_ERR_CANCELED: return SWY_ERR_CANCELED;
        case UCS_ERR_UNSUPPORTED: return SWY_ERR_UNSUPPORTED;
        default: return SWY_ERR_IO;
    }
}

void ucp_shim_error(const char* call, const char* fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ucp(switchyard): %s: %s\n", call, msg);
}

int ucp_shim_verbose(void) {
    const char* v = getenv("SWY_UCP_VERBOSE");
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

ucs_status_t ucp_shim_datatype(ucp_datatype_t dt, size_t count, swy_datatype_t* swy_dt,
                               size_t* swy_count) {
    switch (dt & UCP_DATATYPE_CLASS_MASK) {
        case UCP_DATATYPE_CONTIG:
            *swy_dt = SWY_DATATYPE_CONTIG;
            *swy_count = count * (size_t)(dt >> UCP_DATATYPE_SHIFT);
            return UCS_OK;
        case UCP_DATATYPE_IOV:
            *swy_dt = SWY_DATATYPE_IOV;
            *swy_count = count;
            return UCS_OK;
        case UCP_DATATYPE_GENERIC: {
            const ucp_shim_generic_dt_t* g = ucp_shim_generic_of(dt);
            *swy_dt = g->swy;
            *swy_count = count;
            return UCS_OK;
        }
        default:
            ucp_shim_error("datatype", "datatype class %u is not supported (strided?)",
                           (unsigned)(dt & UCP_DATATYPE_CLASS_MASK));
            return UCS_ERR_INVALID_PARAM;
    }
}

static swy_memtype_t swy_memtype_of(ucs_memory_type_t t) {
    switch (t) {
        case UCS_MEMORY_TYPE_HOST: return SWY_MEMTYPE_HOST;
        case UCS_MEMORY_TYPE_CUDA: return SWY_MEMTYPE_CUDA;
        default: return SWY_MEMTYPE_UNKNOWN;
    }
}

ucs_status_t ucp_shim_swy_params(ucp_shim_request_t* req, const ucp_request_param_t* param,
                                 size_t count, swy_send_cb_t send_cb, swy_recv_cb_t recv_cb,
                                 swy_request_params_t* out, size_t* swy_count) {
    memset(out, 0, sizeof(*out));
    out->field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    out->send_cb = send_cb;
    out->recv_cb = recv_cb;
    out->user_data = req;
    if (recv_cb != NULL) {
        out->field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
        out->recv_info = (swy_tag_recv_info_t*)&req->recv_info;
    }
    *swy_count = count;
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        swy_datatype_t dt;
        ucs_status_t s = ucp_shim_datatype(param->datatype, count, &dt, swy_count);
        if (s != UCS_OK) return s;
        if (dt != SWY_DATATYPE_CONTIG) {
            out->field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE;
            out->datatype = dt;
        }
    }
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE)) {
        swy_memtype_t mt = swy_memtype_of(param->memory_type);
        if (mt != SWY_MEMTYPE_UNKNOWN) {
            out->field_mask |= SWY_REQ_PARAM_FIELD_MEMTYPE;
            out->memtype = mt;
        }
    }
    return UCS_OK;
}
