/* Context: ucp_init_version, ucp_cleanup, ucp_context_query, ucp_context_print_info and the
 * version calls. One Switchyard context per UCP context. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucp_shim.h"

void ucp_get_version(unsigned* major_version, unsigned* minor_version, unsigned* release_number) {
    if (major_version != NULL) *major_version = UCP_SHIM_API_MAJOR;
    if (minor_version != NULL) *minor_version = UCP_SHIM_API_MINOR;
    if (release_number != NULL) *release_number = UCP_SHIM_API_RELEASE;
}

const char* ucp_get_version_string(void) { return "1.13.0 (switchyard)"; }

ucs_status_t ucp_lib_query(ucp_lib_attr_t* attr) {
    if (attr == NULL) return UCS_ERR_INVALID_PARAM;
    if (attr->field_mask & UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL)
        attr->max_thread_level = UCS_THREAD_MODE_MULTI;
    return UCS_OK;
}

static atomic_int announced; /* the SWY_UCP_VERBOSE line is printed once per process */

/* SWY_UCP_VERBOSE through the configuration (its bool syntax), or the environment when the
 * Switchyard library is older than the variable. */
static int verbose(const ucp_config_t* config) {
    char v[16];
    if (config != NULL && swy_config_get(config->swy, "UCP_VERBOSE", v, sizeof(v)) == SWY_OK)
        return v[0] == 'y' || v[0] == 'Y' || v[0] == '1' || v[0] == 't' || v[0] == 'T';
    return ucp_shim_verbose();
}

static void announce(const struct ucp_context* c, const ucp_config_t* config) {
    if (!verbose(config) || atomic_exchange(&announced, 1) != 0) return;
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    char tls[128] = "all";
    if (config != NULL) swy_config_get(config->swy, "TLS", tls, sizeof(tls));
    fprintf(stderr,
            "ucp(switchyard): pid %d on %s: UCP %d.%d API running on Switchyard %s "
            "(context %s, SWY_TLS=%s)\n",
            (int)getpid(), host, UCP_SHIM_API_MAJOR, UCP_SHIM_API_MINOR, swy_version_string(),
            c->name, tls);
}

ucs_status_t ucp_init_version(unsigned api_major_version, unsigned api_minor_version,
                              const ucp_params_t* params, const ucp_config_t* config,
                              ucp_context_h* context_p) {
    if (context_p == NULL || params == NULL) {
        ucp_shim_error("ucp_init", "NULL argument");
        return UCS_ERR_INVALID_PARAM;
    }
    if (api_major_version != UCP_SHIM_API_MAJOR) {
        ucp_shim_error("ucp_init", "built for UCP API %u.%u; this library provides %d.%d",
                       api_major_version, api_minor_version, UCP_SHIM_API_MAJOR,
                       UCP_SHIM_API_MINOR);
        return UCS_ERR_UNSUPPORTED;
    }
    struct ucp_context* c = calloc(1, sizeof(*c));
    if (c == NULL) return UCS_ERR_NO_MEMORY;
    snprintf(c->name, sizeof(c->name), "switchyard");
    uint64_t m = params->field_mask;
    if (m & UCP_PARAM_FIELD_FEATURES) c->features = params->features;
    if (m & UCP_PARAM_FIELD_REQUEST_SIZE) c->request_size = params->request_size;
    if (m & UCP_PARAM_FIELD_REQUEST_INIT) c->request_init = params->request_init;
    if (m & UCP_PARAM_FIELD_REQUEST_CLEANUP) c->request_cleanup = params->request_cleanup;
    if (m & UCP_PARAM_FIELD_MT_WORKERS_SHARED) c->mt_workers_shared = params->mt_workers_shared;
    if ((m & UCP_PARAM_FIELD_NAME) && params->name != NULL)
        snprintf(c->name, sizeof(c->name), "%s", params->name);
    /* TAG_SENDER_MASK, ESTIMATED_NUM_EPS/PPN: hints with no Switchyard use. */

    ucp_config_t* own = NULL;
    if (config == NULL) {
        ucs_status_t s = ucp_config_read(NULL, NULL, &own);
        if (s != UCS_OK) {
            free(c);
            return s;
        }
        config = own;
    }
    swy_context_params_t cp = {.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG, .config = config->swy};
    swy_status_t st = swy_context_create(&cp, &c->swy);
    if (st != SWY_OK) {
        ucp_shim_error("ucp_init", "Switchyard context: %s", swy_status_string(st));
        ucp_config_release(own);
        free(c);
        return ucp_shim_status(st);
    }
    announce(c, config);
    ucp_config_release(own);
    ucs_status_t s = ucp_shim_rma_context_init(c);
    if (s != UCS_OK) {
        swy_context_destroy(c->swy);
        free(c);
        return s;
    }
    *context_p = c;
    return UCS_OK;
}

void ucp_cleanup(ucp_context_h context) {
    if (context == NULL) return;
    ucp_shim_rma_context_cleanup(context);
    swy_context_destroy(context->swy);
    free(context);
}

ucs_status_t ucp_context_query(ucp_context_h context, ucp_context_attr_t* attr) {
    if (context == NULL || attr == NULL) return UCS_ERR_INVALID_PARAM;
    if (attr->field_mask & UCP_ATTR_FIELD_REQUEST_SIZE)
        attr->request_size = sizeof(ucp_shim_request_t);
    if (attr->field_mask & UCP_ATTR_FIELD_THREAD_MODE)
        attr->thread_mode =
            context->mt_workers_shared ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    if (attr->field_mask & UCP_ATTR_FIELD_MEMORY_TYPES)
        attr->memory_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    if (attr->field_mask & UCP_ATTR_FIELD_NAME)
        snprintf(attr->name, sizeof(attr->name), "%.*s", (int)sizeof(attr->name) - 1,
                 context->name);
    return UCS_OK;
}

void ucp_context_print_info(const ucp_context_h context, FILE* stream) {
    if (context == NULL || stream == NULL) return;
    fprintf(stream, "#\n# UCP context (UCP %d.%d API on Switchyard %s)\n#\n", UCP_SHIM_API_MAJOR,
            UCP_SHIM_API_MINOR, swy_version_string());
    fprintf(stream, "#            name: %s\n", context->name);
    /* One "# resource" line per Switchyard transport, in UCX's format (Open MPI's
     * opal_common_ucx_support_level parses "<tl>/<device>" from them). Switchyard opens its
     * transports per worker (those SWY_TLS enables and this host has), so the list names the
     * transports it has, not which ones a worker will open. */
    static const char* const tls[] = {"self/memory", "shm/memory", "cma/memory", "tcp/network",
                                      "verbs/rdma"};
    for (int i = 0; i < (int)(sizeof(tls) / sizeof(tls[0])); ++i)
        fprintf(stream, "# resource %d  :  md %d  dev %d  flags -- %s\n", i, i, i, tls[i]);
    fprintf(stream, "#\n");
}
