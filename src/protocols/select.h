// Protocol selector: every candidate protocol gives a cost t(size) = fixed + size × per-byte
// over the sizes it can carry; the selector keeps the lower envelope and stores its crossing
// points as size ranges, each with the reason it won. Thresholds are derived, not constants,
// and overrides (SWY_RNDV_THRESH, SWY_ZCOPY_THRESH, SWY_PIO_MAX, SWY_RNDV_SCHEME, SWY_PROTO)
// act on the candidates, so the table always tells the truth about what will run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocols/cost_figures.h"
#include "protocols/proto_table.h"
#include "transports/transport.h"

namespace swy::proto {

/// What the lane between two workers offers (from its attributes at connect time).
struct LaneCaps {
    bool pio = false;          ///< dedicated PIO ring
    size_t pio_max = 0;        ///< largest eager_short payload
    size_t fragment_max = 0;   ///< bcopy payload per cell
    bool cma = false;          ///< zero-copy get/put reaches the peer
    bool rndv = true;          ///< rendezvous possible at all (false for self)
    /// GETs from this size are split between both processes (SWY_RNDV_SPLIT_MIN; 0: never):
    /// two cores copy at once, for one more control message.
    size_t split_min = 0;
    /// Staging through host memory for memory the CPU must not touch: added to every
    /// candidate (one plugin copy per byte on the sender, plus a fixed cost per message).
    double stage_fixed_s = 0;
    double stage_per_byte_s = 0;
    /// A network lane (verbs): costs come from the lane's own figures below instead of the
    /// shared-memory figures, and zero-copy rendezvous is RDMA (rndv_get/put_zcopy).
    bool network = false;
    double net_latency_s = 0;    ///< one-way latency of a message
    double net_overhead_s = 0;   ///< sender overhead of a message
    double net_bw_Bps = 1e9;     ///< bandwidth of eager messages
    bool rdma = false;           ///< RDMA READ/WRITE of registered memory reaches the peer
    double rdma_overhead_s = 0;  ///< posting one RDMA operation
    double rdma_bw_Bps = 1e9;
    double reg_fixed_s = 0;      ///< registering a buffer, per side
    double reg_per_byte_s = 0;
};

/// User overrides (0 / empty = automatic).
struct SelectOverrides {
    size_t rndv_thresh = 0;
    size_t zcopy_thresh = 0;
    size_t pio_max = 0;
    std::string rndv_scheme = "auto";  ///< auto | get | put | pipeline
    std::vector<std::string> allow;    ///< SWY_PROTO; empty or {"all"}: every protocol
};

/// A candidate's linear cost over its valid size range.
struct Candidate {
    ProtoId proto;
    size_t min_size;
    size_t max_size;
    double fixed_s;
    double per_byte_s;
    double at(size_t n) const { return fixed_s + per_byte_s * static_cast<double>(n); }
};

/// Mark @p caps as a network lane with RDMA and take its cost figures from the lane's
/// attributes (send, RDMA and registration costs of a verbs lane).
void set_rdma_lane_costs(const tl::LaneAttr& attr, LaneCaps* caps);

/// The candidates the lane offers, before overrides. Exposed for tests and swy-info.
std::vector<Candidate> candidates(const LaneCaps& lane, const CostFigures& costs);

/// Build the table for host memory. Never empty: a size no allowed candidate covers falls to
/// eager_bcopy, and the reason says so.
ProtoTable select_protocols(const LaneCaps& lane, const CostFigures& costs,
                            const SelectOverrides& overrides);

}  // namespace swy::proto
