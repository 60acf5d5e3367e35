#include "transports/verbs/lane_attr.h"

#include <algorithm>

namespace swy::tl::verbs {

LaneAttr lane_attr(const VerbsConfig& config, uint32_t max_inline, bool dmabuf_mr,
                   bool rcache_active, size_t dm_cell_size) {
    LaneAttr a;
    a.transport = "verbs";
    // Inline sends are this lane's PIO: the CPU writes header and payload into the WQE.
    a.pio = max_inline > 0;
    a.pio_max_message = max_inline;
    a.pio_inline_max = max_inline;
    a.credits = config.rx_credits;
    a.credits_shared = false;
    a.max_message = config.seg_size;
    if (dm_cell_size > 0) {
        a.pio = true;
        a.pio_max_message = std::min(std::max<size_t>(dm_cell_size, max_inline), a.max_message);
    }
    // RDMA READ/WRITE of registered memory, named by rkeys. Device memory reaches it
    // through ibv_reg_dmabuf_mr where the device takes it (rxe does not: the staged pipeline
    // then, and the selection table says so).
    a.caps = cap::kAmBcopy | cap::kGetZcopy | cap::kPutZcopy | cap::kRemoteKeys |
             (a.pio ? cap::kAmShort : 0) | (dmabuf_mr ? cap::kDeviceMemory : 0);
    // Buffers that rendezvous reuses cost a validated hit while the cache is on.
    a.costs = config.costs.expected(rcache_active);
    a.rndv = true;
    return a;
}

}  // namespace swy::tl::verbs
