/*
 * osc swy: the MPI requests of rput/rget (and the accumulate family's request forms), and the
 * Switchyard completion callbacks that count operations still outstanding per target.
 *
 * A request holds one reference per Switchyard operation still running plus one for its
 * creator; it completes when the last is dropped. MPI_Request_free may come first: then the
 * completion releases it (the bits in `owners` say who is done, so exactly one side frees).
 */
#include "osc_swy.h"

enum { OWNER_OMPI_DONE = 1, OWNER_OSC_DONE = 2 };

/* Kept beside the public struct so that osc_swy.h stays as the accumulate code knows it. */
typedef struct request_impl {
    ompi_osc_swy_request_t pub;
    int32_t owners;
} request_impl_t;

static int request_free(ompi_request_t** rptr);
static int request_cancel(ompi_request_t* req, int complete) {
    (void)req;
    (void)complete;
    return OMPI_SUCCESS; /* one-sided operations cannot be cancelled */
}

static void request_construct(ompi_osc_swy_request_t* req) {
    req->super.req_type = OMPI_REQUEST_WIN;
    req->super.req_free = request_free;
    req->super.req_cancel = request_cancel;
    req->outstanding = 0;
    req->error = OMPI_SUCCESS;
    req->peer = NULL;
}

OBJ_CLASS_INSTANCE(ompi_osc_swy_request_t, ompi_request_t, request_construct, NULL);

static void request_release(ompi_osc_swy_request_t* req) {
    OMPI_REQUEST_FINI(&req->super);
    OBJ_DESTRUCT(req);
    free(req);
}

ompi_osc_swy_request_t* ompi_osc_swy_request_alloc(ompi_osc_swy_peer_t* peer) {
    request_impl_t* impl = calloc(1, sizeof(*impl));
    if (impl == NULL) {
        return NULL;
    }
    ompi_osc_swy_request_t* req = &impl->pub;
    OBJ_CONSTRUCT(req, ompi_osc_swy_request_t);
    OMPI_REQUEST_INIT(&req->super, false);
    req->super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->outstanding = 1;
    req->peer = peer;
    impl->owners = 0;
    return req;
}

static int request_free(ompi_request_t** rptr) {
    request_impl_t* impl = (request_impl_t*)*rptr;
    *rptr = MPI_REQUEST_NULL;
    if (__atomic_fetch_or(&impl->owners, OWNER_OMPI_DONE, __ATOMIC_ACQ_REL) & OWNER_OSC_DONE) {
        request_release(&impl->pub);
    }
    return OMPI_SUCCESS;
}

void ompi_osc_swy_request_release_ref(ompi_osc_swy_request_t* req) {
    if (__atomic_sub_fetch(&req->outstanding, 1, __ATOMIC_ACQ_REL) != 0) {
        return;
    }
    request_impl_t* impl = (request_impl_t*)req;
    if (req->error != OMPI_SUCCESS) {
        req->super.req_status.MPI_ERROR = ompi_errcode_get_mpi_code(req->error);
    }
    ompi_request_complete(&req->super, true);
    if (__atomic_fetch_or(&impl->owners, OWNER_OSC_DONE, __ATOMIC_ACQ_REL) & OWNER_OMPI_DONE) {
        request_release(req);
    }
}

void ompi_osc_swy_request_swy_cb(swy_request_h sreq, swy_status_t status, void* user_data) {
    ompi_osc_swy_request_t* req = (ompi_osc_swy_request_t*)user_data;
    (void)sreq;
    if (status != SWY_OK && req->error == OMPI_SUCCESS) {
        req->error = ompi_osc_swy_error(status);
    }
    if (req->peer != NULL) {
        ompi_osc_swy_peer_swy_cb(sreq, status, req->peer);
    }
    ompi_osc_swy_request_release_ref(req);
}

void ompi_osc_swy_peer_swy_cb(swy_request_h sreq, swy_status_t status, void* user_data) {
    ompi_osc_swy_peer_t* peer = (ompi_osc_swy_peer_t*)user_data;
    (void)sreq;
    if (status != SWY_OK && peer->error == OMPI_SUCCESS) {
        peer->error = ompi_osc_swy_error(status);
    }
    (void)__atomic_sub_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
}
