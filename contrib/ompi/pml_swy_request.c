/* pml swy: request class, completion callbacks, free and cancel. */
#include "pml_swy_request.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"

static int mca_pml_swy_request_free(ompi_request_t** rptr);
static int mca_pml_swy_request_cancel(ompi_request_t* ompi_req, int complete);

static void mca_pml_swy_request_construct(mca_pml_swy_request_t* req) {
    req->ompi.req_type = OMPI_REQUEST_PML;
    req->ompi.req_start = mca_pml_swy_start;
    req->ompi.req_free = mca_pml_swy_request_free;
    req->ompi.req_cancel = mca_pml_swy_request_cancel;
    req->swy_req = NULL;
    req->flags = 0;
    req->owners_done = 0;
    req->tmp_buf = NULL;
    req->tmp_len = 0;
    req->datatype = NULL;
}

static void mca_pml_swy_request_destruct(mca_pml_swy_request_t* req) {
    req->ompi.req_state = OMPI_REQUEST_INVALID;
}

OBJ_CLASS_INSTANCE(mca_pml_swy_request_t, ompi_request_t, mca_pml_swy_request_construct,
                   mca_pml_swy_request_destruct);

int mca_pml_swy_mpi_error(swy_status_t status) {
    switch (status) {
        case SWY_OK: return MPI_SUCCESS;
        case SWY_ERR_MESSAGE_TRUNCATED: return MPI_ERR_TRUNCATE;
        case SWY_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
        case SWY_ERR_INVALID_PARAM: return MPI_ERR_ARG;
        case SWY_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
        default:
            /* Lost peers, transport I/O errors: Open MPI 4.1 has no MPI_ERR_PROC_FAILED. */
            return MPI_ERR_INTERN;
    }
}

void mca_pml_swy_request_drop_tmp(mca_pml_swy_request_t* req) {
    if (req->flags & PML_SWY_REQ_TMP_BSEND) {
        mca_pml_base_bsend_request_free(req->tmp_buf);
    }
    req->flags &= ~(unsigned)PML_SWY_REQ_TMP_BSEND;
    req->tmp_buf = NULL;
}

void mca_pml_swy_request_release(mca_pml_swy_request_t* req) {
    mca_pml_swy_request_drop_tmp(req);
    if (req->datatype != NULL) {
        OMPI_DATATYPE_RELEASE(req->datatype);
        req->datatype = NULL;
    }
    if (req->swy_req != NULL) {
        swy_request_free(req->swy_req);
        req->swy_req = NULL;
    }
    /* Clears the Fortran handle if MPI_Request_c2f made one (else it would dangle). */
    OMPI_REQUEST_FINI(&req->ompi);
    opal_free_list_return(&ompi_pml_swy.requests, &req->ompi.super);
}

/* Switchyard is done with @p req, whose status is set: complete it for Open MPI, then release
 * it if Open MPI already freed it. Completing first is what makes this safe: a thread waiting
 * on the request may free it as soon as it is complete, and then finds our bit unset and
 * leaves the release to us. */
static inline void mca_pml_swy_request_finish(mca_pml_swy_request_t* req) {
    ompi_request_complete(&req->ompi, true);
    if (OPAL_THREAD_FETCH_OR32(&req->owners_done, PML_SWY_DONE_SWY) & PML_SWY_DONE_OMPI) {
        mca_pml_swy_request_release(req);
    }
}

void mca_pml_swy_send_done(mca_pml_swy_request_t* req, swy_status_t status) {
    status = mca_pml_swy_send_result(status);
    mca_pml_swy_request_drop_tmp(req);
    if (OPAL_UNLIKELY(req->flags & PML_SWY_REQ_DETACHED)) {
        /* A buffered send: the user's call completed when the data was copied, so nobody
         * will look at this request again. */
        if (status != SWY_OK) {
            opal_output(0, "pml swy: a buffered send failed: %s", swy_status_string(status));
        }
        mca_pml_swy_request_release(req);
        return;
    }
    mca_pml_swy_set_send_status(&req->ompi.req_status, status);
    mca_pml_swy_request_finish(req);
}

void mca_pml_swy_recv_done(mca_pml_swy_request_t* req, swy_status_t status,
                           const swy_tag_recv_info_t* info) {
    mca_pml_swy_set_recv_status(&req->ompi.req_status, status, info);
    mca_pml_swy_request_finish(req);
}

/* The Switchyard request is not freed here but with the PML request (release): while the
 * application holds the MPI request, MPI_Cancel may still name it, and a freed Switchyard
 * request could already stand for another operation. */
void mca_pml_swy_send_cb(swy_request_h sreq, swy_status_t status, void* user_data) {
    (void)sreq;
    mca_pml_swy_send_done((mca_pml_swy_request_t*)user_data, status);
}

void mca_pml_swy_recv_cb(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                         void* user_data) {
    (void)sreq;
    mca_pml_swy_recv_done((mca_pml_swy_request_t*)user_data, status, info);
}

static int mca_pml_swy_request_free(ompi_request_t** rptr) {
    mca_pml_swy_request_t* req = (mca_pml_swy_request_t*)*rptr;
    *rptr = MPI_REQUEST_NULL;
    /* Still in Switchyard's hands (MPI_Request_free on an active request): the completion
     * callback releases it. */
    if (OPAL_THREAD_FETCH_OR32(&req->owners_done, PML_SWY_DONE_OMPI) & PML_SWY_DONE_SWY) {
        mca_pml_swy_request_release(req);
    }
    return OMPI_SUCCESS;
}

static int mca_pml_swy_request_cancel(ompi_request_t* ompi_req, int complete) {
    mca_pml_swy_request_t* req = (mca_pml_swy_request_t*)ompi_req;
    (void)complete;
    /* Only unmatched receives can be canceled: Switchyard then completes the request with
     * SWY_ERR_CANCELED from its next progress, and the status says _cancelled. Sends and
     * matched receives answer SWY_ERR_BUSY and simply complete normally (MPI allows that;
     * pml ucx behaves the same); a completed one answers SWY_OK and nothing changes. */
    if (req->swy_req != NULL && !(req->flags & PML_SWY_REQ_SEND)) {
        (void)swy_request_cancel(ompi_pml_swy.worker, req->swy_req);
    }
    return OMPI_SUCCESS;
}

static int mca_pml_swy_completed_request_free(ompi_request_t** rptr) {
    *rptr = MPI_REQUEST_NULL; /* shared and permanently complete: nothing to release */
    return OMPI_SUCCESS;
}

static int mca_pml_swy_completed_request_cancel(ompi_request_t* req, int complete) {
    (void)req;
    (void)complete;
    return OMPI_SUCCESS;
}

void mca_pml_swy_completed_request_init(ompi_request_t* req) {
    OBJ_CONSTRUCT(req, ompi_request_t);
    OMPI_REQUEST_INIT(req, false);
    req->req_type = OMPI_REQUEST_PML;
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_start = mca_pml_swy_start;
    req->req_free = mca_pml_swy_completed_request_free;
    req->req_cancel = mca_pml_swy_completed_request_cancel;
    req->req_mpi_object.comm = &ompi_mpi_comm_world.comm;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = false;
    ompi_request_complete(req, false);
}

void mca_pml_swy_completed_request_fini(ompi_request_t* req) {
    req->req_state = OMPI_REQUEST_INVALID;
    OMPI_REQUEST_FINI(req);
    OBJ_DESTRUCT(req);
}
