#include "core/topology.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#ifdef SWY_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace swy::core {

#ifdef SWY_HAVE_HWLOC
namespace {

// "32 KiB", "1.5 MiB": sizes people read, not byte counts.
std::string format_bytes(uint64_t bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
        value /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (value == static_cast<double>(static_cast<uint64_t>(value))) {
        std::snprintf(buf, sizeof(buf), "%" PRIu64 " %s", static_cast<uint64_t>(value),
                      kUnits[unit]);
    } else {
        std::snprintf(buf, sizeof(buf), "%.1f %s", value, kUnits[unit]);
    }
    return buf;
}

}  // namespace
#endif

Topology::Topology(Topology&& other) noexcept {
#ifdef SWY_HAVE_HWLOC
    topo_ = std::exchange(other.topo_, nullptr);
#else
    (void)other;
#endif
}

Topology& Topology::operator=(Topology&& other) noexcept {
    if (this != &other) {
        reset();
#ifdef SWY_HAVE_HWLOC
        topo_ = std::exchange(other.topo_, nullptr);
#endif
    }
    return *this;
}

Topology::~Topology() { reset(); }

#ifdef SWY_HAVE_HWLOC

namespace {

// RAII for hwloc bitmaps so early returns cannot leak them.
class Bitmap {
public:
    Bitmap() : set_(hwloc_bitmap_alloc()) {}
    ~Bitmap() { hwloc_bitmap_free(set_); }
    Bitmap(const Bitmap&) = delete;
    Bitmap& operator=(const Bitmap&) = delete;
    hwloc_bitmap_t get() const { return set_; }
    explicit operator bool() const { return set_ != nullptr; }

private:
    hwloc_bitmap_t set_;
};

std::string list_string(hwloc_const_bitmap_t set) {
    if (set == nullptr) return "?";
    char* text = nullptr;
    if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "?";
    std::string out(text);
    std::free(text);
    return out.empty() ? "none" : out;
}

// The calling thread's CPU binding, restricted to CPUs that exist. Falls back to the
// process binding where per-thread binding cannot be read. False when unknown.
bool caller_cpuset(hwloc_topology_t topo, hwloc_bitmap_t set) {
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0 &&
        hwloc_get_cpubind(topo, set, 0) != 0) {
        return false;
    }
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(topo));
    return !hwloc_bitmap_iszero(set);
}

// The NUMA node (with CPUs) whose cpuset contains @p set, or null.
hwloc_obj_t numa_node_containing(hwloc_topology_t topo, hwloc_const_bitmap_t set) {
    for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr);
         node != nullptr; node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
        if (node->cpuset != nullptr && !hwloc_bitmap_iszero(node->cpuset) &&
            hwloc_bitmap_isincluded(set, node->cpuset)) {
            return node;
        }
    }
    return nullptr;
}

hwloc_obj_t caller_numa_obj(hwloc_topology_t topo) {
    Bitmap set;
    if (!set || !caller_cpuset(topo, set.get())) return nullptr;
    if (hwloc_obj_t node = numa_node_containing(topo, set.get())) return node;
    // Bound across nodes (or not bound at all): the node it is running on right now.
    if (hwloc_get_last_cpu_location(topo, set.get(), HWLOC_CPUBIND_THREAD) != 0 &&
        hwloc_get_last_cpu_location(topo, set.get(), 0) != 0) {
        return nullptr;
    }
    return numa_node_containing(topo, set.get());
}

const char* cache_prefix(hwloc_obj_type_t type) {
    switch (type) {
        case HWLOC_OBJ_L1CACHE:
        case HWLOC_OBJ_L1ICACHE: return "L1";
        case HWLOC_OBJ_L2CACHE:
        case HWLOC_OBJ_L2ICACHE: return "L2";
        case HWLOC_OBJ_L3CACHE:
        case HWLOC_OBJ_L3ICACHE: return "L3";
        case HWLOC_OBJ_L4CACHE: return "L4";
        case HWLOC_OBJ_L5CACHE: return "L5";
        default: return "L?";
    }
}

void describe_caches(hwloc_topology_t topo, std::string& out) {
    static const hwloc_obj_type_t kCacheTypes[] = {
        HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L2ICACHE,
        HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L3ICACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE};
    bool any = false;
    out += "  caches:\n";
    for (hwloc_obj_type_t type : kCacheTypes) {
        // Hybrid CPUs have caches of several sizes at one level: count each size.
        std::map<uint64_t, unsigned> by_size;
        unsigned line = 0;
        hwloc_obj_cache_type_t kind = HWLOC_OBJ_CACHE_UNIFIED;
        for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topo, type, nullptr); obj != nullptr;
             obj = hwloc_get_next_obj_by_type(topo, type, obj)) {
            by_size[obj->attr->cache.size]++;
            line = obj->attr->cache.linesize;
            kind = obj->attr->cache.type;
        }
        if (by_size.empty()) continue;
        any = true;
        std::string name = cache_prefix(type);
        if (kind == HWLOC_OBJ_CACHE_DATA) name += "d";
        if (kind == HWLOC_OBJ_CACHE_INSTRUCTION) name += "i";
        out += "    " + name + " cache:";
        const char* sep = " ";
        for (const auto& [size, count] : by_size) {
            out += sep + (size != 0 ? format_bytes(size) : std::string("size unknown")) + " x" +
                   std::to_string(count);
            sep = ", ";
        }
        if (line != 0) out += " (line " + std::to_string(line) + " B)";
        out += "\n";
    }
    if (!any) out += "    none reported\n";
}

const char* osdev_kind(hwloc_obj_osdev_type_t type) {
    switch (type) {
        case HWLOC_OBJ_OSDEV_NETWORK: return "network";
        case HWLOC_OBJ_OSDEV_OPENFABRICS: return "OpenFabrics";
        case HWLOC_OBJ_OSDEV_GPU: return "GPU";
        case HWLOC_OBJ_OSDEV_COPROC: return "co-processor";
        default: return nullptr;  // block and DMA devices do not carry messages
    }
}

const char* pci_class_name(unsigned class_id) {
    switch (class_id >> 8) {
        case 0x01: return "storage";
        case 0x02: return class_id == 0x0207 ? "InfiniBand" : "network";
        case 0x03: return "display/GPU";
        case 0x0b: return "co-processor";
        case 0x12: return "accelerator";
        default: return "other";
    }
}

std::string pci_busid(hwloc_obj_t pci) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                  pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
    return buf;
}

// Where a device sits relative to the caller's CPU binding.
std::string device_locality(hwloc_topology_t topo, hwloc_obj_t dev, hwloc_const_bitmap_t caller,
                            hwloc_obj_t caller_node) {
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, dev);
    if (anchor == nullptr || anchor->cpuset == nullptr || caller == nullptr) return "unknown";
    std::string where = "near cpus " + list_string(anchor->cpuset);
    if (hwloc_bitmap_isincluded(caller, anchor->cpuset)) return "local (" + where + ")";

    // Not local: the NUMA distance from the caller's node to the device's node, if the OS
    // reports a latency matrix (Linux: /sys/devices/system/node/node*/distance).
    hwloc_obj_t dev_node = nullptr;
    if (anchor->nodeset != nullptr) {
        for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr);
             node != nullptr; node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
            if (hwloc_bitmap_isset(anchor->nodeset, static_cast<unsigned>(node->os_index))) {
                dev_node = node;
                break;
            }
        }
    }
    if (dev_node != nullptr && caller_node != nullptr) {
        unsigned nr = 1;
        hwloc_distances_s* dist = nullptr;
        if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                        HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
            nr >= 1 && dist != nullptr) {
            hwloc_uint64_t there = 0, back = 0, self = 0, self2 = 0;
            bool ok =
                hwloc_distances_obj_pair_values(dist, caller_node, dev_node, &there, &back) == 0;
            bool have_self =
                hwloc_distances_obj_pair_values(dist, caller_node, caller_node, &self, &self2) == 0;
            hwloc_distances_release(topo, dist);
            if (ok) {
                std::string text = "remote, NUMA node " + std::to_string(dev_node->os_index) +
                                   " at distance " + std::to_string(there);
                if (have_self) text += " (local " + std::to_string(self) + ")";
                return text + ", " + where;
            }
        } else if (dist != nullptr) {
            hwloc_distances_release(topo, dist);
        }
    }
    return "remote (" + where + ")";
}

void describe_devices(hwloc_topology_t topo, std::string& out) {
    Bitmap caller;
    bool have_caller = caller && caller_cpuset(topo, caller.get());
    hwloc_const_bitmap_t caller_set = have_caller ? caller.get() : nullptr;
    hwloc_obj_t caller_node = caller_numa_obj(topo);

    out += "  devices:\n";
    unsigned shown = 0;
    for (hwloc_obj_t obj = hwloc_get_next_osdev(topo, nullptr); obj != nullptr;
         obj = hwloc_get_next_osdev(topo, obj)) {
        const char* kind = osdev_kind(obj->attr->osdev.type);
        if (kind == nullptr) continue;
        out += "    " + std::string(obj->name != nullptr ? obj->name : "?") + " (" + kind;
        if (obj->parent != nullptr && obj->parent->type == HWLOC_OBJ_PCI_DEVICE) {
            out += ", PCI " + pci_busid(obj->parent);
        } else {
            out += ", virtual";
        }
        out += "): " + device_locality(topo, obj, caller_set, caller_node) + "\n";
        ++shown;
    }
    // PCI functions that matter (hwloc keeps only important ones) but have no OS device,
    // e.g. a GPU whose driver is not loaded.
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
         pci = hwloc_get_next_pcidev(topo, pci)) {
        if (pci->io_arity != 0) continue;
        unsigned class_id = pci->attr->pcidev.class_id;
        char ids[64];
        std::snprintf(ids, sizeof(ids), "class 0x%04x %s, id %04x:%04x", class_id,
                      pci_class_name(class_id), pci->attr->pcidev.vendor_id,
                      pci->attr->pcidev.device_id);
        out += "    PCI " + pci_busid(pci) + " (" + ids +
               ", no OS device): " + device_locality(topo, pci, caller_set, caller_node) + "\n";
        ++shown;
    }
    if (shown == 0) out += "    none found (no network, OpenFabrics or GPU device visible)\n";
}

}  // namespace

Status Topology::load(Topology* out) {
    if (out == nullptr) return Status::kInvalidParam;
    out->reset();
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) return Status::kNoMemory;
    // I/O objects are filtered out by default; keep the ones that matter (PCI functions
    // with a driver-visible device, their bridges, and network/IB/GPU OS devices).
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
#if HWLOC_API_VERSION >= 0x00020100
    // The "pci" plugin goes through libpciaccess, which leaks on every load (LeakSanitizer
    // fails every test that loads a topology); on Linux the built-in linuxio component
    // reads the same PCI tree from sysfs. Elsewhere keep it: it is the only PCI source.
#ifdef __linux__
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
    // The "gl" plugin probes X displays :0-:9 with blocking connects to 127.0.0.1:6000-6009;
    // where those ports are silently dropped (a firewalled network namespace) every probe
    // waits out TCP's retries and worker creation stalls for minutes. GPUs are found through
    // the linuxio OS devices without it.
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
#endif
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return Status::kIoError;
    }
    out->topo_ = topo;
    return Status::kOk;
}

void Topology::reset() {
    if (topo_ != nullptr) {
        hwloc_topology_destroy(topo_);
        topo_ = nullptr;
    }
}

bool Topology::available() const { return topo_ != nullptr; }

std::string Topology::describe() const {
    if (topo_ == nullptr) return "topology: not loaded\n";
    std::string out;
    unsigned api = hwloc_get_api_version();
    out += "topology (hwloc API " + std::to_string(api >> 16) + "." +
           std::to_string((api >> 8) & 0xff) + "." + std::to_string(api & 0xff) + "):\n";

    int packages = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    int cores = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
    out += "  packages: " + std::to_string(packages) + "\n";
    out += "  cores: " + std::to_string(cores) + " physical, " + std::to_string(pus) +
           " PUs (hardware threads), cpus " +
           list_string(hwloc_topology_get_topology_cpuset(topo_)) + "\n";

    describe_caches(topo_, out);

    int nodes = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    out += "  NUMA nodes: " + std::to_string(nodes) + ", total memory " +
           format_bytes(root->total_memory) + "\n";
    for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, nullptr);
         node != nullptr; node = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, node)) {
        uint64_t mem = node->attr->numanode.local_memory;
        out += "    node " + std::to_string(node->os_index) + ": " +
               (mem != 0 ? format_bytes(mem) : std::string("memory unknown")) + ", cpus " +
               list_string(node->cpuset) + "\n";
    }

    Bitmap caller;
    if (caller && caller_cpuset(topo_, caller.get())) {
        out += "  caller: bound to cpus " + list_string(caller.get()) + ", NUMA node ";
        int node = numa_node_of_caller();
        out += (node >= 0 ? std::to_string(node) : std::string("unknown")) + "\n";
    } else {
        out += "  caller: binding unknown\n";
    }

    describe_devices(topo_, out);
    return out;
}

int Topology::numa_node_of_caller() const {
    if (topo_ == nullptr) return -1;
    hwloc_obj_t node = caller_numa_obj(topo_);
    return node != nullptr ? static_cast<int>(node->os_index) : -1;
}

int Topology::numa_node_count() const {
    if (topo_ == nullptr) return 0;
    int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    return n > 0 ? n : 0;
}

Status Topology::bind_to_numa_node(void* addr, size_t len, int node) const {
    if (addr == nullptr || len == 0 || node < 0) return Status::kInvalidParam;
    if (topo_ == nullptr) return Status::kUnsupported;
    hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(topo_, static_cast<unsigned>(node));
    if (obj == nullptr) return Status::kInvalidParam;
    // One node: there is nowhere else for the pages to go, binding means nothing.
    if (hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE) <= 1) return Status::kUnsupported;
    const hwloc_topology_support* support = hwloc_topology_get_support(topo_);
    if (support == nullptr || support->membind == nullptr || !support->membind->set_area_membind ||
        !support->membind->bind_membind) {
        return Status::kUnsupported;
    }
    if (hwloc_set_area_membind(topo_, addr, len, obj->nodeset, HWLOC_MEMBIND_BIND,
                               HWLOC_MEMBIND_BYNODESET) == 0) {
        return Status::kOk;
    }
    switch (errno) {
        case ENOSYS:
        case EXDEV:
        case EPERM:
        case EOPNOTSUPP: return Status::kUnsupported;  // kernel without NUMA, or mbind filtered
        case EINVAL:
        case EFAULT: return Status::kInvalidParam;  // range not mapped
        default: return Status::kIoError;
    }
}

#else  // !SWY_HAVE_HWLOC: answers "unknown" so callers need no #ifdef.

Status Topology::load(Topology* out) {
    if (out == nullptr) return Status::kInvalidParam;
    out->reset();
    return Status::kOk;
}

void Topology::reset() {}

bool Topology::available() const { return false; }

std::string Topology::describe() const {
    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    std::string out = "topology: unknown (built without hwloc)\n";
    out += "  cores: unknown physical, " +
           (pus > 0 ? std::to_string(pus) : std::string("unknown")) + " PUs online\n";
    out += "  caches: unknown\n";
    out += "  NUMA nodes: unknown\n";
    out += "  caller: binding unknown\n";
    out += "  devices: unknown\n";
    return out;
}

int Topology::numa_node_of_caller() const { return -1; }

int Topology::numa_node_count() const { return 0; }

Status Topology::bind_to_numa_node(void* addr, size_t len, int node) const {
    if (addr == nullptr || len == 0 || node < 0) return Status::kInvalidParam;
    return Status::kUnsupported;
}

#endif  // SWY_HAVE_HWLOC

int Topology::online_numa_nodes() {
    // A list of ranges: "0", "0-3", "0-1,4,6-7".
    FILE* f = std::fopen("/sys/devices/system/node/online", "re");
    if (f == nullptr) return 0;
    char line[256] = {};
    const bool read = std::fgets(line, sizeof(line), f) != nullptr;
    std::fclose(f);
    if (!read) return 0;
    int count = 0;
    for (char* p = line; *p != '\0' && *p != '\n';) {
        char* end = nullptr;
        const long first = std::strtol(p, &end, 10);
        if (end == p || first < 0) return 0;
        long last = first;
        p = end;
        if (*p == '-') {
            last = std::strtol(p + 1, &end, 10);
            if (end == p + 1 || last < first) return 0;
            p = end;
        }
        count += static_cast<int>(last - first + 1);
        if (*p == ',') ++p;
    }
    return count;
}

}  // namespace swy::core
