/* ucp_config_read / release / modify / print: UCX_* variables with a Switchyard meaning are
 * mapped onto the SWY_* configuration (an SWY_* variable set in the environment wins); the
 * other UCX_* variables that are set are reported once per process, since they do nothing. */
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"

extern char** environ;

/* UCX transport names -> Switchyard transports ("" = no Switchyard meaning: dropped). */
static const struct {
    const char* ucx;
    const char* swy;
} tls_map[] = {
    {"all", "all"},    {"self", "self"},     {"sm", "shm,cma"}, {"shm", "shm,cma"},
    {"posix", "shm"},  {"sysv", "shm"},      {"xpmem", "shm"},  {"knem", "cma"},
    {"cma", "cma"},    {"tcp", "tcp"},       {"ib", "verbs"},   {"rc", "verbs"},
    {"ud", "verbs"},   {"dc", "verbs"},      {"rc_v", "verbs"}, {"rc_verbs", "verbs"},
    {"rc_x", "verbs"}, {"rc_mlx5", "verbs"}, {"ud_v", "verbs"}, {"ud_verbs", "verbs"},
    {"ud_x", "verbs"}, {"ud_mlx5", "verbs"}, {"dc_x", "verbs"}, {"dc_mlx5", "verbs"},
    {"mm", "shm"},     {"cuda", ""},         {"cuda_copy", ""}, {"cuda_ipc", ""},
    {"gdr_copy", ""},  {"rocm", ""},         {"rocm_copy", ""}, {"rocm_ipc", ""},
};

/* Appends @p item to the comma list @p out unless already there. */
static void list_add(char* out, size_t cap, const char* item) {
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", item);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        /* exact token match in out? */
        size_t len = strlen(tok);
        const char* p = out;
        int found = 0;
        while ((p = strstr(p, tok)) != NULL) {
            if ((p == out || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) {
                found = 1;
                break;
            }
            p += len;
        }
        if (found) continue;
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", used ? "," : "", tok);
    }
}

/* UCX_TLS value -> SWY_TLS value. A positive list always keeps "self" (UCX reaches its own
 * process through any transport; Switchyard's endpoint to itself is the self transport). */
static ucs_status_t map_tls(const char* ucx, char* out, size_t cap) {
    out[0] = '\0';
    int negate = ucx[0] == '^';
    char copy[512];
    snprintf(copy, sizeof(copy), "%s", ucx + negate);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        const char* swy = NULL;
        for (size_t i = 0; i < sizeof(tls_map) / sizeof(tls_map[0]); ++i)
            if (strcmp(tok, tls_map[i].ucx) == 0) swy = tls_map[i].swy;
        if (swy == NULL) {
            ucp_shim_error("UCX_TLS", "unknown transport '%s' ignored", tok);
            continue;
        }
        if (swy[0] != '\0') list_add(out, cap, swy);
    }
    if (strstr(out, "all") != NULL) {
        snprintf(out, cap, "%s", negate ? "" : "all");
        return UCS_OK;
    }
    if (negate) {
        if (out[0] == '\0') return UCS_OK; /* excludes nothing Switchyard has */
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "^%s", out);
        snprintf(out, cap, "%s", tmp);
        return UCS_OK;
    }
    if (out[0] == '\0') return UCS_ERR_UNSUPPORTED; /* names only transports we lack */
    list_add(out, cap, "self");
    return UCS_OK;
}

/* UCX variable suffixes mapped one to one onto the SWY_ variable of the same suffix. */
static const char* const same_name[] = {"RNDV_THRESH", "ZCOPY_THRESH", "NET_DEVICES",
                                        "RNDV_SCHEME"};

/* Applies one UCX variable (suffix @p name, e.g. "TLS") to @p cfg.
 * @return UCS_OK, UCS_ERR_NO_ELEM (no Switchyard meaning) or UCS_ERR_INVALID_PARAM. */
static ucs_status_t apply(swy_config_h cfg, const char* name, const char* value) {
    /* An SWY_ variable set explicitly wins over its UCX_ spelling. */
    char swy_name[128];
    snprintf(swy_name, sizeof(swy_name), "SWY_%s", name);
    if (strcmp(name, "TLS") == 0) {
        if (getenv("SWY_TLS") != NULL) return UCS_OK;
        char mapped[512];
        ucs_status_t s = map_tls(value, mapped, sizeof(mapped));
        if (s != UCS_OK) {
            ucp_shim_error("UCX_TLS", "'%s' names no transport Switchyard has", value);
            return UCS_ERR_INVALID_PARAM;
        }
        if (mapped[0] == '\0') return UCS_OK;
        return swy_config_set(cfg, "TLS", mapped) == SWY_OK ? UCS_OK : UCS_ERR_INVALID_PARAM;
    }
    if (strcmp(name, "RNDV_SCHEME") == 0) { /* UCX's names of the zero-copy schemes */
        if (strcmp(value, "get_zcopy") == 0) value = "get";
        if (strcmp(value, "put_zcopy") == 0) value = "put";
    }
    for (size_t i = 0; i < sizeof(same_name) / sizeof(same_name[0]); ++i) {
        if (strcmp(name, same_name[i]) != 0) continue;
        if (getenv(swy_name) != NULL) return UCS_OK;
        if (swy_config_set(cfg, name, value) != SWY_OK) {
            ucp_shim_error("ucp_config", "UCX_%s=%s is not a valid Switchyard value", name, value);
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    }
    return UCS_ERR_NO_ELEM;
}

/* Walks the environment for @p prefix ("UCX_" or "UCX_<env_prefix>_"), applying what maps
 * and, when @p report, naming once per process the set variables that do nothing here. */
static ucs_status_t apply_env(swy_config_h cfg, const char* prefix, int report) {
    size_t plen = strlen(prefix);
    char ignored[1024] = "";
    for (char** e = environ; e != NULL && *e != NULL; ++e) {
        if (strncmp(*e, prefix, plen) != 0) continue;
        const char* eq = strchr(*e, '=');
        if (eq == NULL) continue;
        char name[128];
        size_t nlen = (size_t)(eq - *e) - plen;
        if (nlen == 0 || nlen >= sizeof(name)) continue;
        memcpy(name, *e + plen, nlen);
        name[nlen] = '\0';
        ucs_status_t s = apply(cfg, name, eq + 1);
        if (s == UCS_ERR_NO_ELEM) {
            size_t used = strlen(ignored);
            snprintf(ignored + used, sizeof(ignored) - used, "%s%s%s", used ? " " : "", prefix,
                     name);
        } else if (s != UCS_OK) {
            return s;
        }
    }
    if (report && ignored[0] != '\0')
        fprintf(stderr,
                "ucp(switchyard): these variables have no Switchyard meaning and are ignored: "
                "%s\n",
                ignored);
    return UCS_OK;
}

static atomic_int reported_env; /* report the unused UCX_* variables once per process */

ucs_status_t ucp_config_read(const char* env_prefix, const char* filename,
                             ucp_config_t** config_p) {
    (void)filename; /* UCX reads no file by default either */
    if (config_p == NULL) return UCS_ERR_INVALID_PARAM;
    ucp_config_t* c = calloc(1, sizeof(*c));
    if (c == NULL) return UCS_ERR_NO_MEMORY;
    if (swy_config_read(&c->swy) != SWY_OK) {
        free(c);
        return UCS_ERR_INVALID_PARAM;
    }
    int report = atomic_exchange(&reported_env, 1) == 0;
    ucs_status_t s = apply_env(c->swy, "UCX_", report);
    if (s == UCS_OK && env_prefix != NULL && env_prefix[0] != '\0') {
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "UCX_%s_", env_prefix);
        c->env_prefix = strdup(env_prefix);
        s = apply_env(c->swy, prefix, report); /* the prefixed spelling wins: applied last */
    }
    if (s != UCS_OK) {
        ucp_config_release(c);
        return s;
    }
    *config_p = c;
    return UCS_OK;
}

void ucp_config_release(ucp_config_t* config) {
    if (config == NULL) return;
    swy_config_release(config->swy);
    free(config->env_prefix);
    free(config);
}

ucs_status_t ucp_config_modify(ucp_config_t* config, const char* name, const char* value) {
    if (config == NULL || name == NULL || value == NULL) return UCS_ERR_INVALID_PARAM;
    if (strncmp(name, "UCX_", 4) == 0) name += 4;
    ucs_status_t s = apply(config->swy, name, value);
    if (s == UCS_ERR_NO_ELEM)
        ucp_shim_error("ucp_config_modify", "UCX_%s has no Switchyard meaning", name);
    return s;
}

void ucp_config_print(const ucp_config_t* config, FILE* stream, const char* title,
                      ucs_config_print_flags_t print_flags) {
    (void)print_flags;
    if (stream == NULL) return;
    if (title != NULL) fprintf(stream, "# %s\n", title);
    fprintf(stream, "# UCP %d.%d API on Switchyard %s: configuration as Switchyard variables\n",
            UCP_SHIM_API_MAJOR, UCP_SHIM_API_MINOR, swy_version_string());
    if (config == NULL) return;
    static const char* const shown[] = {"TLS", "NET_DEVICES", "RNDV_THRESH", "ZCOPY_THRESH",
                                        "RNDV_SCHEME"};
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); ++i) {
        char buf[256];
        if (swy_config_get(config->swy, shown[i], buf, sizeof(buf)) == SWY_OK)
            fprintf(stream, "SWY_%s=%s\n", shown[i], buf);
    }
}
