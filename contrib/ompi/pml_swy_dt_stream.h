/*
 * pml swy: the callbacks of the generic Switchyard datatype that streams an MPI derived
 * datatype (see pml_swy_datatype.h). The type's context is the ompi_datatype_t; each
 * operation gets a convertor state from ompi_pml_swy.dt_states, which packs or unpacks the
 * fragment Switchyard names by its packed offset.
 */
#ifndef PML_SWY_DT_STREAM_H
#define PML_SWY_DT_STREAM_H

#include "pml_swy.h"

#include "opal/datatype/opal_convertor.h"

/** Room to pack one predefined element aside: more than the largest (long double complex). */
enum { PML_SWY_DT_CARRY_BYTES = 64 };

/** One operation's pack or unpack state (an item of ompi_pml_swy.dt_states). */
typedef struct mca_pml_swy_dt_state {
    opal_free_list_item_t super;
    opal_convertor_t conv;
    ompi_datatype_t* datatype; /**< retained from start to finish */
    /* Sender only. Open MPI's pack convertor stops at a predefined element's boundary, but
     * Switchyard wants every fragment but the last filled to the byte (a cell carries exactly
     * the length it was given). So the element that straddles a fragment's end is packed into
     * `carry`; the fragment takes its head and the next one starts with the rest. */
    size_t next_offset; /**< packed offset where the next in-order pack starts */
    size_t carry_pos;   /**< carry[carry_pos, carry_pos + carry_len) are the packed bytes */
    size_t carry_len;   /**< at next_offset, not yet handed out */
    unsigned char carry[PML_SWY_DT_CARRY_BYTES];
} mca_pml_swy_dt_state_t;

OBJ_CLASS_DECLARATION(mca_pml_swy_dt_state_t);

/** The callbacks; swy_dt_create_generic's context must be the ompi_datatype_t. */
extern const swy_dt_generic_ops_t mca_pml_swy_dt_stream_ops;

#endif /* PML_SWY_DT_STREAM_H */
