/* pml swy: pack and unpack an MPI derived datatype fragment by fragment for Switchyard. */
#include "pml_swy_dt_stream.h"

#include <string.h>

_Static_assert(2 * sizeof(long double) < PML_SWY_DT_CARRY_BYTES,
               "the carry must hold a whole predefined element (long double complex)");

static void mca_pml_swy_dt_state_construct(mca_pml_swy_dt_state_t* st) {
    OBJ_CONSTRUCT(&st->conv, opal_convertor_t);
    st->datatype = NULL;
}

static void mca_pml_swy_dt_state_destruct(mca_pml_swy_dt_state_t* st) { OBJ_DESTRUCT(&st->conv); }

OBJ_CLASS_INSTANCE(mca_pml_swy_dt_state_t, opal_free_list_item_t, mca_pml_swy_dt_state_construct,
                   mca_pml_swy_dt_state_destruct);

static mca_pml_swy_dt_state_t* mca_pml_swy_dt_start(void* context, const void* buffer, size_t count,
                                                    bool for_send) {
    ompi_datatype_t* datatype = (ompi_datatype_t*)context;
    mca_pml_swy_dt_state_t* st =
        (mca_pml_swy_dt_state_t*)opal_free_list_get(&ompi_pml_swy.dt_states);
    if (OPAL_UNLIKELY(st == NULL)) {
        return NULL; /* Switchyard fails the operation: nothing started, no finish owed */
    }
    int rc = for_send ? opal_convertor_copy_and_prepare_for_send(
                            ompi_proc_local_proc->super.proc_convertor, &datatype->super, count,
                            buffer, 0, &st->conv)
                      : opal_convertor_copy_and_prepare_for_recv(
                            ompi_proc_local_proc->super.proc_convertor, &datatype->super, count,
                            buffer, 0, &st->conv);
    if (OPAL_UNLIKELY(rc != OPAL_SUCCESS)) {
        opal_convertor_cleanup(&st->conv);
        opal_free_list_return(&ompi_pml_swy.dt_states, &st->super);
        return NULL;
    }
    OMPI_DATATYPE_RETAIN(datatype);
    st->datatype = datatype;
    st->next_offset = 0;
    st->carry_pos = 0;
    st->carry_len = 0;
    return st;
}

static void* mca_pml_swy_dt_start_pack(void* context, const void* buffer, size_t count) {
    return mca_pml_swy_dt_start(context, buffer, count, true);
}

static void* mca_pml_swy_dt_start_unpack(void* context, void* buffer, size_t count) {
    return mca_pml_swy_dt_start(context, buffer, count, false);
}

static size_t mca_pml_swy_dt_packed_size_cb(void* state) {
    size_t length = 0;
    opal_convertor_get_packed_size(&((mca_pml_swy_dt_state_t*)state)->conv, &length);
    return length;
}

/* Pack whole elements into at most @p max bytes at @p dst from the convertor's position. */
static size_t mca_pml_swy_dt_conv_pack(opal_convertor_t* conv, void* dst, size_t max) {
    struct iovec iov = {.iov_base = dst, .iov_len = max};
    uint32_t iov_count = 1;
    size_t length = max;
    if (OPAL_UNLIKELY(opal_convertor_pack(conv, &iov, &iov_count, &length) < 0)) {
        return 0;
    }
    return length;
}

/* Out-of-order pack (Switchyard packs in order, but nothing breaks if it does not): move to
 * @p offset. A send convertor only stops on element boundaries, so an offset inside an
 * element starts the carry with that element's remaining bytes. */
static bool mca_pml_swy_dt_pack_seek(mca_pml_swy_dt_state_t* st, size_t offset) {
    size_t pos = offset;
    opal_convertor_set_position(&st->conv, &pos);
    st->next_offset = offset;
    st->carry_pos = 0;
    st->carry_len = 0;
    if (pos == offset) {
        return true;
    }
    const size_t got = mca_pml_swy_dt_conv_pack(&st->conv, st->carry, sizeof(st->carry));
    if (pos > offset || got < offset - pos) {
        return false;
    }
    st->carry_pos = offset - pos;
    st->carry_len = got - st->carry_pos;
    return true;
}

static size_t mca_pml_swy_dt_pack_cb(void* state, size_t offset, void* dest, size_t max_length) {
    mca_pml_swy_dt_state_t* st = (mca_pml_swy_dt_state_t*)state;
    unsigned char* out = (unsigned char*)dest;
    size_t done = 0;
    if (OPAL_UNLIKELY(offset != st->next_offset) && !mca_pml_swy_dt_pack_seek(st, offset)) {
        return 0; /* Switchyard fails the send rather than send garbage */
    }
    if (st->carry_len != 0) {
        done = st->carry_len < max_length ? st->carry_len : max_length;
        memcpy(out, st->carry + st->carry_pos, done);
        st->carry_pos += done;
        st->carry_len -= done;
    }
    if (done < max_length) {
        done += mca_pml_swy_dt_conv_pack(&st->conv, out + done, max_length - done);
        if (done < max_length) {
            /* Less room left than one element (or the data ended): pack the next element
             * aside and hand out its head. */
            const size_t got = mca_pml_swy_dt_conv_pack(&st->conv, st->carry, sizeof(st->carry));
            const size_t n = got < max_length - done ? got : max_length - done;
            memcpy(out + done, st->carry, n);
            done += n;
            st->carry_pos = n;
            st->carry_len = got - n;
        }
    }
    st->next_offset = offset + done;
    return done;
}

static swy_status_t mca_pml_swy_dt_unpack_cb(void* state, size_t offset, const void* src,
                                             size_t length) {
    mca_pml_swy_dt_state_t* st = (mca_pml_swy_dt_state_t*)state;
    /* In order this is a no-op; a receive convertor can also stop inside an element, and
     * completes it from the next fragment (or the previous one, out of order). */
    size_t pos = offset;
    opal_convertor_set_position(&st->conv, &pos);
    if (OPAL_UNLIKELY(pos != offset)) {
        return SWY_ERR_IO;
    }
    struct iovec iov = {.iov_base = (void*)src, .iov_len = length};
    uint32_t iov_count = 1;
    size_t done = length;
    if (OPAL_UNLIKELY(opal_convertor_unpack(&st->conv, &iov, &iov_count, &done) < 0 ||
                      done != length)) {
        return SWY_ERR_IO;
    }
    return SWY_OK;
}

static void mca_pml_swy_dt_finish_cb(void* state) {
    mca_pml_swy_dt_state_t* st = (mca_pml_swy_dt_state_t*)state;
    ompi_datatype_t* datatype = st->datatype;
    opal_convertor_cleanup(&st->conv);
    st->datatype = NULL;
    opal_free_list_return(&ompi_pml_swy.dt_states, &st->super);
    /* Last: if the application freed the type meanwhile, this destroys it and, through the
     * attribute, its generic Switchyard type (which Switchyard no longer touches). */
    OMPI_DATATYPE_RELEASE(datatype);
}

const swy_dt_generic_ops_t mca_pml_swy_dt_stream_ops = {
    .start_pack = mca_pml_swy_dt_start_pack,
    .start_unpack = mca_pml_swy_dt_start_unpack,
    .packed_size = mca_pml_swy_dt_packed_size_cb,
    .pack = mca_pml_swy_dt_pack_cb,
    .unpack = mca_pml_swy_dt_unpack_cb,
    .finish = mca_pml_swy_dt_finish_cb,
};
