/* libucm.so.0 of the shim: the memory-event calls Open MPI's libmca_common_ucx imports.
 * Switchyard keeps no registration cache that munmap could make stale (it registers per
 * operation or through its own checked cache), so there are no events to install: these
 * are documented no-ops that report success, and Open MPI then prints no warning. */
#include <stddef.h>

#include <ucm/api/ucm.h>

void ucm_set_external_event(int events) { (void)events; }

void ucm_unset_external_event(int events) { (void)events; }

ucs_status_t ucm_test_events(int events) {
    (void)events;
    return UCS_OK;
}

ucs_status_t ucm_test_external_events(int events) {
    (void)events;
    return UCS_OK;
}

void ucm_vm_munmap(void* addr, size_t length) {
    (void)addr;
    (void)length;
}
