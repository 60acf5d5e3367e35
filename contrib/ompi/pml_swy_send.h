/* pml swy: send paths shared by isend, send and persistent start. */
#ifndef PML_SWY_SEND_H
#define PML_SWY_SEND_H

#include "pml_swy_request.h"

/**
 * Start a standard, ready or synchronous send for @p req (a request from the free list with
 * PML_SWY_REQ_SEND set). A non-contiguous datatype is streamed (packed per fragment).
 * @return SWY_OK: completed in place, @p req is not referenced by Switchyard; SWY_INPROGRESS: mca_pml_swy_send_cb will run; or an
 *         error: nothing was sent.
 */
swy_status_t mca_pml_swy_post_send(mca_pml_swy_request_t* req, swy_ep_h ep, const void* buf,
                                   size_t count, ompi_datatype_t* datatype, swy_tag_t tag,
                                   mca_pml_base_send_mode_t mode);

/**
 * MPI buffered send: copy (pack) the data into the MPI_Buffer_attach pool and send that copy;
 * the call is complete once the copy is made.
 * @return OMPI_SUCCESS, OMPI_ERR_BUFFER (no buffer attached or it is full), or OMPI_ERROR.
 */
int mca_pml_swy_bsend(swy_ep_h ep, const void* buf, size_t count, ompi_datatype_t* datatype,
                      swy_tag_t tag, ompi_communicator_t* comm);

#endif /* PML_SWY_SEND_H */
