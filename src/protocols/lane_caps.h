// From a lane's attributes to its protocol tables: the one path both core::Endpoint (when a
// lane is wired) and swy-info --proto (for the lanes this host would get) go through, so the
// tables a tool prints are the tables endpoints build.
//
// The chain, for one lane: the transport fills tl::LaneAttr, its costs from the context's
// cost figures by its own cost function (transports/<name>/<name>_costs.h); lane_caps()
// turns the attributes and the user's overrides into LaneCaps; select_protocols()
// (select.h) costs every candidate from LaneCaps::costs and keeps the cheapest per size.
#pragma once

#include <cstddef>

#include "protocols/proto_table.h"
#include "protocols/select.h"
#include "transports/transport.h"

namespace swy::common {
class Config;
}

namespace swy::proto {

/// Payload limits of eager messages on one lane, after the protocol headers (wire.h).
struct EagerLimits {
    size_t single_packet_max = 0;  ///< payload of a one-packet message (room for the sync header)
    size_t fragment_max = 0;  ///< payload of a bcopy fragment (after the first-fragment header)
    size_t pio_max = 0;       ///< largest eager_short payload; 0 when the lane has no PIO
};

/// The limits on @p lane: single_packet_max and fragment_max from its max_message;
/// pio_max from its PIO packet (pio_max_message when smaller than max_message: verbs inline),
/// capped by @p pio_max_setting (SWY_PIO_MAX; 0: no cap). Precondition: max_message exceeds
/// the largest eager header (every transport's does).
EagerLimits eager_limits(const tl::LaneAttr& lane, size_t pio_max_setting);

/// The selection overrides of a configuration: SWY_RNDV_THRESH, SWY_ZCOPY_THRESH, SWY_PIO_MAX,
/// SWY_RNDV_SPLIT_MIN, SWY_RNDV_SCHEME, SWY_PROTO, and whether the host is oversubscribed
/// (SWY_OVERSUBSCRIBED, protocols/oversubscription.h).
SelectOverrides overrides_from(const common::Config& config);

/// How memory the CPU must not touch (device memory) travels on a lane.
struct DeviceMemoryPath {
    double stage_fixed_s = 0;     ///< staging copy into host memory: fixed part
    double stage_per_byte_s = 0;  ///< ... per byte (1 / the memory type's copy bandwidth)
    /// The lane's zero-copy reaches this memory directly (registered as a dma-buf, on
    /// a lane with remote keys: rndv::zcopy_reaches_device_memory()); else
    /// every rendezvous is staged through the pipeline.
    bool zcopy_reaches = false;
};

/// What the selector needs of @p lane: its eager limits (eager_limits(), with @p o.pio_max),
/// its zero-copy operations and whether they use remote keys (from LaneAttr::caps), whether
/// rendezvous is possible, the GET split threshold (@p o.split_min, zero-copy without keys
/// only), and its cost figures, copied unchanged. With
/// @p device: the lane as seen from device memory: no PIO, zero-copy only where
/// device->zcopy_reaches, and the staging costs added to every candidate.
LaneCaps lane_caps(const tl::LaneAttr& lane, const SelectOverrides& o,
                   const DeviceMemoryPath* device = nullptr);

/// select_protocols(lane_caps(@p lane, @p o, @p device), @p o): the table an endpoint on
/// @p lane uses for host memory (@p device null) or for one device memory type.
ProtoTable table_for(const tl::LaneAttr& lane, const SelectOverrides& o,
                     const DeviceMemoryPath* device = nullptr);

}  // namespace swy::proto
