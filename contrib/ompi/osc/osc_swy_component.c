/*
 * osc swy: the MCA component (what Open MPI's loader finds in mca_osc_swy.so), its MCA
 * parameters, selection, and the process-wide Switchyard worker the windows share: pml swy's
 * when it is the selected PML, else one made here on the first window.
 */
#include "osc_swy.h"

#include <dlfcn.h>
#include <string.h>

#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"

#include "osc_swy_accumulate.h"
#include "osc_swy_window.h"

static int component_register(void);
static int component_open(void);
static int component_close(void);
static int component_init(bool enable_progress_threads, bool enable_mpi_threads);
static int component_finalize(void);
static int component_query(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                           struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor);
static int component_select(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                            struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor,
                            int* model);

/* Open MPI looks this symbol up by name: mca_<framework>_<component>_component. */
ompi_osc_swy_component_t mca_osc_swy_component = {
    .super =
        {
            .osc_version =
                {
                    OMPI_OSC_BASE_VERSION_3_0_0,
                    .mca_component_name = "swy",
                    .mca_component_major_version = OSC_SWY_VERSION_MAJOR,
                    .mca_component_minor_version = OSC_SWY_VERSION_MINOR,
                    .mca_component_release_version = OSC_SWY_VERSION_PATCH,
                    .mca_open_component = component_open,
                    .mca_close_component = component_close,
                    .mca_register_component_params = component_register,
                },
            .osc_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
            .osc_init = component_init,
            .osc_query = component_query,
            .osc_select = component_select,
            .osc_finalize = component_finalize,
        },
    .output = -1,
};

static int component_register(void) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    /* Above osc rdma (101) and osc sm (100): under pml swy, osc swy is the default. */
    c->priority = 200;
    (void)mca_base_component_var_register(
        &c->super.osc_version, "priority",
        "Selection priority of osc swy when pml swy is the selected PML (rdma is 101, sm 100)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_GROUP, &c->priority);
    /* Low under other PMLs: it then needs a Switchyard worker of its own, so it is used only
     * when asked for (--mca osc swy). */
    c->priority_other = 1;
    (void)mca_base_component_var_register(
        &c->super.osc_version, "priority_other_pml",
        "Selection priority of osc swy under any other PML (select it with --mca osc swy)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_GROUP,
        &c->priority_other);
    c->verbose = 0;
    (void)mca_base_component_var_register(
        &c->super.osc_version, "verbose",
        "Verbosity of osc swy (1: which worker is used; 2: windows; 9: everything)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);
    c->max_attach = 64;
    (void)mca_base_component_var_register(
        &c->super.osc_version, "max_attach",
        "Regions one process may attach to a dynamic window at a time", MCA_BASE_VAR_TYPE_INT, NULL,
        0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_GROUP, &c->max_attach);
    ompi_osc_swy_acc_register(&c->super.osc_version);
    return OMPI_SUCCESS;
}

static int component_open(void) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    if (c->max_attach < 1) {
        opal_output(0, "osc swy: osc_swy_max_attach must be >= 1 (got %d); using 1", c->max_attach);
        c->max_attach = 1;
    }
    return OMPI_SUCCESS;
}

static int component_close(void) {
    opal_output_close(mca_osc_swy_component.output);
    mca_osc_swy_component.output = -1;
    return OMPI_SUCCESS;
}

static int component_init(bool enable_progress_threads, bool enable_mpi_threads) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    (void)enable_progress_threads;
    c->enable_mpi_threads = enable_mpi_threads;
    OBJ_CONSTRUCT(&c->endpoints, opal_hash_table_t);
    OBJ_CONSTRUCT(&c->windows, opal_hash_table_t);
    if (opal_hash_table_init(&c->endpoints, 64) != OPAL_SUCCESS ||
        opal_hash_table_init(&c->windows, 16) != OPAL_SUCCESS) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

/* True when pml swy is the PML this process selected. */
static bool pml_is_swy(void) {
    const char* name = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    return strcmp(name, "swy") == 0;
}

static int progress_own_worker(void) {
    return (int)swy_worker_progress(mca_osc_swy_component.worker);
}

/* Every window active message lands here first: find the window, check the sender's rank,
 * and hand the message to the accumulate code (the only user of window messages). */
static swy_status_t am_dispatch(void* arg, const void* header, size_t header_length, void* data,
                                size_t data_length, const swy_am_recv_param_t* param) {
    ompi_osc_swy_am_header_t hdr;
    void* value = NULL;
    (void)arg;
    if (header_length < sizeof(hdr)) {
        opal_output_verbose(1, mca_osc_swy_component.output,
                            "osc swy: dropped a window message with a %zu-byte header",
                            header_length);
        return SWY_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if (opal_hash_table_get_value_uint32(&mca_osc_swy_component.windows, hdr.win_id, &value) !=
        OPAL_SUCCESS) {
        opal_output_verbose(1, mca_osc_swy_component.output,
                            "osc swy: dropped a message for unknown window %u", hdr.win_id);
        return SWY_OK;
    }
    ompi_osc_swy_module_t* module = (ompi_osc_swy_module_t*)value;
    if (hdr.source < 0 || hdr.source >= module->nranks) {
        opal_output_verbose(1, mca_osc_swy_component.output,
                            "osc swy: dropped a message from rank %d of a %d-rank window",
                            hdr.source, module->nranks);
        return SWY_OK;
    }
    return ompi_osc_swy_acc_am_handler(module, hdr.source, header, header_length, data, data_length,
                                       param);
}

/* The shared worker, on the first window: pml swy's, or our own. */
static int acquire_worker(void) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    if (c->ready) {
        return OMPI_SUCCESS;
    }
    if (pml_is_swy()) {
        const mca_pml_swy_shared_worker_t* (*accessor)(void) =
            (const mca_pml_swy_shared_worker_t* (*)(void))dlsym(RTLD_DEFAULT,
                                                                "mca_pml_swy_shared_worker");
        if (accessor != NULL) {
            c->pml = accessor();
        }
        if (c->pml == NULL || c->pml->worker == NULL) {
            opal_output(0,
                        "osc swy: pml swy is selected but exports no worker (older pml "
                        "swy?); osc swy makes a worker of its own");
            c->pml = NULL;
        }
    }
    if (c->pml != NULL) {
        c->context = c->pml->context;
        c->worker = c->pml->worker;
        c->own_worker = false;
        opal_output_verbose(1, c->output, "osc swy: sharing pml swy's worker %p", (void*)c->worker);
    } else {
        swy_worker_params_t wparams = {
            .field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE,
            .thread_mode = c->enable_mpi_threads ? SWY_THREAD_MODE_MULTI : SWY_THREAD_MODE_SINGLE};
        swy_status_t s = swy_context_create(NULL, &c->context);
        if (s != SWY_OK) {
            opal_output(0, "osc swy: swy_context_create failed: %s", swy_status_string(s));
            return OMPI_ERROR;
        }
        s = swy_worker_create(c->context, &wparams, &c->worker);
        if (s != SWY_OK) {
            opal_output(0, "osc swy: swy_worker_create failed: %s", swy_status_string(s));
            swy_context_destroy(c->context);
            c->context = NULL;
            return OMPI_ERROR;
        }
        c->own_worker = true;
        opal_progress_register(progress_own_worker);
        c->progress_registered = true;
        opal_output_verbose(1, c->output, "osc swy: own worker %p (pml %s)", (void*)c->worker,
                            mca_pml_base_selected_component.pmlm_version.mca_component_name);
    }
    swy_status_t s = swy_worker_set_am_handler(c->worker, OSC_SWY_AM_ID, am_dispatch, NULL, 0);
    if (s != SWY_OK) {
        opal_output(0, "osc swy: cannot register the window message handler: %s",
                    swy_status_string(s));
        return OMPI_ERROR;
    }
    c->ready = true;
    return OMPI_SUCCESS;
}

static int component_finalize(void) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    if (c->ready) {
        (void)swy_worker_set_am_handler(c->worker, OSC_SWY_AM_ID, NULL, NULL, 0);
    }
    if (c->own_worker) {
        ompi_osc_swy_close_endpoints();
        if (c->progress_registered) {
            opal_progress_unregister(progress_own_worker);
            c->progress_registered = false;
        }
        swy_worker_destroy(c->worker);
        swy_context_destroy(c->context);
    }
    c->worker = NULL;
    c->context = NULL;
    c->ready = false;
    c->own_worker = false;
    c->pml = NULL;
    OBJ_DESTRUCT(&c->endpoints);
    OBJ_DESTRUCT(&c->windows);
    return OMPI_SUCCESS;
}

static int component_query(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                           struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor) {
    (void)win;
    (void)base;
    (void)size;
    (void)disp_unit;
    (void)info;
    if (MPI_WIN_FLAVOR_SHARED == flavor && ompi_group_have_remote_peers(comm->c_local_group)) {
        return -1; /* shared memory needs every rank on this host */
    }
    return pml_is_swy() ? mca_osc_swy_component.priority : mca_osc_swy_component.priority_other;
}

static int component_select(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                            struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor,
                            int* model) {
    int rc = acquire_worker();
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_swy_window_create(win, base, size, disp_unit, comm, info, flavor, model);
}
