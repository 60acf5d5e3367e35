/* pml swy: pack and unpack non-contiguous datatypes with Open MPI's convertor. */
#include "pml_swy_datatype.h"

#include "opal/datatype/opal_convertor.h"

size_t mca_pml_swy_dt_packed_size(const void* buf, size_t count, ompi_datatype_t* datatype) {
    opal_convertor_t conv;
    size_t length = 0;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_proc_local_proc->super.proc_convertor,
                                             &datatype->super, count, buf, 0, &conv);
    opal_convertor_get_packed_size(&conv, &length);
    OBJ_DESTRUCT(&conv);
    return length;
}

int mca_pml_swy_dt_pack(const void* buf, size_t count, ompi_datatype_t* datatype, void* dst,
                        size_t length) {
    opal_convertor_t conv;
    struct iovec iov = {.iov_base = dst, .iov_len = length};
    uint32_t iov_count = 1;
    size_t max_data = length;
    int rc = OMPI_SUCCESS;

    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_proc_local_proc->super.proc_convertor,
                                             &datatype->super, count, buf, 0, &conv);
    if (opal_convertor_pack(&conv, &iov, &iov_count, &max_data) < 0 || max_data != length) {
        rc = OMPI_ERROR;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}

int mca_pml_swy_dt_unpack(void* buf, size_t count, ompi_datatype_t* datatype, const void* src,
                          size_t length) {
    opal_convertor_t conv;
    struct iovec iov = {.iov_base = (void*)src, .iov_len = length};
    uint32_t iov_count = 1;
    size_t max_data = length;
    int rc = OMPI_SUCCESS;

    if (length == 0) {
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_recv(ompi_proc_local_proc->super.proc_convertor,
                                             &datatype->super, count, buf, 0, &conv);
    if (opal_convertor_unpack(&conv, &iov, &iov_count, &max_data) < 0) {
        rc = OMPI_ERROR;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}
