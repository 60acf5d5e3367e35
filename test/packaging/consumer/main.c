/* Smallest Switchyard application: link, call into the library, check the answers. */
#include <stdio.h>
#include <string.h>

#include <switchyard/switchyard.h>

int main(void) {
    const char* version = swy_version_string();
    const char* ok = swy_status_string(SWY_OK);
    const char* trunc = swy_status_string(SWY_ERR_MESSAGE_TRUNCATED);
    const char* unknown = swy_status_string((swy_status_t)-100);

    if (version == NULL || version[0] == '\0') {
        fprintf(stderr, "consumer: swy_version_string() returned nothing\n");
        return 1;
    }
    if (ok == NULL || trunc == NULL || unknown == NULL || strcmp(ok, trunc) == 0) {
        fprintf(stderr, "consumer: swy_status_string() gave bad strings\n");
        return 1;
    }
#ifdef SWY_EXPECTED_VERSION
    if (strcmp(version, SWY_EXPECTED_VERSION) != 0) {
        fprintf(stderr, "consumer: library version %s, package says %s\n", version,
                SWY_EXPECTED_VERSION);
        return 1;
    }
#endif
    /* The params ABI: a field_mask bit this library does not know is refused, the known one
       is accepted (a context built from the environment). */
    swy_context_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = (uint64_t)1 << 63;
    swy_context_h context = NULL;
    if (swy_context_create(&params, &context) != SWY_ERR_INVALID_PARAM) {
        fprintf(stderr, "consumer: an unknown field_mask bit was not refused\n");
        return 1;
    }
    params.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    params.config = NULL;
    if (swy_context_create(&params, &context) != SWY_OK) {
        fprintf(stderr, "consumer: swy_context_create failed\n");
        return 1;
    }
    swy_context_destroy(context);
    printf("switchyard %s: SWY_OK=\"%s\", SWY_ERR_MESSAGE_TRUNCATED=\"%s\"\n", version, ok, trunc);
    return 0;
}
