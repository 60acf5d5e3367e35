// "PIO pool" section: the receive window of a real worker, seen through the public C API.
#include <cstdio>

#include <switchyard/switchyard.h>

#include "introspect/introspect.h"
#include "sections.h"

namespace swy::info {

int print_pio_pool(const common::Config& config) {
    std::printf("\nPIO pool (a fresh worker, through swy_worker_query)\n");
    swy_context_h context = nullptr;
    swy_status_t s = swy_context_create(nullptr, &context);
    if (s != SWY_OK) {
        std::printf("  cannot create a context: %s\n", swy_status_string(s));
        return 1;
    }
    swy_worker_h worker = nullptr;
    s = swy_worker_create(context, nullptr, &worker);
    if (s != SWY_OK) {
        std::printf("  cannot create a worker: %s\n", swy_status_string(s));
        swy_context_destroy(context);
        return 1;
    }
    swy_worker_attr_t attr{};
    attr.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
    s = swy_worker_query(worker, &attr);
    if (s == SWY_OK) {
        std::printf("  %-26s %u\n", "pio_window_slots", attr.pio_window_slots);
        std::printf("  %-26s %u\n", "pio_window_free", attr.pio_window_free);
        std::printf("  %-26s %u\n", "pio_endpoints_max", attr.pio_endpoints_max);
        std::printf("  %-26s %llu\n", "SWY_PIO_RESERVED",
                    static_cast<unsigned long long>(config.get_unsigned("PIO_RESERVED")));
        std::printf(
            "  Senders beyond the window fall back to eager_bcopy through the shared "
            "FIFO.\n");
    } else {
        std::printf("  swy_worker_query failed: %s\n", swy_status_string(s));
    }
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    return s == SWY_OK ? 0 : 1;
}

}  // namespace swy::info
