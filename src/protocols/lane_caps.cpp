#include "protocols/lane_caps.h"

#include <algorithm>

#include "common/config.h"
#include "protocols/oversubscription.h"
#include "protocols/wire.h"

namespace swy::proto {

EagerLimits eager_limits(const tl::LaneAttr& a, size_t pio_max_setting) {
    EagerLimits l;
    l.single_packet_max = a.max_message - sizeof(EagerSyncHeader);
    l.fragment_max = a.max_message - sizeof(EagerFirstHeader);
    if (a.pio) {
        // A lane whose PIO sends are smaller than its messages (verbs inline) says so; such a
        // packet is never a sync message, so only the plain header is taken off.
        const size_t pio_packet =
            a.pio_max_message != 0 && a.pio_max_message < a.max_message
                ? a.pio_max_message - std::min(a.pio_max_message, sizeof(EagerOnlyHeader))
                : l.single_packet_max;
        l.pio_max = pio_max_setting == 0 ? pio_packet : std::min(pio_max_setting, pio_packet);
    }
    return l;
}

SelectOverrides overrides_from(const common::Config& cfg) {
    SelectOverrides o;
    o.rndv_thresh = cfg.get_size("RNDV_THRESH");
    o.zcopy_thresh = cfg.get_size("ZCOPY_THRESH");
    o.pio_max = cfg.get_size("PIO_MAX");
    o.split_min = cfg.get_size("RNDV_SPLIT_MIN");
    o.rndv_scheme = cfg.get_string("RNDV_SCHEME");
    o.allow = cfg.get_list("PROTO");
    const Oversubscription busy = detect_oversubscription(cfg);
    o.oversubscribed = busy.busy;
    o.oversubscribed_why = busy.why;
    return o;
}

LaneCaps lane_caps(const tl::LaneAttr& a, const SelectOverrides& o,
                   const DeviceMemoryPath* device) {
    const EagerLimits limits = eager_limits(a, o.pio_max);
    LaneCaps caps;
    caps.pio = a.pio;
    caps.pio_max = limits.pio_max;
    caps.fragment_max = limits.fragment_max;
    constexpr uint32_t kZcopy = tl::cap::kGetZcopy | tl::cap::kPutZcopy;
    caps.zcopy = (a.caps & kZcopy) == kZcopy;
    caps.remote_keys = caps.zcopy && (a.caps & tl::cap::kRemoteKeys) != 0;
    caps.rndv = a.rndv;
    // Splitting a GET needs both sides to copy in the call: a lane without remote keys
    // (the verified peer is the key) copies synchronously; one with keys completes later.
    caps.split_min = caps.zcopy && !caps.remote_keys ? o.split_min : 0;
    caps.costs = a.costs;
    if (device != nullptr) {
        // The CPU does not store from device memory (no PIO), a lane without keys copies
        // with the CPU (CMA: no), and a lane with keys only where the memory can be
        // registered (a dma-buf MR: DeviceMemoryPath::zcopy_reaches).
        caps.pio = false;
        caps.pio_max = 0;
        caps.split_min = 0;
        caps.zcopy = caps.zcopy && caps.remote_keys && device->zcopy_reaches;
        caps.remote_keys = caps.zcopy;
        caps.stage_fixed_s = device->stage_fixed_s;
        caps.stage_per_byte_s = device->stage_per_byte_s;
    }
    return caps;
}

ProtoTable table_for(const tl::LaneAttr& lane, const SelectOverrides& o,
                     const DeviceMemoryPath* device) {
    return select_protocols(lane_caps(lane, o, device), o);
}

}  // namespace swy::proto
