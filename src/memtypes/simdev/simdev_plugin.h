// Simulated device memory: memory the CPU must not touch, so that every device code path
// (detection, staging copies, no CPU protocol on device buffers) runs in tests without a GPU.
//
// Each allocation is a memfd mapped twice: the address the application gets is PROT_NONE (a
// CPU load or store there faults, exactly as a stray CPU access to GPU memory would be a
// bug), and a read-write alias that only this plugin's copy routines use (device pointer →
// alias by offset). The plugin knows its allocations exactly, so its detect() is definitive.
//
// Copies are synchronous memcpy through the alias, optionally throttled (busy-wait) to the
// configured bandwidth and latency. Asynchronous copies go into a queue that behaves like one
// DMA engine: each copy has a due time (serial, bandwidth-limited when throttled) and test()
// performs the copies that are due, in order. Unthrottled copies are due at once but still
// complete in test(), so callers exercise the in-progress path.
//
// export_dmabuf() returns a dup of the allocation's memfd, a stand-in for a dma-buf export
// (one fd per live allocation is kept open for this).
#pragma once

#include <string>

#include "memtypes/memtype.h"

namespace swy::mem {

struct SimdevOptions {
    double bandwidth_Bps = 5e9;  ///< SWY_SIMDEV_BW
    double latency_s = 2e-6;     ///< SWY_SIMDEV_LATENCY
    bool throttle = false;       ///< SWY_SIMDEV_THROTTLE: busy-wait copies to bw/latency
};

/// Fill @p out with a new simdev plugin. kNoMemory; kInvalidParam for a bandwidth <= 0.
Status create_simdev_plugin(const SimdevOptions& options, MemTypePlugin* out, std::string* why);

}  // namespace swy::mem
