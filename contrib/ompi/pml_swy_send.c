/* pml swy: MPI_Send, MPI_Isend (standard, synchronous, buffered, ready) and their helpers. */
#include "pml_swy_send.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"

#include "pml_swy_datatype.h"

static inline uint32_t mca_pml_swy_send_flags(mca_pml_base_send_mode_t mode) {
    /* Ready mode needs nothing special: a standard send is a correct ready send. */
    return mode == MCA_PML_BASE_SEND_SYNCHRONOUS ? SWY_REQ_FLAG_SYNC : 0;
}

static void mca_pml_swy_send_error(const char* what, swy_status_t s) {
    opal_output(0, "pml swy: %s failed: %s", what, swy_status_string(s));
}

/* mca_pml_swy_post_send's body, inlined into the isend paths (a call, prologue and epilogue
 * less per MPI_Isend). */
static inline swy_status_t mca_pml_swy_post_send_inline(mca_pml_swy_request_t* req, swy_ep_h ep,
                                                        const void* buf, size_t count,
                                                        ompi_datatype_t* datatype, swy_tag_t tag,
                                                        mca_pml_base_send_mode_t mode) {
    void* start;
    size_t length;
    swy_request_params_t params = {
        .field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                      SWY_REQ_PARAM_FIELD_USER_DATA,
        .flags = mca_pml_swy_send_flags(mode),
        .send_cb = mca_pml_swy_send_cb,
        .user_data = req,
    };
    if (OPAL_UNLIKELY(mca_pml_swy_dt_describe(buf, count, datatype, &start, &length,
                                              &params.datatype) != OMPI_SUCCESS)) {
        return SWY_ERR_NO_MEMORY;
    }
    if (OPAL_UNLIKELY(params.datatype != SWY_DATATYPE_CONTIG)) {
        params.field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE; /* streamed, packed per fragment */
    }
    mca_pml_swy_request_memory(req, &params);
    swy_status_t s = swy_tag_send_nb(ep, start, length, tag, &params, &req->swy_req);
    if (s != SWY_INPROGRESS) {
        req->swy_req = NULL;
    }
    return s;
}

swy_status_t mca_pml_swy_post_send(mca_pml_swy_request_t* req, swy_ep_h ep, const void* buf,
                                   size_t count, ompi_datatype_t* datatype, swy_tag_t tag,
                                   mca_pml_base_send_mode_t mode) {
    return mca_pml_swy_post_send_inline(req, ep, buf, count, datatype, tag, mode);
}

int mca_pml_swy_bsend(swy_ep_h ep, const void* buf, size_t count, ompi_datatype_t* datatype,
                      swy_tag_t tag, ompi_communicator_t* comm) {
    size_t length = mca_pml_swy_dt_packed_size(buf, count, datatype);
    void* packed = NULL;
    if (length != 0) {
        packed = mca_pml_base_bsend_request_alloc_buf(length);
        if (OPAL_UNLIKELY(packed == NULL)) {
            /* No buffer attached, or not enough room left in it: MPI_ERR_BUFFER. */
            return OMPI_ERR_BUFFER;
        }
        if (mca_pml_swy_dt_pack(buf, count, datatype, packed, length) != OMPI_SUCCESS) {
            mca_pml_base_bsend_request_free(packed);
            return OMPI_ERROR;
        }
    }
    mca_pml_swy_request_t* req = mca_pml_swy_request_get(comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        if (packed != NULL) {
            mca_pml_base_bsend_request_free(packed);
        }
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* Detached: the user's call completes now; the callback returns the pool space. */
    req->flags = PML_SWY_REQ_SEND | PML_SWY_REQ_DETACHED;
    if (packed != NULL) {
        req->flags |= PML_SWY_REQ_TMP_BSEND;
        req->tmp_buf = packed;
        req->tmp_len = length;
    }
    swy_request_params_t params = {
        .field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA,
        .send_cb = mca_pml_swy_send_cb,
        .user_data = req};
    mca_pml_swy_request_memory(req, &params);
    swy_status_t s = swy_tag_send_nb(ep, packed, length, tag, &params, &req->swy_req);
    if (s == SWY_INPROGRESS) {
        return OMPI_SUCCESS;
    }
    req->swy_req = NULL;
    mca_pml_swy_request_release(req); /* also returns the pool space */
    if (s != SWY_OK) {
        mca_pml_swy_send_error("buffered send", s);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/*
 * MPI_Isend (standard, ready, synchronous) when no other thread can progress the worker: the
 * send is offered ompi_pml_swy.spare_send (its user_data and request memory). Completed in
 * place, the usual case for a small message, it leaves the spare untouched by Open MPI and
 * Switchyard, ready for the next send: no free-list get, init or return per message. Not
 * completed, the spare becomes this send's request and is made active only now, which is
 * safe because its callback runs from progress and nothing progresses before we return.
 * Invariant of the spare: flags PML_SWY_REQ_SEND, owners_done 0, no tmp_buf, datatype or
 * swy_req (post_send clears swy_req unless it returns SWY_INPROGRESS).
 */
static int mca_pml_swy_isend_spare(swy_ep_h ep, const void* buf, size_t count,
                                   ompi_datatype_t* datatype, swy_tag_t stag,
                                   mca_pml_base_send_mode_t mode, ompi_communicator_t* comm,
                                   ompi_request_t** request) {
    mca_pml_swy_request_t* req = ompi_pml_swy.spare_send;
    if (OPAL_UNLIKELY(req == NULL)) {
        req = mca_pml_swy_request_take(PML_SWY_REQ_SEND);
        if (OPAL_UNLIKELY(req == NULL)) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        ompi_pml_swy.spare_send = req;
    }
    swy_status_t s = mca_pml_swy_post_send_inline(req, ep, buf, count, datatype, stag, mode);
    if (OPAL_LIKELY(s == SWY_OK)) {
        *request = &ompi_pml_swy.completed_send_req;
        return OMPI_SUCCESS;
    }
    if (OPAL_LIKELY(s == SWY_INPROGRESS)) {
        ompi_pml_swy.spare_send = NULL;
        mca_pml_swy_request_activate(req, comm);
        *request = &req->ompi;
        return OMPI_SUCCESS;
    }
    mca_pml_swy_send_error("isend", s); /* nothing was sent: the spare stays */
    return OMPI_ERROR;
}

int mca_pml_swy_isend(const void* buf, size_t count, ompi_datatype_t* datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm,
                      struct ompi_request_t** request) {
    swy_ep_h ep = mca_pml_swy_get_ep(comm, dst);
    if (OPAL_UNLIKELY(ep == NULL)) {
        return OMPI_ERROR;
    }
    const swy_tag_t stag = mca_pml_swy_comm_send_tag(comm, tag);
    if (OPAL_UNLIKELY(mode == MCA_PML_BASE_SEND_BUFFERED)) {
        int rc = mca_pml_swy_bsend(ep, buf, count, datatype, stag, comm);
        if (rc == OMPI_SUCCESS) {
            *request = &ompi_pml_swy.completed_send_req;
        }
        return rc;
    }
    if (OPAL_LIKELY(!opal_using_threads())) {
        return mca_pml_swy_isend_spare(ep, buf, count, datatype, stag, mode, comm, request);
    }
    mca_pml_swy_request_t* req = mca_pml_swy_request_get(comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->flags = PML_SWY_REQ_SEND;
    swy_status_t s = mca_pml_swy_post_send_inline(req, ep, buf, count, datatype, stag, mode);
    if (OPAL_LIKELY(s == SWY_INPROGRESS)) {
        *request = &req->ompi;
        return OMPI_SUCCESS;
    }
    mca_pml_swy_request_release(req);
    if (OPAL_LIKELY(s == SWY_OK)) {
        /* Completed in place: hand out the shared, always-complete request. */
        *request = &ompi_pml_swy.completed_send_req;
        return OMPI_SUCCESS;
    }
    mca_pml_swy_send_error("isend", s);
    return OMPI_ERROR;
}

/* Wait for a blocking send's Switchyard request; the test that sees it complete frees it. */
static int mca_pml_swy_send_wait(swy_request_h sreq) {
    swy_status_t s;
    unsigned step = (unsigned)ompi_pml_swy.progress_iterations;
    while ((s = swy_request_test_free(sreq, NULL)) == SWY_INPROGRESS) {
        mca_pml_swy_wait_step(&step);
    }
    s = mca_pml_swy_send_result(s);
    if (OPAL_UNLIKELY(s != SWY_OK)) {
        mca_pml_swy_send_error("send", s);
        return mca_pml_swy_mpi_error(s);
    }
    return OMPI_SUCCESS;
}

/* swy_tag_send_nb of a blocking send that needs parameters: synchronous mode, or data that
 * is not one contiguous range (out of line: the common send builds no parameter block). */
static __attribute__((noinline)) swy_status_t mca_pml_swy_send_with_params(
    swy_ep_h ep, void* start, size_t length, swy_tag_t stag, swy_datatype_t datatype,
    mca_pml_base_send_mode_t mode, swy_request_h* sreq) {
    swy_request_params_t params = {.field_mask = SWY_REQ_PARAM_FIELD_FLAGS,
                                   .flags = mca_pml_swy_send_flags(mode),
                                   .datatype = datatype};
    if (datatype != SWY_DATATYPE_CONTIG) {
        params.field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE; /* streamed, packed per fragment */
    }
    return swy_tag_send_nb(ep, start, length, stag, &params, sreq);
}

/* The end of a blocking send that did not complete inside swy_tag_send_nb: wait for it, or
 * report the refusal. */
static __attribute__((noinline)) int mca_pml_swy_send_finish(swy_status_t s, swy_request_h sreq) {
    if (s == SWY_INPROGRESS) {
        return mca_pml_swy_send_wait(sreq);
    }
    mca_pml_swy_send_error("send", s);
    return OMPI_ERROR;
}

/* MPI_Send in general: an endpoint not cached yet, buffered or synchronous mode, data that is
 * not one contiguous range. */
static __attribute__((noinline)) int mca_pml_swy_send_general(const void* buf, size_t count,
                                                              ompi_datatype_t* datatype, int dst,
                                                              int tag,
                                                              mca_pml_base_send_mode_t mode,
                                                              struct ompi_communicator_t* comm) {
    swy_ep_h ep = mca_pml_swy_get_ep(comm, dst);
    if (OPAL_UNLIKELY(ep == NULL)) {
        return OMPI_ERROR;
    }
    const swy_tag_t stag = mca_pml_swy_comm_send_tag(comm, tag);
    if (mode == MCA_PML_BASE_SEND_BUFFERED) {
        return mca_pml_swy_bsend(ep, buf, count, datatype, stag, comm);
    }
    void* start;
    size_t length;
    swy_datatype_t sdt;
    if (OPAL_UNLIKELY(mca_pml_swy_dt_describe(buf, count, datatype, &start, &length, &sdt) !=
                      OMPI_SUCCESS)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* No callback: a blocking send polls its own Switchyard request, so nothing is taken from
     * the free list. */
    swy_request_h sreq = NULL;
    swy_status_t s;
    if (sdt == SWY_DATATYPE_CONTIG && mode != MCA_PML_BASE_SEND_SYNCHRONOUS) {
        s = swy_tag_send_nb(ep, start, length, stag, NULL, &sreq);
    } else {
        s = mca_pml_swy_send_with_params(ep, start, length, stag, sdt, mode, &sreq);
    }
    return s == SWY_OK ? OMPI_SUCCESS : mca_pml_swy_send_finish(s, sreq);
}

/*
 * MPI_Send. The common case (standard or ready mode, contiguous data, the peer's endpoint
 * cached on the communicator) is this function alone: no parameter block, no request, and
 * everything else out of line, so that it keeps few registers to save and restore (the
 * whole path cost 74 instructions before this split, callgrind).
 */
int mca_pml_swy_send(const void* buf, size_t count, ompi_datatype_t* datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm) {
    const struct mca_pml_comm_t* pc = comm->c_pml_comm;
    const swy_ep_h ep = mca_pml_swy_cached_ep(pc, dst);
    void* start;
    size_t length;
    if (OPAL_LIKELY(ep != NULL &&
                    (mode == MCA_PML_BASE_SEND_STANDARD || mode == MCA_PML_BASE_SEND_READY) &&
                    mca_pml_swy_dt_contig(buf, count, datatype, &start, &length))) {
        swy_request_h sreq = NULL;
        swy_status_t s = swy_tag_send_nb(ep, start, length,
                                         pml_swy_send_tag_at(tag, pc->send_tag_base), NULL, &sreq);
        return OPAL_LIKELY(s == SWY_OK) ? OMPI_SUCCESS : mca_pml_swy_send_finish(s, sreq);
    }
    return mca_pml_swy_send_general(buf, count, datatype, dst, tag, mode, comm);
}
