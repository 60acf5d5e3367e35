/*
 * pml swy datatypes. Two ways to hand (buf, count, datatype) to Switchyard:
 *  - the (count) elements form one contiguous byte range: it is sent and received in place,
 *    from buf + true_lb (zero copy: the fast path, a contiguous type with an lb included);
 *  - anything else goes through a Switchyard generic datatype (switchyard/datatype.h) whose
 *    callbacks pack and unpack with an Open MPI convertor, one fragment at a time at the
 *    offset Switchyard asks for. No temporary copy of the whole message exists on either
 *    side: memory stays at a few pipeline fragments whatever the message size.
 *
 * The generic Switchyard type of an MPI datatype is made on its first non-contiguous use and
 * cached in ompi_datatype_t.pml_data (the field Open MPI reserves for the selected PML). It
 * lives as long as the MPI type: for user types an attribute (keyval made at enable) destroys
 * it when the type is freed; predefined types (MPI_SHORT_INT...) are never freed, so cleanup
 * destroys theirs, and drops the attribute of user types still alive then (the delete
 * function must not run after this component is unloaded). Every operation retains the MPI
 * type from its start callback to its finish callback, so MPI_Type_free during an MPI_Isend
 * is safe.
 *
 * Each operation's convertor state comes from a free list (no allocation once warm).
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

/** Out-of-line part of mca_pml_swy_dt_describe: the data is not one contiguous range. */
int mca_pml_swy_dt_describe_generic(void* buf, size_t count, ompi_datatype_t* datatype,
                                    void** buffer, size_t* length, swy_datatype_t* swy_dt);

/**
 * Describe @p count elements of @p datatype at @p buf to Switchyard, as the (buffer, length,
 * datatype) of a swy_tag_send_nb / swy_tag_recv_nb / swy_tag_msg_recv_nb:
 *  - contiguous (or empty): @p *buffer, @p *length are the byte range and @p *swy_dt is
 *    SWY_DATATYPE_CONTIG, so no datatype parameter is needed;
 *  - otherwise @p *swy_dt is the datatype's cached generic type, @p *buffer = @p buf and
 *    @p *length = @p count (what its start callbacks receive).
 * @return OMPI_SUCCESS, or OMPI_ERR_OUT_OF_RESOURCE if the generic type cannot be made.
 * Thread safety: any thread (the first use of a type takes a lock).
 */
static inline int mca_pml_swy_dt_describe(const void* buf, size_t count, ompi_datatype_t* datatype,
                                          void** buffer, size_t* length, swy_datatype_t* swy_dt) {
    if (OPAL_LIKELY(mca_pml_swy_dt_contig(buf, count, datatype, buffer, length))) {
        *swy_dt = SWY_DATATYPE_CONTIG;
        return OMPI_SUCCESS;
    }
    return mca_pml_swy_dt_describe_generic((void*)buf, count, datatype, buffer, length, swy_dt);
}

/** Bytes @p count elements of @p datatype occupy once packed. */
size_t mca_pml_swy_dt_packed_size(const void* buf, size_t count, ompi_datatype_t* datatype);

/** Pack @p count elements at @p buf into @p dst (@p length bytes, the packed size): for
 *  MPI_Bsend, whose copy into the attached buffer is the point of the call.
 *  @return OMPI_SUCCESS or OMPI_ERROR. */
int mca_pml_swy_dt_pack(const void* buf, size_t count, ompi_datatype_t* datatype, void* dst,
                        size_t length);

/** Prepare the convertor-state free list and the type cache's lock (at init).
 *  @return OMPI_SUCCESS or OMPI_ERR_OUT_OF_RESOURCE. */
int mca_pml_swy_dt_init(void);
/** Create the datatype attribute key (at enable: the attribute layer is ready by then).
 *  @return OMPI_SUCCESS or the attribute layer's error. */
int mca_pml_swy_dt_enable(void);
/** Destroy every cached generic type (dropping the attribute of user types still alive),
 *  free the key and the free list. Call after the worker is destroyed (no operation can
 *  still hold a convertor state). */
void mca_pml_swy_dt_fini(void);

#endif /* PML_SWY_DATATYPE_H */
