/*
 * pml swy: module table, Switchyard context and worker lifetime, peers (modex and lazy
 * endpoints), communicators, progress and dump.
 */
#include "pml_swy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/rte/rte.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"

#include "pml_swy_datatype.h"
#include "pml_swy_request.h"

mca_pml_swy_module_t ompi_pml_swy = {
    .super =
        {
            .pml_add_procs = mca_pml_swy_add_procs,
            .pml_del_procs = mca_pml_swy_del_procs,
            .pml_enable = mca_pml_swy_enable,
            .pml_progress = NULL, /* progress is registered with opal_progress instead */
            .pml_add_comm = mca_pml_swy_add_comm,
            .pml_del_comm = mca_pml_swy_del_comm,
            .pml_irecv_init = mca_pml_swy_irecv_init,
            .pml_irecv = mca_pml_swy_irecv,
            .pml_recv = mca_pml_swy_recv,
            .pml_isend_init = mca_pml_swy_isend_init,
            .pml_isend = mca_pml_swy_isend,
            .pml_send = mca_pml_swy_send,
            .pml_iprobe = mca_pml_swy_iprobe,
            .pml_probe = mca_pml_swy_probe,
            .pml_start = mca_pml_swy_start,
            .pml_improbe = mca_pml_swy_improbe,
            .pml_mprobe = mca_pml_swy_mprobe,
            .pml_imrecv = mca_pml_swy_imrecv,
            .pml_mrecv = mca_pml_swy_mrecv,
            .pml_dump = mca_pml_swy_dump,
            .pml_ft_event = NULL,
            .pml_max_contextid = PML_SWY_MAX_CONTEXTID,
            .pml_max_tag = PML_SWY_MAX_TAG,
            .pml_flags = 0,
        },
    .context = NULL,
    .worker = NULL,
    .requests_ready = false,
    .spare_send = NULL,
    .output = -1,
};

/* Publish this worker's address under the component's modex key (read by mca_pml_swy_connect
 * in every peer that sends to us). */
static int mca_pml_swy_publish_address(void) {
    void* address = NULL;
    size_t length = 0;
    int rc;
    swy_status_t s = swy_worker_get_address(ompi_pml_swy.worker, &address, &length);
    if (s != SWY_OK) {
        opal_output(0, "pml swy: swy_worker_get_address failed: %s", swy_status_string(s));
        return OMPI_ERROR;
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_pml_swy_component.pmlm_version, address, length);
    swy_worker_release_address(ompi_pml_swy.worker, address);
    if (rc != OMPI_SUCCESS) {
        opal_output(0, "pml swy: publishing the worker address in the modex failed: %d", rc);
        return OMPI_ERROR;
    }
    opal_output_verbose(2, ompi_pml_swy.output, "pml swy: published worker address (%zu bytes)",
                        length);
    return OMPI_SUCCESS;
}

/* The transports a job that runs on one node needs: no network. An idle tcp interface still
 * costs every progress pass a call and its checks (38 of the 225 instructions of an idle pass
 * over shm, callgrind), and a look at its sockets (a system call) now and then. */
static const char mca_pml_swy_single_node_tls[] = "^tcp,verbs";

/* True when every process of the job shares this node (a singleton too). */
static bool mca_pml_swy_job_on_one_node(void) {
    return (uint64_t)opal_process_info.num_local_peers + 1 >= (uint64_t)ompi_process_info.num_procs;
}

/* The configuration from the environment, told how many processes of the job share this
 * host (SWY_LOCAL_PROCS, unless the user set it): Switchyard's SWY_OVERSUBSCRIBED=auto compares
 * it with the cores, whatever launcher started us. A job on one node gets no network
 * transport unless the user chose SWY_TLS or pml_swy_single_node is off. */
static swy_status_t mca_pml_swy_read_config(swy_config_h* config) {
    swy_status_t s = swy_config_read(config);
    if (s != SWY_OK) {
        return s;
    }
    if (getenv("SWY_LOCAL_PROCS") == NULL) {
        char local[16];
        snprintf(local, sizeof(local), "%d", (int)opal_process_info.num_local_peers + 1);
        s = swy_config_set(*config, "LOCAL_PROCS", local);
    }
    if (s == SWY_OK && ompi_pml_swy.single_node && getenv("SWY_TLS") == NULL &&
        mca_pml_swy_job_on_one_node()) {
        s = swy_config_set(*config, "TLS", mca_pml_swy_single_node_tls);
    }
    if (s != SWY_OK) {
        swy_config_release(*config);
        *config = NULL;
        return s;
    }
    char tls[256];
    if (swy_config_get(*config, "TLS", tls, sizeof(tls)) == SWY_OK) {
        opal_output_verbose(2, ompi_pml_swy.output,
                            "pml swy: transports SWY_TLS=%s (%u processes, %d on this node)", tls,
                            (unsigned)ompi_process_info.num_procs,
                            (int)opal_process_info.num_local_peers + 1);
    }
    return s;
}

int mca_pml_swy_init(int enable_mpi_threads) {
    swy_worker_params_t wparams = {
        .field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = enable_mpi_threads ? SWY_THREAD_MODE_MULTI : SWY_THREAD_MODE_SINGLE};
    swy_config_h config = NULL;
    swy_status_t s = mca_pml_swy_read_config(&config);
    if (s != SWY_OK) {
        opal_output(0, "pml swy: reading the Switchyard configuration failed: %s",
                    swy_status_string(s));
        return OMPI_ERROR;
    }
    const swy_context_params_t cparams = {.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG,
                                          .config = config};
    s = swy_context_create(&cparams, &ompi_pml_swy.context);
    swy_config_release(config);
    if (s != SWY_OK) {
        opal_output(0, "pml swy: swy_context_create failed: %s", swy_status_string(s));
        return OMPI_ERROR;
    }
    s = swy_worker_create(ompi_pml_swy.context, &wparams, &ompi_pml_swy.worker);
    if (s != SWY_OK) {
        opal_output(0, "pml swy: swy_worker_create failed: %s", swy_status_string(s));
        goto err_context;
    }
    if (mca_pml_swy_publish_address() != OMPI_SUCCESS) {
        goto err_worker;
    }

    /* Room for the Switchyard request at the end of each of ours: one allocation for both.
     * A library whose requests need more alignment than swy_space has keeps its pool. */
    swy_worker_attr_t wattr = {.field_mask = SWY_WORKER_ATTR_FIELD_REQUEST_SIZE};
    ompi_pml_swy.swy_request_size = 0;
    if (swy_worker_query(ompi_pml_swy.worker, &wattr) == SWY_OK && wattr.request_alignment <= 16) {
        ompi_pml_swy.swy_request_size = (wattr.request_size + 15) & ~(size_t)15;
    }
    OBJ_CONSTRUCT(&ompi_pml_swy.requests, opal_free_list_t);
    if (opal_free_list_init(
            &ompi_pml_swy.requests, sizeof(mca_pml_swy_request_t) + ompi_pml_swy.swy_request_size,
            opal_cache_line_size, OBJ_CLASS(mca_pml_swy_request_t), 0, opal_cache_line_size, 128,
            -1, 128, NULL, 0, NULL, NULL, NULL) != OPAL_SUCCESS) {
        opal_output(0, "pml swy: cannot allocate the request free list");
        OBJ_DESTRUCT(&ompi_pml_swy.requests);
        goto err_worker;
    }
    ompi_pml_swy.requests_ready = true;
    if (mca_pml_swy_dt_init() != OMPI_SUCCESS) {
        opal_output(0, "pml swy: cannot allocate the datatype state free list");
        OBJ_DESTRUCT(&ompi_pml_swy.requests);
        ompi_pml_swy.requests_ready = false;
        goto err_worker;
    }
    mca_pml_swy_completed_request_init(&ompi_pml_swy.completed_send_req);

    opal_progress_register(mca_pml_swy_progress);
    opal_output_verbose(2, ompi_pml_swy.output,
                        "pml swy: switchyard %s context %p worker %p (%s thread mode)",
                        swy_version_string(), (void*)ompi_pml_swy.context,
                        (void*)ompi_pml_swy.worker, enable_mpi_threads ? "multi" : "single");
    return OMPI_SUCCESS;

err_worker:
    swy_worker_destroy(ompi_pml_swy.worker);
    ompi_pml_swy.worker = NULL;
err_context:
    swy_context_destroy(ompi_pml_swy.context);
    ompi_pml_swy.context = NULL;
    return OMPI_ERROR;
}

int mca_pml_swy_cleanup(void) {
    if (ompi_pml_swy.worker == NULL) {
        return OMPI_SUCCESS;
    }
    opal_progress_unregister(mca_pml_swy_progress);
    /* Destroying the worker force-closes endpoints still open (a peer never del_procs'ed)
     * and completes their requests as canceled, so do it before the free list goes. */
    swy_worker_destroy(ompi_pml_swy.worker);
    ompi_pml_swy.worker = NULL;
    mca_pml_swy_dt_fini(); /* the worker finished every operation's datatype state */
    if (ompi_pml_swy.requests_ready) {
        if (ompi_pml_swy.spare_send != NULL) {
            opal_free_list_return(&ompi_pml_swy.requests, &ompi_pml_swy.spare_send->ompi.super);
            ompi_pml_swy.spare_send = NULL;
        }
        mca_pml_swy_completed_request_fini(&ompi_pml_swy.completed_send_req);
        OBJ_DESTRUCT(&ompi_pml_swy.requests);
        ompi_pml_swy.requests_ready = false;
    }
    swy_context_destroy(ompi_pml_swy.context);
    ompi_pml_swy.context = NULL;
    return OMPI_SUCCESS;
}

static void mca_pml_swy_ep_error(void* arg, swy_ep_h ep, swy_status_t status) {
    ompi_proc_t* proc = (ompi_proc_t*)arg;
    (void)ep;
    opal_output(0, "pml swy: connection to %s failed: %s", OMPI_NAME_PRINT(&proc->super.proc_name),
                swy_status_string(status));
}

swy_ep_h mca_pml_swy_connect(ompi_proc_t* proc) {
    void* address = NULL;
    size_t length = 0;
    int rc;
    swy_ep_h ep = NULL;

    if (OPAL_UNLIKELY(proc == NULL)) {
        opal_output(0, "pml swy: send to an unknown process");
        return NULL;
    }
    OPAL_MODEX_RECV(rc, &mca_pml_swy_component.pmlm_version, &proc->super.proc_name, &address,
                    &length);
    if (rc != OMPI_SUCCESS || address == NULL) {
        opal_output(0,
                    "pml swy: no Switchyard address for %s in the modex (%d): does it run pml "
                    "swy too?",
                    OMPI_NAME_PRINT(&proc->super.proc_name), rc);
        return NULL;
    }
    swy_ep_params_t params = {
        .field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_FLAGS |
                      SWY_EP_PARAM_FIELD_ERR_HANDLER,
        .remote_address = address,
        .remote_address_length = length,
        .flags = 0,
        .err_cb = mca_pml_swy_ep_error,
        .err_arg = proc,
    };
    swy_status_t s = swy_ep_create(ompi_pml_swy.worker, &params, &ep);
    free(address);
    if (s != SWY_OK) {
        opal_output(0, "pml swy: cannot connect to %s: %s", OMPI_NAME_PRINT(&proc->super.proc_name),
                    swy_status_string(s));
        return NULL;
    }
    proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = ep;
    if (ompi_pml_swy.verbose >= 2) {
        swy_ep_attr_t attr = {.field_mask = SWY_EP_ATTR_FIELD_LANE};
        if (swy_ep_query(ep, &attr) == SWY_OK) {
            opal_output_verbose(
                2, ompi_pml_swy.output, "pml swy: connected to %s over %s (small messages: %s)",
                OMPI_NAME_PRINT(&proc->super.proc_name), attr.transport, attr.small_protocol);
        }
    }
    return ep;
}

/* The endpoint to @p proc, connecting on first use (the PML's endpoint slot of the proc). */
static swy_ep_h mca_pml_swy_ep_for_proc(ompi_proc_t* proc) {
    if (proc == NULL) {
        return NULL;
    }
    swy_ep_h ep = (swy_ep_h)proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    return ep != NULL ? ep : mca_pml_swy_connect(proc);
}

const mca_pml_swy_shared_worker_t* mca_pml_swy_shared_worker(void) {
    static mca_pml_swy_shared_worker_t shared;
    if (ompi_pml_swy.worker == NULL) {
        return NULL;
    }
    shared.context = ompi_pml_swy.context;
    shared.worker = ompi_pml_swy.worker;
    shared.ep_for_proc = mca_pml_swy_ep_for_proc;
    return &shared;
}

int mca_pml_swy_add_procs(struct ompi_proc_t** procs, size_t nprocs) {
    (void)procs;
    (void)nprocs;
    return OMPI_SUCCESS;
}

int mca_pml_swy_del_procs(struct ompi_proc_t** procs, size_t nprocs) {
    ++ompi_pml_swy.eps_epoch; /* communicators may cache the endpoints closed below */
    for (size_t i = 0; i < nprocs; ++i) {
        swy_ep_h ep = (swy_ep_h)procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
        if (ep == NULL) {
            continue;
        }
        procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = NULL;
        swy_request_h req = NULL;
        swy_status_t s = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req);
        if (s == SWY_INPROGRESS) {
            while ((s = swy_request_test(req)) == SWY_INPROGRESS) {
                (void)swy_worker_progress(ompi_pml_swy.worker);
            }
            swy_request_free(req);
        }
        if (s != SWY_OK) {
            opal_output_verbose(1, ompi_pml_swy.output, "pml swy: closing the endpoint to %s: %s",
                                OMPI_NAME_PRINT(&procs[i]->super.proc_name), swy_status_string(s));
        }
    }
    return OMPI_SUCCESS;
}

int mca_pml_swy_enable(bool enable) {
    if (enable) {
        int rc = mca_pml_swy_dt_enable();
        if (rc != OMPI_SUCCESS) {
            opal_output(0, "pml swy: cannot create the datatype attribute key: %d", rc);
            return rc;
        }
        opal_output_verbose(1, ompi_pml_swy.output, "pml swy selected (switchyard %s, priority %d)",
                            swy_version_string(), ompi_pml_swy.priority);
    }
    return OMPI_SUCCESS;
}

int mca_pml_swy_progress(void) { return (int)swy_worker_progress(ompi_pml_swy.worker); }

int mca_pml_swy_add_comm(struct ompi_communicator_t* comm) {
    int size = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    if (size > PML_SWY_MAX_RANKS || ompi_comm_size(comm) > PML_SWY_MAX_RANKS ||
        comm->c_contextid > PML_SWY_MAX_CONTEXTID) {
        opal_output(0,
                    "pml swy: communicator %s (size %d, context id %u) does not fit the tag "
                    "layout (at most %d ranks, context id %d)",
                    comm->c_name, size, (unsigned)comm->c_contextid, PML_SWY_MAX_RANKS,
                    PML_SWY_MAX_CONTEXTID);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    struct mca_pml_comm_t* pc =
        calloc(1, sizeof(struct mca_pml_comm_t) + (size_t)size * sizeof(swy_ep_h));
    if (pc == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    pc->send_tag_base = pml_swy_send_tag(0, comm->c_my_rank, comm->c_contextid);
    pc->size = size;
    pc->eps_epoch = ompi_pml_swy.eps_epoch;
    comm->c_pml_comm = pc;
    return OMPI_SUCCESS;
}

int mca_pml_swy_del_comm(struct ompi_communicator_t* comm) {
    free(comm->c_pml_comm);
    comm->c_pml_comm = NULL;
    return OMPI_SUCCESS;
}

swy_ep_h mca_pml_swy_get_ep_slow(ompi_communicator_t* comm, int rank) {
    ompi_proc_t* proc = ompi_comm_peer_lookup(comm, rank);
    swy_ep_h ep = (swy_ep_h)proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    if (ep == NULL) {
        ep = mca_pml_swy_connect(proc);
    }
    struct mca_pml_comm_t* pc = comm->c_pml_comm;
    if (pc != NULL && pc->eps_epoch != ompi_pml_swy.eps_epoch) {
        /* del_procs closed endpoints since these were cached: forget them all. */
        memset(pc->eps, 0, (size_t)pc->size * sizeof(swy_ep_h));
        pc->eps_epoch = ompi_pml_swy.eps_epoch;
    }
    if (ep != NULL && pc != NULL && rank < pc->size) {
        pc->eps[rank] = ep;
    }
    return ep;
}

int mca_pml_swy_dump(struct ompi_communicator_t* comm, int verbose) {
    int size = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    opal_output(0, "pml swy: communicator %s (context id %u), %d peers", comm->c_name,
                (unsigned)comm->c_contextid, size);
    for (int rank = 0; rank < size; ++rank) {
        ompi_proc_t* proc = ompi_comm_peer_lookup(comm, rank);
        swy_ep_h ep =
            proc != NULL ? (swy_ep_h)proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] : NULL;
        swy_ep_attr_t attr = {.field_mask = SWY_EP_ATTR_FIELD_LANE};
        if (ep == NULL || swy_ep_query(ep, &attr) != SWY_OK) {
            opal_output(0, "  rank %d: not connected", rank);
            continue;
        }
        opal_output(0, "  rank %d: %s, small messages %s, pio %d, credits %u, %s", rank,
                    attr.transport, attr.small_protocol, attr.pio, attr.credits,
                    attr.connected ? "connected" : "failed");
        if (verbose > 0) {
            char table[4096];
            if (swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, table, sizeof(table)) !=
                SWY_ERR_INVALID_PARAM) {
                opal_output(0, "%s", table);
            }
        }
    }
    return OMPI_SUCCESS;
}
