/*
 * pml swy requests: an ompi_request_t subclass taken from ompi_pml_swy.requests.
 *
 * Lifetime: a request is handed to Switchyard as the user_data of one operation; the
 * Switchyard completion callback fills the MPI status and completes the ompi request. The
 * request goes back to the free list when both have happened: Open MPI freed it (req_free,
 * normally right after MPI_Wait/Test, but MPI_Request_free may come first) and Switchyard
 * finished with it. Each side sets its bit in `owners_done` with one atomic fetch-or (a plain
 * one without MPI_THREAD_MULTIPLE); the side that finds the other bit already set releases.
 */
#ifndef PML_SWY_REQUEST_H
#define PML_SWY_REQUEST_H

#include "pml_swy.h"

enum {
    PML_SWY_REQ_SEND = 1u << 0,     /**< a send (else a receive) */
    PML_SWY_REQ_DETACHED = 1u << 2, /**< buffered send: nobody waits, callback releases */
    PML_SWY_REQ_TMP_BSEND = 1u << 5 /**< tmp_buf came from the MPI_Buffer_attach pool */
};

/** Bits of mca_pml_swy_request_t.owners_done. */
enum {
    PML_SWY_DONE_SWY = 1, /**< Switchyard finished (or never had) the operation */
    PML_SWY_DONE_OMPI = 2 /**< Open MPI called req_free */
};

typedef struct mca_pml_swy_request {
    ompi_request_t ompi;          /**< must be first: Open MPI sees only this */
    swy_request_h swy_req;        /**< the Switchyard operation (kept until release), or NULL */
    unsigned flags;               /**< PML_SWY_REQ_* */
    volatile int32_t owners_done; /**< PML_SWY_DONE_*: who has finished with the request */
    void* tmp_buf;                /**< buffered send: the packed copy in the attached buffer */
    size_t tmp_len;

    /* The call's arguments, for restarting a persistent request (which retains datatype).
     * A non-contiguous operation needs none of them: its generic datatype state holds the
     * buffer and retains the type until Switchyard is done. */
    void* buf;
    size_t count;
    ompi_datatype_t* datatype;
    swy_tag_t tag;
    swy_tag_t mask; /**< receives */
    swy_ep_h ep;    /**< persistent sends */
    mca_pml_base_send_mode_t mode;

    /** The Switchyard request of the operation in flight lives here (SWY_REQ_PARAM_FIELD_REQUEST:
     *  ompi_pml_swy.swy_request_size bytes, which the free list's element size includes), so
     *  one allocation holds both. Switchyard hands it back when swy_req is freed (release). */
    _Alignas(16) unsigned char swy_space[];
} mca_pml_swy_request_t;

/** Put the request's Switchyard request in its own swy_space (when the PML found room for
 *  it at init). */
static inline void mca_pml_swy_request_memory(mca_pml_swy_request_t* req,
                                              swy_request_params_t* params) {
    if (OPAL_LIKELY(ompi_pml_swy.swy_request_size != 0)) {
        params->field_mask |= SWY_REQ_PARAM_FIELD_REQUEST;
        params->request = req->swy_space;
        params->request_size = ompi_pml_swy.swy_request_size;
    }
}

OBJ_CLASS_DECLARATION(mca_pml_swy_request_t);

/** Make @p req (from the free list) an active, non-persistent request of @p comm for Open MPI.
 *  Leaves swy_req, flags and the PML fields alone (mca_pml_swy_request_take sets them). */
static inline void mca_pml_swy_request_activate(mca_pml_swy_request_t* req,
                                                ompi_communicator_t* comm) {
    OMPI_REQUEST_INIT(&req->ompi, false);
    req->ompi.req_state = OMPI_REQUEST_ACTIVE;
    req->ompi.req_mpi_object.comm = comm;
}

/** A request from the free list with blank PML fields and @p flags, not yet made known to
 *  Open MPI (mca_pml_swy_request_activate does that); NULL if out of memory. */
static inline mca_pml_swy_request_t* mca_pml_swy_request_take(unsigned flags) {
    mca_pml_swy_request_t* req = (mca_pml_swy_request_t*)opal_free_list_get(&ompi_pml_swy.requests);
    if (OPAL_UNLIKELY(req == NULL)) {
        return NULL;
    }
    req->swy_req = NULL;
    req->flags = flags;
    req->owners_done = 0;
    req->tmp_buf = NULL;
    req->datatype = NULL;
    return req;
}

/** A fresh, active, non-persistent request for communicator @p comm; NULL if out of memory. */
static inline mca_pml_swy_request_t* mca_pml_swy_request_get(ompi_communicator_t* comm) {
    mca_pml_swy_request_t* req = mca_pml_swy_request_take(0);
    if (OPAL_LIKELY(req != NULL)) {
        mca_pml_swy_request_activate(req, comm);
    }
    return req;
}

/** Drop what the request holds (temporary buffer, datatype) and return it to the free list. */
void mca_pml_swy_request_release(mca_pml_swy_request_t* req);

/** Return a finished buffered send's copy to the MPI_Buffer_attach pool. */
void mca_pml_swy_request_drop_tmp(mca_pml_swy_request_t* req);

/** Switchyard send callback (user_data: the mca_pml_swy_request_t). */
void mca_pml_swy_send_cb(swy_request_h sreq, swy_status_t status, void* user_data);
/** Switchyard receive callback (user_data: the mca_pml_swy_request_t). */
void mca_pml_swy_recv_cb(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                         void* user_data);

/** Finish a send: status, temporary buffer, then ompi completion (or release if detached). */
void mca_pml_swy_send_done(mca_pml_swy_request_t* req, swy_status_t status);
/** Finish a receive: status from @p info, then ompi completion. */
void mca_pml_swy_recv_done(mca_pml_swy_request_t* req, swy_status_t status,
                           const swy_tag_recv_info_t* info);

/**
 * Switchyard tells a sender when the receiver truncated its message (rendezvous). In MPI that
 * is the receiver's error only: the send itself succeeded.
 */
static inline swy_status_t mca_pml_swy_send_result(swy_status_t status) {
    return status == SWY_ERR_MESSAGE_TRUNCATED ? SWY_OK : status;
}

/** Fill a request's status for a send that ended with @p status. */
static inline void mca_pml_swy_set_send_status(ompi_status_public_t* st, swy_status_t status) {
    st->_cancelled = false;
    st->MPI_ERROR = OPAL_LIKELY(status == SWY_OK) ? MPI_SUCCESS : mca_pml_swy_mpi_error(status);
}

/**
 * Fill a request's (internal) status for a receive that ended with @p status.
 * A canceled receive reports _cancelled and MPI_SUCCESS; a truncated one MPI_ERR_TRUNCATE
 * with the sender's source, tag and full length.
 */
static inline void mca_pml_swy_set_recv_status(ompi_status_public_t* st, swy_status_t status,
                                               const swy_tag_recv_info_t* info) {
    if (OPAL_LIKELY(status == SWY_OK || status == SWY_ERR_MESSAGE_TRUNCATED)) {
        st->MPI_SOURCE = pml_swy_tag_source(info->sender_tag);
        st->MPI_TAG = pml_swy_tag_mpi_tag(info->sender_tag);
        st->_ucount = info->length;
        st->_cancelled = false;
        st->MPI_ERROR = status == SWY_OK ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
    } else if (status == SWY_ERR_CANCELED) {
        st->_cancelled = true;
        st->MPI_ERROR = MPI_SUCCESS;
    } else {
        st->_cancelled = false;
        st->MPI_ERROR = mca_pml_swy_mpi_error(status);
    }
}

/**
 * Fill a user-visible status of a blocking call (MPI_Recv, MPI_Probe...). Per the MPI
 * standard MPI_ERROR is left alone there: the error is the return value.
 * @return the MPI error for the call.
 */
static inline int mca_pml_swy_set_public_status(ompi_status_public_t* st, swy_status_t status,
                                                const swy_tag_recv_info_t* info) {
    if (st == MPI_STATUS_IGNORE) {
        if (OPAL_LIKELY(status == SWY_OK || status == SWY_ERR_CANCELED)) {
            return MPI_SUCCESS;
        }
        return status == SWY_ERR_MESSAGE_TRUNCATED ? MPI_ERR_TRUNCATE
                                                   : mca_pml_swy_mpi_error(status);
    }
    int saved = st->MPI_ERROR;
    mca_pml_swy_set_recv_status(st, status, info);
    int rc = st->MPI_ERROR;
    st->MPI_ERROR = saved;
    return rc;
}

/** Prepare ompi_pml_swy.completed_send_req (at init) and tear it down (at cleanup). */
void mca_pml_swy_completed_request_init(ompi_request_t* req);
void mca_pml_swy_completed_request_fini(ompi_request_t* req);

#endif /* PML_SWY_REQUEST_H */
