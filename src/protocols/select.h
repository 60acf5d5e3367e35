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

#include "protocols/proto_table.h"
#include "transports/transport.h"

namespace swy::proto {

/// What the lane between two workers offers, as the selector sees it: built from the lane's
/// attributes by lane_caps() (protocols/lane_caps.h), never by hand outside tests.
struct LaneCaps {
    bool pio = false;         ///< eager_short possible (a PIO ring, inline sends)
    size_t pio_max = 0;       ///< largest eager_short payload
    size_t fragment_max = 0;  ///< bcopy payload per fragment
    /// Zero-copy get and put reach the peer (tl::cap::kGetZcopy and kPutZcopy).
    bool zcopy = false;
    /// ... with remote keys (tl::cap::kRemoteKeys, e.g. RDMA): rndv_get_zcopy and
    /// rndv_put_zcopy; without (the lane's verified peer is the key, e.g. CMA): rndv_get_cma
    /// and rndv_put_cma. Only with zcopy.
    bool remote_keys = false;
    bool rndv = true;  ///< rendezvous possible at all (false for self)
    /// GETs from this size are split between both processes (SWY_RNDV_SPLIT_MIN; 0: never):
    /// two cores copy at once, for one more control message. Zero-copy lanes without remote
    /// keys only (both sides copy in the call).
    size_t split_min = 0;
    /// Staging through host memory for memory the CPU must not touch: added to every
    /// candidate (one plugin copy per byte on the sender, plus a fixed cost per message).
    double stage_fixed_s = 0;
    double stage_per_byte_s = 0;
    /// The lane's own cost figures (tl::LaneAttr::costs): the only figures the selector reads.
    tl::LaneCosts costs;
};

/// User overrides (0 / empty = automatic).
struct SelectOverrides {
    size_t rndv_thresh = 0;
    size_t zcopy_thresh = 0;
    size_t pio_max = 0;
    size_t split_min = 0;              ///< SWY_RNDV_SPLIT_MIN (lanes without keys; 0: never)
    std::string rndv_scheme = "auto";  ///< auto | get | put | pipeline
    std::vector<std::string> allow;    ///< SWY_PROTO; empty or {"all"}: every protocol
    /// The host runs more processes than cores (SWY_OVERSUBSCRIBED,
    /// protocols/oversubscription.h): with rndv_scheme "auto", a lane that reaches its peer
    /// by CMA takes plain GET from the automatic rendezvous threshold on (the receiver copies
    /// alone; the pipeline, PUT and a split GET wait for the sender's CPU). The ranges say
    /// so, with oversubscribed_why.
    bool oversubscribed = false;
    std::string oversubscribed_why;
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

/// The candidates the lane offers, before overrides, each costed from @p lane.costs alone
/// (the formulas are in select.cpp; docs/protocols.md walks through them). Exposed for tests
/// and swy-info.
std::vector<Candidate> candidates(const LaneCaps& lane);

/// The candidates the automatic choice weighs: candidates() less rndv_pipeline on a lane
/// that reaches its peer with CMA (zero-copy without remote keys), where the pipeline is the
/// fallback of a refused GET, unless SWY_ZCOPY_THRESH delays zero-copy or SWY_PROTO excludes
/// rndv_get_cma (select.cpp says why). SWY_RNDV_SCHEME=pipeline still forces it.
std::vector<Candidate> automatic_candidates(const LaneCaps& lane, const SelectOverrides& overrides);

/// Build the table for one memory type. Never empty: a size no allowed candidate covers falls
/// to eager_bcopy, and the reason says so.
ProtoTable select_protocols(const LaneCaps& lane, const SelectOverrides& overrides);

}  // namespace swy::proto
