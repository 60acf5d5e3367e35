/* pml swy: the cache of generic Switchyard types on MPI datatypes, and the MPI_Bsend pack. */
#include "pml_swy_datatype.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/attribute/attribute.h"
#include "opal/datatype/opal_convertor.h"

#include "pml_swy_dt_stream.h"

/* What a user type's attribute holds: its generic type, and its slot in dt_cached. */
typedef struct mca_pml_swy_dt_cached {
    swy_datatype_t generic;
    int slot;
} mca_pml_swy_dt_cached_t;

/* The MPI type is being destroyed (or cleanup drops the attribute): so is its generic
 * Switchyard type, which no operation uses (each retains the MPI type until its finish
 * callback). Runs under Open MPI's attribute lock: it takes no lock of ours but the
 * pointer array's own. */
static int mca_pml_swy_dt_attr_delete(MPI_Datatype type, int keyval, void* attr, void* extra) {
    mca_pml_swy_dt_cached_t* cached = (mca_pml_swy_dt_cached_t*)attr;
    (void)keyval;
    (void)extra;
    type->pml_data = 0;
    swy_dt_destroy(cached->generic);
    (void)opal_pointer_array_set_item(&ompi_pml_swy.dt_cached, cached->slot, NULL);
    free(cached);
    return MPI_SUCCESS;
}

/* MPI_Type_dup does not copy the attribute: the duplicate is a new object whose pml_data is
 * empty, so it makes its own generic type on first use. */
static int mca_pml_swy_dt_attr_copy(MPI_Datatype oldtype, int keyval, void* extra, void* in,
                                    void* out, int* flag, MPI_Datatype newtype) {
    (void)oldtype;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    (void)newtype;
    *flag = 0;
    return MPI_SUCCESS;
}

/* Tie @p made to @p datatype's lifetime and list the type in dt_cached. A user type gets an
 * attribute whose delete function destroys @p made with it; a predefined type is never
 * freed, so cleanup destroys its @p made. Cleanup also drops the attributes of user types
 * still alive then: their delete function must run while this component is loaded. Called
 * under dt_lock. */
static int mca_pml_swy_dt_keep(ompi_datatype_t* datatype, swy_datatype_t made) {
    if (ompi_datatype_is_predefined(datatype)) {
        return opal_pointer_array_add(&ompi_pml_swy.dt_cached, datatype) < 0
                   ? OMPI_ERR_OUT_OF_RESOURCE
                   : OMPI_SUCCESS;
    }
    if (ompi_pml_swy.dt_keyval == MPI_KEYVAL_INVALID) {
        return OMPI_ERR_NOT_AVAILABLE; /* before enable */
    }
    mca_pml_swy_dt_cached_t* cached = (mca_pml_swy_dt_cached_t*)malloc(sizeof(*cached));
    if (cached == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    cached->generic = made;
    cached->slot = opal_pointer_array_add(&ompi_pml_swy.dt_cached, datatype);
    int rc = cached->slot < 0 ? OMPI_ERR_OUT_OF_RESOURCE
                              : ompi_attr_set_c(TYPE_ATTR, datatype, &datatype->d_keyhash,
                                                ompi_pml_swy.dt_keyval, cached, false);
    if (rc != OMPI_SUCCESS) {
        if (cached->slot >= 0) {
            (void)opal_pointer_array_set_item(&ompi_pml_swy.dt_cached, cached->slot, NULL);
        }
        free(cached);
    }
    return rc;
}

/* First non-contiguous use of @p datatype: make and cache its generic type. 0 on failure. */
static swy_datatype_t mca_pml_swy_dt_generic_create(ompi_datatype_t* datatype) {
    swy_datatype_t made;
    OPAL_THREAD_LOCK(&ompi_pml_swy.dt_lock);
    made = datatype->pml_data; /* another thread may have made it meanwhile */
    if (made == 0) {
        swy_status_t s = swy_dt_create_generic(&mca_pml_swy_dt_stream_ops, datatype, &made);
        int rc = s == SWY_OK ? mca_pml_swy_dt_keep(datatype, made) : OMPI_ERR_OUT_OF_RESOURCE;
        if (rc == OMPI_SUCCESS) {
            /* Release: a thread that reads it without the lock sees the finished object. */
            __atomic_store_n(&datatype->pml_data, made, __ATOMIC_RELEASE);
            opal_output_verbose(9, ompi_pml_swy.output,
                                "pml swy: generic Switchyard type for datatype %s", datatype->name);
        } else {
            opal_output(0, "pml swy: cannot make a Switchyard datatype for %s (%s, %d)",
                        datatype->name, swy_status_string(s), rc);
            if (s == SWY_OK) {
                swy_dt_destroy(made);
            }
            made = 0;
        }
    }
    OPAL_THREAD_UNLOCK(&ompi_pml_swy.dt_lock);
    return made;
}

int mca_pml_swy_dt_describe_generic(void* buf, size_t count, ompi_datatype_t* datatype,
                                    void** buffer, size_t* length, swy_datatype_t* swy_dt) {
    if (count == 0 || datatype->super.size == 0) {
        /* Nothing to move: an empty contiguous message (zero copy, no convertor). */
        *buffer = buf;
        *length = 0;
        *swy_dt = SWY_DATATYPE_CONTIG;
        return OMPI_SUCCESS;
    }
    swy_datatype_t generic = __atomic_load_n(&datatype->pml_data, __ATOMIC_ACQUIRE);
    if (OPAL_UNLIKELY(generic == 0) && (generic = mca_pml_swy_dt_generic_create(datatype)) == 0) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *buffer = buf;
    *length = count;
    *swy_dt = generic;
    return OMPI_SUCCESS;
}

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

int mca_pml_swy_dt_init(void) {
    OBJ_CONSTRUCT(&ompi_pml_swy.dt_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ompi_pml_swy.dt_cached, opal_pointer_array_t);
    OBJ_CONSTRUCT(&ompi_pml_swy.dt_states, opal_free_list_t);
    ompi_pml_swy.dt_keyval = MPI_KEYVAL_INVALID;
    if (opal_pointer_array_init(&ompi_pml_swy.dt_cached, 16, INT_MAX, 16) != OPAL_SUCCESS ||
        opal_free_list_init(&ompi_pml_swy.dt_states, sizeof(mca_pml_swy_dt_state_t),
                            opal_cache_line_size, OBJ_CLASS(mca_pml_swy_dt_state_t), 0,
                            opal_cache_line_size, 16, -1, 16, NULL, 0, NULL, NULL,
                            NULL) != OPAL_SUCCESS) {
        OBJ_DESTRUCT(&ompi_pml_swy.dt_states);
        OBJ_DESTRUCT(&ompi_pml_swy.dt_cached);
        OBJ_DESTRUCT(&ompi_pml_swy.dt_lock);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    ompi_pml_swy.dt_states_ready = true;
    return OMPI_SUCCESS;
}

int mca_pml_swy_dt_enable(void) {
    if (ompi_pml_swy.dt_keyval != MPI_KEYVAL_INVALID) {
        return OMPI_SUCCESS;
    }
    ompi_attribute_fn_ptr_union_t copy_fn = {.attr_datatype_copy_fn = mca_pml_swy_dt_attr_copy};
    ompi_attribute_fn_ptr_union_t delete_fn = {.attr_datatype_delete_fn =
                                                   mca_pml_swy_dt_attr_delete};
    return ompi_attr_create_keyval(TYPE_ATTR, copy_fn, delete_fn, &ompi_pml_swy.dt_keyval, NULL, 0,
                                   NULL);
}

void mca_pml_swy_dt_fini(void) {
    if (!ompi_pml_swy.dt_states_ready) {
        return;
    }
    const int n = opal_pointer_array_get_size(&ompi_pml_swy.dt_cached);
    for (int i = 0; i < n; ++i) {
        ompi_datatype_t* datatype =
            (ompi_datatype_t*)opal_pointer_array_get_item(&ompi_pml_swy.dt_cached, i);
        if (datatype == NULL) {
            continue;
        }
        if (ompi_datatype_is_predefined(datatype)) {
            swy_dt_destroy(datatype->pml_data);
            datatype->pml_data = 0;
            (void)opal_pointer_array_set_item(&ompi_pml_swy.dt_cached, i, NULL);
        } else {
            /* A type the application never freed: its delete function runs now. */
            (void)ompi_attr_delete(TYPE_ATTR, datatype, datatype->d_keyhash, ompi_pml_swy.dt_keyval,
                                   false);
        }
    }
    if (ompi_pml_swy.dt_keyval != MPI_KEYVAL_INVALID) {
        (void)ompi_attr_free_keyval(TYPE_ATTR, &ompi_pml_swy.dt_keyval, false);
        ompi_pml_swy.dt_keyval = MPI_KEYVAL_INVALID;
    }
    OBJ_DESTRUCT(&ompi_pml_swy.dt_states);
    OBJ_DESTRUCT(&ompi_pml_swy.dt_cached);
    OBJ_DESTRUCT(&ompi_pml_swy.dt_lock);
    ompi_pml_swy.dt_states_ready = false;
}
