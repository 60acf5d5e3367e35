/*
 * pml swy datatypes. Switchyard moves one contiguous byte range per message, so:
 *  - a datatype whose (count) elements form one contiguous block is sent and received in
 *    place, from buf + true_lb (no copy: the fast path);
 *  - anything else is packed with Open MPI's convertor into a temporary buffer before the
 *    send, and received into a temporary buffer that is unpacked on completion.
 * Packing costs one copy each way for non-contiguous types; an iovec interface would avoid
 * it for large ones, but Switchyard has none (see README.md, "Limitations").
 */
#ifndef PML_SWY_DATATYPE_H
#define PML_SWY_DATATYPE_H

#include "pml_swy.h"

/**
 * If @p count elements of @p datatype at @p buf are one contiguous byte range, store its start
 * and length and return true.
 */
static inline bool mca_pml_swy_dt_contig(const void* buf, size_t count,
                                         const ompi_datatype_t* datatype, void** start,
                                         size_t* length) {
    const opal_datatype_t* dt = &datatype->super;
    if (OPAL_LIKELY(count <= INT32_MAX &&
                    opal_datatype_is_contiguous_memory_layout(dt, (int32_t)count))) {
        *start = (char*)buf + dt->true_lb;
        *length = dt->size * count;
        return true;
    }
    return false;
}

/** Bytes @p count elements of @p datatype occupy once packed. */
size_t mca_pml_swy_dt_packed_size(const void* buf, size_t count, ompi_datatype_t* datatype);

/** Pack @p count elements at @p buf into @p dst (@p length bytes, the packed size).
 *  @return OMPI_SUCCESS or OMPI_ERROR. */
int mca_pml_swy_dt_pack(const void* buf, size_t count, ompi_datatype_t* datatype, void* dst,
                        size_t length);

/** Unpack @p length packed bytes from @p src into @p count elements at @p buf (a short
 *  message fills the leading elements only). @return OMPI_SUCCESS or OMPI_ERROR. */
int mca_pml_swy_dt_unpack(void* buf, size_t count, ompi_datatype_t* datatype, const void* src,
                          size_t length);

#endif /* PML_SWY_DATATYPE_H */
