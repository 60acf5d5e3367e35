#include "protocols/oversubscription.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "common/config.h"

namespace swy::proto {
namespace {

/// A positive count from the environment variable @p name, or 0.
unsigned env_count(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return 0;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (*end != '\0' || n == 0 || n > (1u << 20)) return 0;  // not a count: ignore it
    return static_cast<unsigned>(n);
}

}  // namespace

unsigned local_processes(const common::Config& config) {
    if (const uint64_t n = config.get_unsigned("LOCAL_PROCS"); n != 0) {
        return static_cast<unsigned>(n);
    }
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
        if (const unsigned n = env_count(name); n != 0) return n;
    }
    return 0;
}

unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 1) return static_cast<unsigned>(n);
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<unsigned>(online) : 1;
}

Oversubscription detect_oversubscription(const common::Config& config) {
    const std::string mode = config.get_string("OVERSUBSCRIBED");
    if (mode == "yes" || mode == "no") return {mode == "yes", "SWY_OVERSUBSCRIBED=" + mode};
    const unsigned procs = local_processes(config);
    const unsigned cores = usable_cores();
    if (procs == 0) return {false, "local process count unknown"};
    const uint64_t per_core = config.get_unsigned("OVERSUBSCRIBED_PER_CORE");
    return {uint64_t{procs} > uint64_t{cores} * per_core,
            std::to_string(procs) + " local processes on " + std::to_string(cores) + " cores"};
}

}  // namespace swy::proto
