/* Worker: create/destroy, progress (Switchyard progress, then the queued completions), query,
 * addresses, wake-up (efd/arm/wait/signal), fence and flush. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ucp_shim.h"
#include "ucp_shim_addr.h"
#include "ucp_shim_internal.h"

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t* params,
                               ucp_worker_h* worker_p) {
    if (context == NULL || worker_p == NULL) return UCS_ERR_INVALID_PARAM;
    struct ucp_worker* w = calloc(1, sizeof(*w));
    if (w == NULL) return UCS_ERR_NO_MEMORY;
    w->context = context;
    w->thread_mode = UCS_THREAD_MODE_SINGLE;
    snprintf(w->name, sizeof(w->name), "%.40s:%d", context->name, (int)getpid());
    if (params != NULL) {
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_THREAD_MODE)
            w->thread_mode = params->thread_mode;
        if ((params->field_mask & UCP_WORKER_PARAM_FIELD_NAME) && params->name != NULL)
            snprintf(w->name, sizeof(w->name), "%s", params->name);
        /* CPU_MASK, EVENTS, USER_DATA, EVENT_FD, FLAGS, AM_ALIGNMENT, CLIENT_ID: hints, or
         * features Switchyard provides regardless (the event fd is always there). */
    }
    if (w->thread_mode > UCS_THREAD_MODE_MULTI) w->thread_mode = UCS_THREAD_MODE_MULTI;
    swy_worker_params_t wp = {.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = w->thread_mode == UCS_THREAD_MODE_MULTI
                                                 ? SWY_THREAD_MODE_MULTI
                                                 : SWY_THREAD_MODE_SINGLE};
    w->locked = w->thread_mode == UCS_THREAD_MODE_MULTI;
    pthread_mutex_init(&w->lock, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    w->uid = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)w;
    swy_status_t st = swy_worker_create(context->swy, &wp, &w->swy);
    if (st != SWY_OK) {
        ucp_shim_error("ucp_worker_create", "%s", swy_status_string(st));
        pthread_mutex_destroy(&w->lock);
        free(w);
        return ucp_shim_status(st);
    }
    ucs_status_t s = ucp_shim_rma_worker_init(w);
    if (s != UCS_OK) {
        swy_worker_destroy(w->swy);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return s;
    }
    *worker_p = w;
    return UCS_OK;
}

void ucp_worker_destroy(ucp_worker_h w) {
    if (w == NULL) return;
    ucp_shim_rma_worker_cleanup(w);
    /* Endpoints the consumer did not close go with force, as UCX does. */
    while (w->eps != NULL)
        ucp_shim_ep_drop(w->eps, 1);
    ucp_shim_closes_drop(w);
    swy_worker_destroy(w->swy); /* outstanding requests complete (canceled) into the queue */
    ucp_shim_requests_destroy(w);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

unsigned ucp_worker_progress(ucp_worker_h w) {
    unsigned n = swy_worker_progress(w->swy);
    n += ucp_shim_rma_progress(w);
    if (w->closing != NULL) n += ucp_shim_closes_progress(w);
    n += ucp_shim_deliver_completions(w);
    return n;
}

ucs_status_t ucp_worker_query(ucp_worker_h w, ucp_worker_attr_t* attr) {
    if (w == NULL || attr == NULL) return UCS_ERR_INVALID_PARAM;
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_THREAD_MODE) attr->thread_mode = w->thread_mode;
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_ADDRESS) {
        ucs_status_t s = ucp_worker_get_address(w, &attr->address, &attr->address_length);
        if (s != UCS_OK) return s;
    }
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER) attr->max_am_header = 4096;
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_NAME)
        snprintf(attr->name, sizeof(attr->name), "%.*s", (int)sizeof(attr->name) - 1, w->name);
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING) attr->max_debug_string = 128;
    /* ADDRESS_FLAGS only qualifies ADDRESS: the address is always the full one. */
    return UCS_OK;
}

void ucp_worker_print_info(ucp_worker_h w, FILE* stream) {
    if (w == NULL || stream == NULL) return;
    swy_worker_attr_t a = {.field_mask = SWY_WORKER_ATTR_FIELD_PIO};
    swy_worker_query(w->swy, &a);
    fprintf(stream, "#\n# UCP worker '%s' on Switchyard %s\n#\n", w->name, swy_version_string());
    fprintf(stream, "#   thread mode: %s\n",
            w->thread_mode == UCS_THREAD_MODE_MULTI        ? "multi"
            : w->thread_mode == UCS_THREAD_MODE_SERIALIZED ? "serialized"
                                                           : "single");
    fprintf(stream, "#   pio endpoints: %u of %u\n#\n", a.pio_endpoints_granted,
            a.pio_endpoints_max);
}

ucs_status_t ucp_worker_get_address(ucp_worker_h w, ucp_address_t** address_p,
                                    size_t* address_length_p) {
    if (w == NULL || address_p == NULL || address_length_p == NULL) return UCS_ERR_INVALID_PARAM;
    void* blob;
    size_t len;
    swy_status_t st = swy_worker_get_address(w->swy, &blob, &len);
    if (st != SWY_OK) return ucp_shim_status(st);
    ucp_shim_addr_header_t* h = malloc(sizeof(*h) + len);
    if (h == NULL) {
        swy_worker_release_address(w->swy, blob);
        return UCS_ERR_NO_MEMORY;
    }
    h->magic = UCP_SHIM_ADDR_MAGIC;
    h->version = UCP_SHIM_ADDR_VERSION;
    h->reserved = 0;
    h->swy_length = (uint32_t)len;
    h->uid = w->uid;
    memcpy(h + 1, blob, len);
    swy_worker_release_address(w->swy, blob);
    *address_p = (ucp_address_t*)h;
    *address_length_p = sizeof(*h) + len;
    return UCS_OK;
}

void ucp_worker_release_address(ucp_worker_h w, ucp_address_t* address) {
    (void)w;
    free(address);
}

ucs_status_t ucp_worker_address_query(ucp_address_t* address, ucp_worker_address_attr_t* attr) {
    if (address == NULL || attr == NULL) return UCS_ERR_INVALID_PARAM;
    const ucp_shim_addr_header_t* h = (const ucp_shim_addr_header_t*)address;
    if (h->magic != UCP_SHIM_ADDR_MAGIC) return UCS_ERR_INVALID_ADDR;
    if (attr->field_mask & UCP_WORKER_ADDRESS_ATTR_FIELD_UID) attr->worker_uid = h->uid;
    return UCS_OK;
}

ucs_status_t ucp_worker_get_efd(ucp_worker_h w, int* fd) {
    if (w == NULL || fd == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_status(swy_worker_get_efd(w->swy, fd));
}

ucs_status_t ucp_worker_arm(ucp_worker_h w) {
    if (w == NULL) return UCS_ERR_INVALID_PARAM;
    if (w->queue_head != NULL || w->closing != NULL) return UCS_ERR_BUSY;
    return ucp_shim_status(swy_worker_arm(w->swy));
}

ucs_status_t ucp_worker_wait(ucp_worker_h w) {
    if (w == NULL) return UCS_ERR_INVALID_PARAM;
    if (w->queue_head != NULL) return UCS_OK;
    return ucp_shim_status(swy_worker_wait(w->swy, -1));
}

void ucp_worker_wait_mem(ucp_worker_h w, void* address) {
    (void)address;
    /* No memory-wait instruction here: yield once, as UCX does without one. */
    if (w != NULL) sched_yield();
}

ucs_status_t ucp_worker_signal(ucp_worker_h w) {
    if (w == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_status(swy_worker_signal(w->swy));
}

ucs_status_t ucp_worker_fence(ucp_worker_h w) {
    if (w == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_status(swy_worker_fence(w->swy));
}

/* Posts a worker flush for @p req (callback kind already set). */
static ucs_status_ptr_t worker_flush(ucp_worker_h w, ucp_shim_request_t* req, int no_imm) {
    swy_request_params_t p = {
        .field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA,
        .send_cb = ucp_shim_swy_send_cb,
        .user_data = req};
    swy_request_h sreq = NULL;
    swy_status_t st = swy_worker_flush_nb(w->swy, &p, &sreq);
    return ucp_shim_req_post_result(req, st, sreq, no_imm);
}

ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h w, const ucp_request_param_t* param) {
    if (w == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return worker_flush(w, req, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h w, unsigned flags, ucp_send_callback_t cb) {
    (void)flags; /* reserved in UCX */
    if (w == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, NULL, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->cb.send = cb;
        req->complete = ucp_shim_complete_send;
    }
    return worker_flush(w, req, 0);
}

ucs_status_t ucp_worker_flush(ucp_worker_h w) {
    return ucp_shim_wait_blocking(w, ucp_worker_flush_nb(w, 0, NULL));
}
