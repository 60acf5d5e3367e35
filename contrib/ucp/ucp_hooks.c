/* Weak defaults for what the one-sided half (ucp_rma*.c, ucp_am*.c, ...) provides. Its strong
 * definitions replace these at link time; without it the library still loads and runs
 * point-to-point traffic: the hooks do nothing, MPICH's start-up call to
 * ucp_worker_set_am_handler succeeds without registering, and ucp_mem_map reports
 * UCS_ERR_UNSUPPORTED (MPICH then runs MPI RMA over active messages). */
#include "ucp_shim.h"

#define UCP_SHIM_WEAK __attribute__((weak))

UCP_SHIM_WEAK ucs_status_t ucp_shim_rma_context_init(struct ucp_context* context) {
    (void)context;
    return UCS_OK;
}
UCP_SHIM_WEAK void ucp_shim_rma_context_cleanup(struct ucp_context* context) { (void)context; }
UCP_SHIM_WEAK ucs_status_t ucp_shim_rma_worker_init(struct ucp_worker* worker) {
    (void)worker;
    return UCS_OK;
}
UCP_SHIM_WEAK void ucp_shim_rma_worker_cleanup(struct ucp_worker* worker) { (void)worker; }
UCP_SHIM_WEAK void ucp_shim_rma_ep_cleanup(struct ucp_ep* ep) { (void)ep; }
UCP_SHIM_WEAK unsigned ucp_shim_rma_progress(struct ucp_worker* worker) {
    (void)worker;
    return 0;
}

UCP_SHIM_WEAK ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id,
                                                     ucp_am_callback_t cb, void* arg,
                                                     uint32_t flags) {
    (void)worker, (void)id, (void)cb, (void)arg, (void)flags;
    return UCS_OK;
}

UCP_SHIM_WEAK ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t* params,
                                       ucp_mem_h* memh_p) {
    (void)context, (void)params, (void)memh_p;
    return UCS_ERR_UNSUPPORTED;
}
