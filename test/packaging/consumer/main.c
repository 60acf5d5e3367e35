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
    printf("switchyard %s: SWY_OK=\"%s\", SWY_ERR_MESSAGE_TRUNCATED=\"%s\"\n", version, ok, trunc);
    return 0;
}
