// Host topology: cores, caches, NUMA nodes and I/O devices, through hwloc.
//
// The context loads one Topology at creation; swy-info prints describe(), and the NUMA
// helpers place buffers (bounce pools, shm segments) next to the cores that use them.
// Built without hwloc (SWY_HAVE_HWLOC undefined), every query answers "unknown" instead of
// failing, so nothing above has to care whether hwloc was available.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

#ifdef SWY_HAVE_HWLOC
// hwloc.h stays out of this header; the .cpp includes it. hwloc_topology_t is a pointer to
// this struct (hwloc/rename.h keeps the name unless hwloc was built with a symbol prefix).
struct hwloc_topology;
#endif

namespace swy::core {

/// A loaded host topology. Movable, not copyable; queries are const and, once load() has
/// returned, safe to call from several threads at once (hwloc allows concurrent reads).
class Topology {
public:
    Topology() = default;
    ~Topology();
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;
    Topology(Topology&& other) noexcept;
    Topology& operator=(Topology&& other) noexcept;

    /// Discover this host: CPUs, caches, NUMA nodes, and the important PCI/OS devices
    /// (network, OpenFabrics, GPU and co-processors).
    /// @param out  receives the topology; whatever it held before is released first.
    /// @return kOk; kInvalidParam if @p out is null; kIoError if hwloc fails to load.
    ///         Without hwloc: kOk with an "unknown" topology (see the class comment).
    static Status load(Topology* out);

    /// True once load() succeeded with hwloc (false for the no-hwloc fallback).
    bool available() const;

    /// Multi-line human-readable report: packages, physical cores and PUs, each cache level
    /// with its size, NUMA nodes with their memory, the caller's CPU binding and NUMA node,
    /// and each network / OpenFabrics / GPU device with its locality relative to the
    /// calling thread's CPU binding: "local" when the device's NUMA locality contains the
    /// caller's cpuset, else the NUMA distance when the OS reports one, else "remote".
    std::string describe() const;

    /// OS index of the NUMA node of the calling thread: the node that contains its CPU
    /// binding, or, when the binding spans several nodes, the node of the CPU it last ran
    /// on (which may change unless the thread is bound). -1 when unknown.
    int numa_node_of_caller() const;

    /// Number of NUMA nodes (1 on a machine without NUMA; 0 when unknown).
    int numa_node_count() const;

    /// NUMA nodes the kernel has online (/sys/devices/system/node/online), without loading
    /// a topology: lets callers skip hwloc (tens of milliseconds) on a single-node host.
    /// 0 when unknown (no such file, or one that does not parse).
    static int online_numa_nodes();

    /// Bind the pages covering [addr, addr+len) to NUMA node @p node (OS index), with
    /// HWLOC_MEMBIND_BIND. Pages already touched may stay where they are; bind before first
    /// touch.
    /// @return kOk; kInvalidParam for a null/empty range or a node that does not exist;
    ///         kUnsupported on a single-node machine, without hwloc, or when the OS refuses
    ///         memory binding (e.g. mbind filtered in a container); kIoError otherwise.
    Status bind_to_numa_node(void* addr, size_t len, int node) const;

private:
    void reset();

#ifdef SWY_HAVE_HWLOC
    hwloc_topology* topo_ = nullptr;
#endif
};

}  // namespace swy::core
