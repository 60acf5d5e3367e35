/* pml swy: persistent requests (MPI_Send_init family, MPI_Recv_init) and MPI_Start. */
#include "pml_swy_recv.h"
#include "pml_swy_send.h"

/* A persistent request starts inactive and complete (MPI_Wait on it returns at once). */
static mca_pml_swy_request_t* mca_pml_swy_persistent_get(void* buf, size_t count,
                                                         ompi_datatype_t* datatype,
                                                         ompi_communicator_t* comm) {
    mca_pml_swy_request_t* req = mca_pml_swy_request_get(comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&req->ompi, true);
    req->ompi.req_state = OMPI_REQUEST_INACTIVE;
    req->owners_done = PML_SWY_DONE_SWY; /* inactive: freeing it releases it at once */
    req->ompi.req_mpi_object.comm = comm;
    req->buf = buf;
    req->count = count;
    req->datatype = datatype;
    OMPI_DATATYPE_RETAIN(datatype); /* released when the request is freed */
    return req;
}

int mca_pml_swy_isend_init(const void* buf, size_t count, ompi_datatype_t* datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm,
                           struct ompi_request_t** request) {
    swy_ep_h ep = mca_pml_swy_get_ep(comm, dst);
    if (OPAL_UNLIKELY(ep == NULL)) {
        return OMPI_ERROR;
    }
    mca_pml_swy_request_t* req = mca_pml_swy_persistent_get((void*)buf, count, datatype, comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->flags = PML_SWY_REQ_SEND;
    req->ep = ep;
    req->tag = mca_pml_swy_comm_send_tag(comm, tag);
    req->mode = mode;
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int mca_pml_swy_irecv_init(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                           struct ompi_communicator_t* comm, struct ompi_request_t** request) {
    mca_pml_swy_request_t* req = mca_pml_swy_persistent_get(buf, count, datatype, comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    pml_swy_recv_tag(tag, src, comm->c_contextid, MPI_ANY_TAG, MPI_ANY_SOURCE, &req->tag,
                     &req->mask);
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

/* Start one persistent send. */
static int mca_pml_swy_start_send(mca_pml_swy_request_t* req) {
    if (req->mode == MCA_PML_BASE_SEND_BUFFERED) {
        int rc = mca_pml_swy_bsend(req->ep, req->buf, req->count, req->datatype, req->tag,
                                   req->ompi.req_mpi_object.comm);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        mca_pml_swy_send_done(req, SWY_OK); /* complete once the data is buffered */
        return OMPI_SUCCESS;
    }
    swy_status_t s = mca_pml_swy_post_send(req, req->ep, req->buf, req->count, req->datatype,
                                           req->tag, req->mode);
    if (s == SWY_OK) {
        mca_pml_swy_send_done(req, SWY_OK);
    } else if (s != SWY_INPROGRESS) {
        opal_output(0, "pml swy: persistent send failed: %s", swy_status_string(s));
        return mca_pml_swy_mpi_error(s);
    }
    return OMPI_SUCCESS;
}

int mca_pml_swy_start(size_t count, ompi_request_t** requests) {
    for (size_t i = 0; i < count; ++i) {
        mca_pml_swy_request_t* req = (mca_pml_swy_request_t*)requests[i];
        if (req == NULL || req->ompi.req_type != OMPI_REQUEST_PML) {
            continue; /* not ours (MPI_Startall may mix request kinds) */
        }
        if (OPAL_UNLIKELY(!(req->owners_done & PML_SWY_DONE_SWY))) {
            return OMPI_ERR_REQUEST; /* still active: MPI forbids starting it again */
        }
        if (req->swy_req != NULL) { /* the previous round's, finished */
            swy_request_free(req->swy_req);
            req->swy_req = NULL;
        }
        req->ompi.req_state = OMPI_REQUEST_ACTIVE;
        req->ompi.req_complete = REQUEST_PENDING;
        req->owners_done = 0;
        int rc = (req->flags & PML_SWY_REQ_SEND)
                     ? mca_pml_swy_start_send(req)
                     : mca_pml_swy_post_recv(req, req->buf, req->count, req->datatype, req->tag,
                                             req->mask, NULL);
        if (OPAL_UNLIKELY(rc != OMPI_SUCCESS)) {
            /* Nothing was started: back to inactive, so it can be freed or started again. */
            req->owners_done = PML_SWY_DONE_SWY;
            req->ompi.req_state = OMPI_REQUEST_INACTIVE;
            req->ompi.req_complete = REQUEST_COMPLETED;
            return rc;
        }
    }
    return OMPI_SUCCESS;
}
