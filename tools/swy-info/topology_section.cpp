// "Topology" section: what hwloc found, and where this process runs.
#include <cstdio>
#include <string>

#include "introspect/introspect.h"
#include "sections.h"

namespace swy::info {

void print_topology() {
    std::printf("\nTopology\n");
    core::Topology topology;
    if (core::Topology::load(&topology) != Status::kOk) {
        std::printf("  unknown (hwloc failed to load the topology)\n");
        return;
    }
    if (!topology.available()) {
        std::printf("  unknown (built without hwloc)\n");
        return;
    }
    std::string text = topology.describe();
    // Indent every line by two so the section reads like the others.
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::printf("  %.*s\n", static_cast<int>(end - pos), text.data() + pos);
        pos = end + 1;
    }
    int node = topology.numa_node_of_caller();
    if (node >= 0) {
        std::printf("  NUMA node of this process: %d (of %d)\n", node, topology.numa_node_count());
    } else {
        std::printf("  NUMA node of this process: unknown\n");
    }
}

}  // namespace swy::info
