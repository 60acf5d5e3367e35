// The attributes of a verbs lane, from the interface's settings and what its port can do: one
// function for the interface (every lane it connects starts from them) and for swy-info, which
// prints the tables of lanes it does not open. Compiled with and without libibverbs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/transport.h"
#include "transports/verbs/verbs_open.h"

namespace swy::tl::verbs {

/// A lane of an interface opened with @p config on a port that accepted an inline limit of
/// @p max_inline bytes and takes dma-buf MRs or not (@p dmabuf_mr), with the registration
/// cache active or not (@p rcache_active: which registration cost it reports). With
/// @p dm_cell_size > 0, the lane as it is when it holds a device-memory slot: PIO up to a cell
/// (or the inline limit, if larger), capped by the segment size.
LaneAttr lane_attr(const VerbsConfig& config, uint32_t max_inline, bool dmabuf_mr,
                   bool rcache_active, size_t dm_cell_size = 0);

}  // namespace swy::tl::verbs
