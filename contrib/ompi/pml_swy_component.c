/*
 * pml swy: the MCA component (what Open MPI's component loader finds in mca_pml_swy.so) and
 * its MCA parameters.
 */
#include "pml_swy.h"

#include "opal/mca/base/mca_base_var.h"

static int mca_pml_swy_component_register(void);
static int mca_pml_swy_component_open(void);
static int mca_pml_swy_component_close(void);
static mca_pml_base_module_t* mca_pml_swy_component_init(int* priority,
                                                         bool enable_progress_threads,
                                                         bool enable_mpi_threads);
static int mca_pml_swy_component_fini(void);

/* Open MPI looks this symbol up by name: mca_<framework>_<component>_component. */
mca_pml_base_component_2_0_0_t mca_pml_swy_component = {
    .pmlm_version =
        {
            MCA_PML_BASE_VERSION_2_0_0,
            .mca_component_name = "swy",
            .mca_component_major_version = PML_SWY_VERSION_MAJOR,
            .mca_component_minor_version = PML_SWY_VERSION_MINOR,
            .mca_component_release_version = PML_SWY_VERSION_PATCH,
            .mca_open_component = mca_pml_swy_component_open,
            .mca_close_component = mca_pml_swy_component_close,
            .mca_query_component = NULL,
            .mca_register_component_params = mca_pml_swy_component_register,
        },
    .pmlm_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
    .pmlm_init = mca_pml_swy_component_init,
    .pmlm_finalize = mca_pml_swy_component_fini,
};

static int mca_pml_swy_component_register(void) {
    /* Low by default so that ob1 (20) and ucx (51) keep winning. Open MPI 4.1 only weighs
     * priorities among its built-in PMLs, so raising this alone never selects swy: --mca pml
     * swy (or OMPI_MCA_pml=swy) does (README.md). */
    ompi_pml_swy.priority = 5;
    (void)mca_base_component_var_register(
        &mca_pml_swy_component.pmlm_version, "priority",
        "Selection priority of pml swy (ob1 is 20, ucx 51); select swy with --mca pml swy",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &ompi_pml_swy.priority);

    ompi_pml_swy.verbose = 0;
    (void)mca_base_component_var_register(
        &mca_pml_swy_component.pmlm_version, "verbose",
        "Verbosity of pml swy (1: say when it is selected; 2: init, connections; 9: everything)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &ompi_pml_swy.verbose);

    ompi_pml_swy.progress_iterations = 100;
    (void)mca_base_component_var_register(
        &mca_pml_swy_component.pmlm_version, "progress_iterations",
        "Blocking calls poll Switchyard directly and call the full opal_progress() once every "
        "this many polls (>= 1)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
        &ompi_pml_swy.progress_iterations);

    ompi_pml_swy.single_node = true;
    (void)mca_base_component_var_register(
        &mca_pml_swy_component.pmlm_version, "single_node",
        "When every process of the job runs on this node and SWY_TLS is not set, open no "
        "network transport (SWY_TLS=^tcp,verbs): each progress pass then skips them. Set to 0 "
        "if processes on other nodes join later (MPI_Comm_spawn, MPI_Comm_connect)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &ompi_pml_swy.single_node);
    return OMPI_SUCCESS;
}

static int mca_pml_swy_component_open(void) {
    ompi_pml_swy.output = opal_output_open(NULL);
    opal_output_set_verbosity(ompi_pml_swy.output, ompi_pml_swy.verbose);
    if (ompi_pml_swy.progress_iterations < 1) {
        opal_output(0, "pml swy: pml_swy_progress_iterations must be >= 1 (got %d); using 1",
                    ompi_pml_swy.progress_iterations);
        ompi_pml_swy.progress_iterations = 1;
    }
    return OMPI_SUCCESS;
}

static int mca_pml_swy_component_close(void) {
    opal_output_close(ompi_pml_swy.output);
    ompi_pml_swy.output = -1;
    return OMPI_SUCCESS;
}

static mca_pml_base_module_t* mca_pml_swy_component_init(int* priority,
                                                         bool enable_progress_threads,
                                                         bool enable_mpi_threads) {
    (void)enable_progress_threads;
    if (mca_pml_swy_init(enable_mpi_threads) != OMPI_SUCCESS) {
        return NULL;
    }
    *priority = ompi_pml_swy.priority;
    opal_output_verbose(2, ompi_pml_swy.output, "pml swy: init done, priority %d", *priority);
    return &ompi_pml_swy.super;
}

static int mca_pml_swy_component_fini(void) { return mca_pml_swy_cleanup(); }
