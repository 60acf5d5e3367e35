/* pml swy: MPI_Recv, MPI_Irecv, the probe family and matched receives. */
#include "pml_swy_recv.h"

#include "ompi/message/message.h"

#include "pml_swy_datatype.h"

static void mca_pml_swy_recv_error(const char* what, swy_status_t s) {
    opal_output(0, "pml swy: %s failed: %s", what, swy_status_string(s));
}

/* mca_pml_swy_post_recv's body, inlined into MPI_Irecv (a call, prologue and epilogue less
 * per message). */
static inline int mca_pml_swy_post_recv_inline(mca_pml_swy_request_t* req, void* buf, size_t count,
                                               ompi_datatype_t* datatype, swy_tag_t tag,
                                               swy_tag_t mask, swy_message_h message) {
    void* start;
    size_t length;
    swy_tag_recv_info_t info;
    swy_request_params_t params = {
        .field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
                      SWY_REQ_PARAM_FIELD_RECV_INFO,
        .recv_cb = mca_pml_swy_recv_cb,
        .user_data = req,
        .recv_info = &info,
    };
    if (OPAL_UNLIKELY(mca_pml_swy_dt_describe(buf, count, datatype, &start, &length,
                                              &params.datatype) != OMPI_SUCCESS)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (OPAL_UNLIKELY(params.datatype != SWY_DATATYPE_CONTIG)) {
        /* Unpacked fragment by fragment; the state retains the type until it is done. */
        params.field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE;
    }
    mca_pml_swy_request_memory(req, &params);
    swy_status_t s;
    if (message == NULL) {
        s = swy_tag_recv_nb(ompi_pml_swy.worker, start, length, tag, mask, &params, &req->swy_req);
    } else {
        s = swy_tag_msg_recv_nb(ompi_pml_swy.worker, start, length, message, &params,
                                &req->swy_req);
    }
    if (OPAL_LIKELY(s == SWY_INPROGRESS)) {
        return OMPI_SUCCESS;
    }
    req->swy_req = NULL;
    if (s == SWY_OK || s == SWY_ERR_MESSAGE_TRUNCATED) {
        mca_pml_swy_recv_done(req, s, &info); /* the message was already here */
        return OMPI_SUCCESS;
    }
    mca_pml_swy_recv_error("receive", s);
    return mca_pml_swy_mpi_error(s);
}

int mca_pml_swy_post_recv(mca_pml_swy_request_t* req, void* buf, size_t count,
                          ompi_datatype_t* datatype, swy_tag_t tag, swy_tag_t mask,
                          swy_message_h message) {
    return mca_pml_swy_post_recv_inline(req, buf, count, datatype, tag, mask, message);
}

int mca_pml_swy_irecv(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                      struct ompi_communicator_t* comm, struct ompi_request_t** request) {
    swy_tag_t stag, mask;
    pml_swy_recv_tag(tag, src, comm->c_contextid, MPI_ANY_TAG, MPI_ANY_SOURCE, &stag, &mask);
    mca_pml_swy_request_t* req = mca_pml_swy_request_get(comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = mca_pml_swy_post_recv_inline(req, buf, count, datatype, stag, mask, NULL);
    if (OPAL_UNLIKELY(rc != OMPI_SUCCESS)) {
        mca_pml_swy_request_release(req);
        return rc;
    }
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

/*
 * Blocking receive into (buf, count, datatype): tagged (message NULL) or matched. Nothing
 * from the free list and no completion callback: the Switchyard request completes inside
 * progress on the library's short path (no callback to run), and the wait loop takes the
 * final status, the match information and the request back with one swy_request_test_free()
 * per pass. The callback that filled a record on this stack and freed the request from
 * there cost about 55 instructions more per message, between the message's arrival and
 * MPI_Recv's return (callgrind, bench/callgrind-mpi.sh). Inline into MPI_Recv.
 */
static inline __attribute__((always_inline)) int mca_pml_swy_recv_blocking(
    void* buf, size_t count, ompi_datatype_t* datatype, swy_tag_t tag, swy_tag_t mask,
    swy_message_h message, ompi_status_public_t* status) {
    void* start;
    size_t length;
    swy_tag_recv_info_t info = {0, 0};
    /* Switchyard reads only the fields field_mask names: recv_info, filled when a message that
     * was already here completes the call at once. */
    swy_request_params_t params;
    params.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_info = &info;
    if (OPAL_UNLIKELY(mca_pml_swy_dt_describe(buf, count, datatype, &start, &length,
                                              &params.datatype) != OMPI_SUCCESS)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (OPAL_UNLIKELY(params.datatype != SWY_DATATYPE_CONTIG)) {
        params.field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE; /* unpacked fragment by fragment */
    }
    swy_request_h sreq = NULL;
    swy_status_t s;
    if (message == NULL) {
        s = swy_tag_recv_nb(ompi_pml_swy.worker, start, length, tag, mask, &params, &sreq);
    } else {
        s = swy_tag_msg_recv_nb(ompi_pml_swy.worker, start, length, message, &params, &sreq);
    }
    if (s == SWY_INPROGRESS) {
        /* Another thread may progress the worker too (MPI_THREAD_MULTIPLE): whoever completes
         * the request, this loop sees it on its next test, and only this loop frees it. */
        unsigned step = (unsigned)ompi_pml_swy.progress_iterations;
        do {
            mca_pml_swy_wait_step(&step);
        } while ((s = swy_request_test_free(sreq, &info)) == SWY_INPROGRESS);
    }
    if (OPAL_UNLIKELY(s != SWY_OK && s != SWY_ERR_MESSAGE_TRUNCATED)) {
        mca_pml_swy_recv_error("receive", s);
    }
    return mca_pml_swy_set_public_status(status, s, &info);
}

/* The end of an MPI_Recv with MPI_STATUS_IGNORE that did not simply succeed: its error (a
 * truncation is the caller's MPI_ERR_TRUNCATE, anything else is logged too). */
static __attribute__((noinline)) int mca_pml_swy_recv_ignored_error(swy_status_t s) {
    if (s != SWY_ERR_MESSAGE_TRUNCATED) {
        mca_pml_swy_recv_error("receive", s);
    }
    return mca_pml_swy_set_public_status(MPI_STATUS_IGNORE, s, NULL);
}

/*
 * MPI_Recv. With MPI_STATUS_IGNORE and contiguous data (osu_latency's receive) no match
 * information is wanted: Switchyard gets no parameter block (its receive then checks
 * nothing more) and no info to copy, and nothing is built for them here: per 8-byte
 * osu_latency iteration this function took 85 instructions instead of 98 and the library's
 * receive, test and free 14 fewer (callgrind, bench/callgrind-mpi.sh). A truncation still
 * comes back as the final status.
 */
int mca_pml_swy_recv(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                     struct ompi_communicator_t* comm, ompi_status_public_t* status) {
    swy_tag_t stag, mask;
    pml_swy_recv_tag(tag, src, comm->c_contextid, MPI_ANY_TAG, MPI_ANY_SOURCE, &stag, &mask);
    void* start;
    size_t length;
    if (OPAL_LIKELY(status == MPI_STATUS_IGNORE &&
                    mca_pml_swy_dt_contig(buf, count, datatype, &start, &length))) {
        swy_request_h sreq = NULL;
        swy_status_t s =
            swy_tag_recv_nb(ompi_pml_swy.worker, start, length, stag, mask, NULL, &sreq);
        if (s == SWY_INPROGRESS) {
            /* As in mca_pml_swy_recv_blocking: only this loop frees the request. */
            unsigned step = (unsigned)ompi_pml_swy.progress_iterations;
            do {
                mca_pml_swy_wait_step(&step);
            } while ((s = swy_request_test_free(sreq, NULL)) == SWY_INPROGRESS);
        }
        return OPAL_LIKELY(s == SWY_OK) ? MPI_SUCCESS : mca_pml_swy_recv_ignored_error(s);
    }
    return mca_pml_swy_recv_blocking(buf, count, datatype, stag, mask, NULL, status);
}

/* One probe; @p message is non-NULL for the matched (removing) probes. */
static bool mca_pml_swy_probe_once(int src, int tag, struct ompi_communicator_t* comm,
                                   swy_tag_recv_info_t* info, swy_message_h* message) {
    swy_tag_t stag, mask;
    pml_swy_recv_tag(tag, src, comm->c_contextid, MPI_ANY_TAG, MPI_ANY_SOURCE, &stag, &mask);
    return swy_tag_probe_nb(ompi_pml_swy.worker, stag, mask, message != NULL, info, message) ==
           SWY_OK;
}

int mca_pml_swy_iprobe(int src, int tag, struct ompi_communicator_t* comm, int* matched,
                       ompi_status_public_t* status) {
    static unsigned step = 0;
    swy_tag_recv_info_t info;
    if (mca_pml_swy_probe_once(src, tag, comm, &info, NULL)) {
        *matched = 1;
        (void)mca_pml_swy_set_public_status(status, SWY_OK, &info);
        return OMPI_SUCCESS;
    }
    /* Progress so that a loop of MPI_Iprobe calls eventually sees the message. */
    *matched = 0;
    mca_pml_swy_wait_step(&step);
    return OMPI_SUCCESS;
}

int mca_pml_swy_probe(int src, int tag, struct ompi_communicator_t* comm,
                      ompi_status_public_t* status) {
    unsigned step = (unsigned)ompi_pml_swy.progress_iterations;
    swy_tag_recv_info_t info;
    while (!mca_pml_swy_probe_once(src, tag, comm, &info, NULL)) {
        mca_pml_swy_wait_step(&step);
    }
    (void)mca_pml_swy_set_public_status(status, SWY_OK, &info);
    return OMPI_SUCCESS;
}

/* Wrap a message Switchyard took out of matching into an MPI_Message. */
static void mca_pml_swy_message_fill(ompi_message_t* msg, struct ompi_communicator_t* comm,
                                     swy_message_h smsg, const swy_tag_recv_info_t* info) {
    msg->comm = comm;
    msg->req_ptr = smsg;
    msg->peer = pml_swy_tag_source(info->sender_tag);
    msg->count = info->length;
}

int mca_pml_swy_improbe(int src, int tag, struct ompi_communicator_t* comm, int* matched,
                        struct ompi_message_t** message, ompi_status_public_t* status) {
    static unsigned step = 0;
    swy_tag_recv_info_t info;
    swy_message_h smsg = NULL;
    /* Allocated first: once Switchyard hands a message out it is no longer matchable, so
     * there must be somewhere to put it. */
    ompi_message_t* msg = ompi_message_alloc();
    if (OPAL_UNLIKELY(msg == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (mca_pml_swy_probe_once(src, tag, comm, &info, &smsg)) {
        mca_pml_swy_message_fill(msg, comm, smsg, &info);
        *message = msg;
        *matched = 1;
        (void)mca_pml_swy_set_public_status(status, SWY_OK, &info);
        return OMPI_SUCCESS;
    }
    ompi_message_return(msg);
    *matched = 0;
    mca_pml_swy_wait_step(&step);
    return OMPI_SUCCESS;
}

int mca_pml_swy_mprobe(int src, int tag, struct ompi_communicator_t* comm,
                       struct ompi_message_t** message, ompi_status_public_t* status) {
    unsigned step = (unsigned)ompi_pml_swy.progress_iterations;
    swy_tag_recv_info_t info;
    swy_message_h smsg = NULL;
    ompi_message_t* msg = ompi_message_alloc();
    if (OPAL_UNLIKELY(msg == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    while (!mca_pml_swy_probe_once(src, tag, comm, &info, &smsg)) {
        mca_pml_swy_wait_step(&step);
    }
    mca_pml_swy_message_fill(msg, comm, smsg, &info);
    *message = msg;
    (void)mca_pml_swy_set_public_status(status, SWY_OK, &info);
    return OMPI_SUCCESS;
}

int mca_pml_swy_imrecv(void* buf, size_t count, ompi_datatype_t* datatype,
                       struct ompi_message_t** message, struct ompi_request_t** request) {
    ompi_message_t* msg = *message;
    mca_pml_swy_request_t* req = mca_pml_swy_request_get(msg->comm);
    if (OPAL_UNLIKELY(req == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = mca_pml_swy_post_recv(req, buf, count, datatype, 0, 0, (swy_message_h)msg->req_ptr);
    if (OPAL_UNLIKELY(rc != OMPI_SUCCESS)) {
        mca_pml_swy_request_release(req);
        return rc;
    }
    ompi_message_return(msg);
    *message = MPI_MESSAGE_NULL;
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int mca_pml_swy_mrecv(void* buf, size_t count, ompi_datatype_t* datatype,
                      struct ompi_message_t** message, ompi_status_public_t* status) {
    ompi_message_t* msg = *message;
    swy_message_h smsg = (swy_message_h)msg->req_ptr;
    ompi_message_return(msg);
    *message = MPI_MESSAGE_NULL;
    return mca_pml_swy_recv_blocking(buf, count, datatype, 0, 0, smsg, status);
}
