/*
 * osc swy: an MPI datatype layout as a sequence of contiguous pieces, from Open MPI's
 * convertor (opal_convertor_raw never touches the memory, so the buffer may be a peer's
 * address). Contiguous layouts skip the convertor.
 */
#include "osc_swy.h"

#include "ompi/datatype/ompi_datatype.h"

int ompi_osc_swy_dt_iter_init(ompi_osc_swy_dt_iter_t* it, const void* buf, size_t count,
                              ompi_datatype_t* dt) {
    size_t type_size = 0;
    it->iov_count = 0;
    it->iov_index = 0;
    it->done = false;
    it->use_convertor = false;
    ompi_datatype_type_size(dt, &type_size);
    if (count == 0 || type_size == 0) {
        it->done = true;
        return OMPI_SUCCESS;
    }
    if (ompi_datatype_is_contiguous_memory_layout(dt, (int32_t)count)) {
        ptrdiff_t true_lb = 0;
        ptrdiff_t true_extent = 0;
        ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
        it->iov[0].iov_base = (char*)buf + true_lb;
        it->iov[0].iov_len = type_size * count;
        it->iov_count = 1;
        it->done = true;
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&it->convertor, opal_convertor_t);
    int rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count,
                                                      buf, 0, &it->convertor);
    if (rc != OPAL_SUCCESS) {
        OBJ_DESTRUCT(&it->convertor);
        return rc;
    }
    it->use_convertor = true;
    return OMPI_SUCCESS;
}

bool ompi_osc_swy_dt_iter_next(ompi_osc_swy_dt_iter_t* it, char** ptr, size_t* len) {
    for (;;) {
        while (it->iov_index < it->iov_count) {
            struct iovec* v = &it->iov[it->iov_index++];
            if (v->iov_len > 0) {
                *ptr = v->iov_base;
                *len = v->iov_len;
                return true;
            }
        }
        if (it->done) {
            return false;
        }
        uint32_t n = OSC_SWY_DT_IOV_BATCH;
        size_t bytes = 0;
        int rc = opal_convertor_raw(&it->convertor, it->iov, &n, &bytes);
        it->iov_count = n;
        it->iov_index = 0;
        if (rc != 0 || n == 0) {
            it->done = true; /* 1: that was the last batch */
        }
    }
}

void ompi_osc_swy_dt_iter_fini(ompi_osc_swy_dt_iter_t* it) {
    if (it->use_convertor) {
        OBJ_DESTRUCT(&it->convertor);
        it->use_convertor = false;
    }
}
