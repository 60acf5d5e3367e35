#include <cstdio>
#include <string>

#include <switchyard/switchyard.h>

#include "introspect/introspect.h"
#include "sections.h"

namespace swy::info {

int print_summary() {
    std::printf("Switchyard %s\n", swy_version_string());

    common::Config config;
    std::string error;
    if (common::Config::from_environment(&config, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: bad configuration: %s\n", error.c_str());
        return 1;
    }
    core::Context* context = nullptr;
    if (core::Context::create(config, &context, &error) != Status::kOk) {
        std::fprintf(stderr, "swy-info: cannot create a context: %s\n", error.c_str());
        return 1;
    }
    // Transports first: the CMA probe forks, which is best done before the PIO-pool section
    // creates a worker (and whatever threads or descriptors come with it).
    print_transports(config, *context);
    delete context;

    int rc = print_pio_pool(config);
    print_topology();
    return rc;
}

}  // namespace swy::info
