/* pml swy: receive path shared by irecv, imrecv and persistent start. */
#ifndef PML_SWY_RECV_H
#define PML_SWY_RECV_H

#include "pml_swy_request.h"

/**
 * Post a receive for @p req into (@p buf, @p count, @p datatype): with @p message NULL a
 * tagged receive for (@p tag, @p mask), else the matched-probe receive of @p message. A
 * non-contiguous datatype is unpacked fragment by fragment as the data arrives. If the
 * receive completes immediately, the request is completed here.
 * @return OMPI_SUCCESS (posted or completed) or an error (nothing posted; the caller releases
 *         @p req).
 */
int mca_pml_swy_post_recv(mca_pml_swy_request_t* req, void* buf, size_t count,
                          ompi_datatype_t* datatype, swy_tag_t tag, swy_tag_t mask,
                          swy_message_h message);

#endif /* PML_SWY_RECV_H */
