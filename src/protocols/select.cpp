#include "protocols/select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "protocols/protocol.h"

namespace swy::proto {
namespace {

// Share of eager messages assumed to arrive before their receive is posted: those pay one
// more copy out of the unexpected buffer. Rendezvous never buffers data, so this is what
// makes it win for large messages even without zero-copy.
constexpr double kUnexpectedShare = 0.25;

bool allowed(const SelectOverrides& o, ProtoId id) {
    if (o.allow.empty()) return true;
    for (const std::string& a : o.allow) {
        if (a == "all" || a == proto_name(id)) return true;
    }
    return false;
}

bool is_rndv(ProtoId id) { return is_rendezvous(id); }

std::string format_time(double s) {
    char buf[32];
    if (s < 1e-3) {
        std::snprintf(buf, sizeof(buf), "%.3f us", s * 1e6);
    } else {
        std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
    }
    return buf;
}

std::string format_size(size_t n) {
    char buf[32];
    if (n >= (1u << 20) && n % (1u << 20) == 0) {
        std::snprintf(buf, sizeof(buf), "%zu MiB", n >> 20);
    } else if (n >= 1024 && n % 1024 == 0) {
        std::snprintf(buf, sizeof(buf), "%zu KiB", n >> 10);
    } else {
        std::snprintf(buf, sizeof(buf), "%zu B", n);
    }
    return buf;
}

}  // namespace

// A network lane (verbs): eager messages cost the lane's latency and bandwidth plus a copy
// on each side (bounce buffer, receive buffer); inline sends skip the sender's copy; RDMA
// rendezvous moves the bytes once, after a handshake and a registration on each side.
std::vector<Candidate> network_candidates(const LaneCaps& lane, const CostFigures& c) {
    std::vector<Candidate> out;
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    const double L = lane.net_latency_s;
    const double o = lane.net_overhead_s;
    const double wire = 1.0 / lane.net_bw_Bps;
    const double copy = 1.0 / c.memcpy_bw_Bps;
    const double unexpected = kUnexpectedShare / c.memcpy_bw_Bps;
    const double frag = static_cast<double>(std::max<size_t>(lane.fragment_max, 64));
    if (lane.pio && lane.pio_max > 0) {
        out.push_back({ProtoId::kEagerShort, 0, lane.pio_max, L + o, wire + copy + unexpected});
    }
    out.push_back({ProtoId::kEagerBcopy, 0, kMax, L + o + c.bcopy_overhead_s,
                   wire + 2 * copy + o / frag + unexpected});
    if (lane.rndv) {
        const double handshake = 2 * L + 2 * o;  // RTS, and ATS or RTR
        if (lane.rdma) {
            const double wire_rdma = 1.0 / lane.rdma_bw_Bps;
            // GET (docs/verbs.md, "Rendezvous"): the sender registers before its RTS can
            // carry the key, the receiver registers when the RTS matched, READ request and
            // response, ATS: both registrations are on the critical path.
            out.push_back({ProtoId::kRndvGetZcopy, 0, kMax,
                           handshake + 2 * L + lane.rdma_overhead_s + 2 * lane.reg_fixed_s,
                           wire_rdma + 2 * lane.reg_per_byte_s});
            // PUT: the RTS needs no key, so the sender registers while RTS and RTR fly
            // (hidden: it takes no longer than the receiver's registration of the same size
            // plus a round trip); RTR, WRITE and its acknowledgement, and a FIN posted right
            // behind the WRITE on the same QP (placed in order), which costs one message
            // overhead and no latency. One registration on the critical path instead of two,
            // one message overhead more: PUT wins whenever a registration (or a validated
            // cache hit) costs more than sending a message.
            out.push_back({ProtoId::kRndvPutZcopy, 0, kMax,
                           handshake + 2 * L + o + lane.rdma_overhead_s + lane.reg_fixed_s,
                           wire_rdma + lane.reg_per_byte_s});
        }
        out.push_back({ProtoId::kRndvPipeline, 0, kMax, handshake + L + o,
                       wire + 2 * copy + o / frag});
    }
    for (Candidate& cand : out) {
        cand.fixed_s += lane.stage_fixed_s;
        cand.per_byte_s += lane.stage_per_byte_s;
    }
    return out;
}

void set_rdma_lane_costs(const tl::LaneAttr& a, LaneCaps* caps) {
    caps->network = true;
    caps->net_latency_s = a.send_cost.latency_s;
    caps->net_overhead_s = a.send_cost.overhead_s;
    caps->net_bw_Bps = a.send_cost.bandwidth_Bps;
    caps->rdma = a.rdma;
    caps->rdma_overhead_s = a.rdma_cost.overhead_s;
    caps->rdma_bw_Bps = a.rdma_cost.bandwidth_Bps;
    caps->reg_fixed_s = a.reg_cost.latency_s + a.reg_cost.overhead_s;
    caps->reg_per_byte_s = 1.0 / a.reg_cost.bandwidth_Bps;
}

std::vector<Candidate> candidates(const LaneCaps& lane, const CostFigures& c) {
    if (lane.network) return network_candidates(lane, c);
    std::vector<Candidate> out;
    const double L = c.fifo_latency_s;
    const double copy = 1.0 / c.shm_copy_bw_Bps;
    const double unexpected = kUnexpectedShare / c.memcpy_bw_Bps;
    const double frag = static_cast<double>(std::max<size_t>(lane.fragment_max, 64));
    if (lane.pio && lane.pio_max > 0) {
        out.push_back({ProtoId::kEagerShort, 0, lane.pio_max,
                       L + c.pio_overhead_s + c.cell_overhead_s, copy + unexpected});
    }
    out.push_back({ProtoId::kEagerBcopy, 0, std::numeric_limits<size_t>::max(),
                   L + c.bcopy_overhead_s + c.cell_overhead_s,
                   copy + (c.bcopy_overhead_s + c.cell_overhead_s) / frag + unexpected});
    if (!lane.rndv) {
        for (Candidate& cand : out) {
            cand.fixed_s += lane.stage_fixed_s;
            cand.per_byte_s += lane.stage_per_byte_s;
        }
        return out;
    }
    const double handshake = 2 * L + 2 * c.cell_overhead_s + c.bcopy_overhead_s;
    if (lane.cma) {
        const double chunk = 512.0 * 1024;
        const double cma = 1.0 / c.cma_bw_Bps + c.cma_call_s / chunk;
        out.push_back({ProtoId::kRndvGetCma, 0, std::numeric_limits<size_t>::max(),
                       handshake + c.cma_call_s, cma});
        if (lane.split_min != 0 && lane.split_min != std::numeric_limits<size_t>::max()) {
            // Split: the receiver pulls one half while the sender pushes the other, then a
            // FIN: half the per-byte time, one more message and one more CMA call.
            out.push_back({ProtoId::kRndvGetCma, lane.split_min,
                           std::numeric_limits<size_t>::max(),
                           handshake + 2 * c.cma_call_s + L + c.cell_overhead_s, cma / 2});
        }
        out.push_back({ProtoId::kRndvPutCma, 0, std::numeric_limits<size_t>::max(),
                       handshake + L + c.cell_overhead_s + c.cma_call_s, cma});
    }
    out.push_back({ProtoId::kRndvPipeline, 0, std::numeric_limits<size_t>::max(),
                   handshake + L + c.cell_overhead_s,
                   copy + (c.bcopy_overhead_s + c.cell_overhead_s) / frag});
    for (Candidate& cand : out) {
        cand.fixed_s += lane.stage_fixed_s;
        cand.per_byte_s += lane.stage_per_byte_s;
    }
    return out;
}

ProtoTable select_protocols(const LaneCaps& lane, const CostFigures& costs,
                            const SelectOverrides& o) {
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    std::vector<Candidate> all = candidates(lane, costs);
    std::vector<Candidate> cands;
    for (Candidate c : all) {
        if (!allowed(o, c.proto)) continue;
        if (is_rndv(c.proto) && o.rndv_scheme != "auto") {
            // "get" and "put" name the flavour: CMA on shm lanes, RDMA on verbs lanes.
            const bool get = c.proto == ProtoId::kRndvGetCma || c.proto == ProtoId::kRndvGetZcopy;
            const bool put = c.proto == ProtoId::kRndvPutCma || c.proto == ProtoId::kRndvPutZcopy;
            const bool keep = o.rndv_scheme == "get"   ? get
                              : o.rndv_scheme == "put" ? put
                                                       : c.proto == ProtoId::kRndvPipeline;
            if (!keep) continue;
        }
        if (c.proto == ProtoId::kEagerShort && o.pio_max != 0) {
            c.max_size = std::min(c.max_size, o.pio_max);
        }
        if (o.rndv_thresh == kMax && is_rndv(c.proto)) continue;  // "inf": no rendezvous
        if (o.rndv_thresh != 0 && o.rndv_thresh != kMax) {
            if (is_rndv(c.proto)) {
                c.min_size = std::max(c.min_size, o.rndv_thresh);
            } else if (o.rndv_thresh > 0) {
                c.max_size = std::min(c.max_size, o.rndv_thresh - 1);
            }
        }
        if (o.zcopy_thresh != 0 &&
            (c.proto == ProtoId::kRndvGetCma || c.proto == ProtoId::kRndvPutCma ||
             c.proto == ProtoId::kRndvGetZcopy || c.proto == ProtoId::kRndvPutZcopy)) {
            c.min_size = std::max(c.min_size, o.zcopy_thresh);
        }
        if (c.min_size <= c.max_size) cands.push_back(c);
    }

    // Breakpoints: every range edge and every pairwise crossing of two cost lines.
    std::vector<size_t> points{0};
    for (const Candidate& c : cands) {
        points.push_back(c.min_size);
        if (c.max_size != kMax) points.push_back(c.max_size + 1);
    }
    for (size_t i = 0; i < cands.size(); ++i) {
        for (size_t j = i + 1; j < cands.size(); ++j) {
            const double dp = cands[i].per_byte_s - cands[j].per_byte_s;
            if (dp == 0) continue;
            const double n = (cands[j].fixed_s - cands[i].fixed_s) / dp;
            if (!(n > 0 && n < 1e18)) continue;
            const size_t at = static_cast<size_t>(std::ceil(n));
            // A crossing only matters where both candidates can carry the message.
            if (at < std::max(cands[i].min_size, cands[j].min_size) ||
                at > std::min(cands[i].max_size, cands[j].max_size)) {
                continue;
            }
            points.push_back(at);
        }
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());

    ProtoTable table;
    for (size_t i = 0; i < points.size(); ++i) {
        const size_t lo = points[i];
        const size_t hi = i + 1 < points.size() ? points[i + 1] - 1 : kMax;
        const size_t probe = hi != kMax ? lo + (hi - lo) / 2
                             : lo > kMax / 2 ? lo
                                             : lo + std::max<size_t>(lo, 1024);
        const Candidate* best = nullptr;
        const Candidate* second = nullptr;
        for (const Candidate& c : cands) {
            if (c.min_size > lo || c.max_size < hi) continue;
            if (best == nullptr || c.at(probe) < best->at(probe)) {
                second = best;
                best = &c;
            } else if (second == nullptr || c.at(probe) < second->at(probe)) {
                second = &c;
            }
        }
        if (best == nullptr) {
            table.add(hi, ProtoId::kEagerBcopy,
                      "no allowed protocol covers these sizes (SWY_PROTO, thresholds): "
                      "eager_bcopy, which carries any size");
            continue;
        }
        std::string reason = "t(" + format_size(probe) + ") = " + format_time(best->at(probe));
        if (second != nullptr) {
            const double gain = second->at(probe) - best->at(probe);
            reason += ", beats " + std::string(proto_name(second->proto)) + " by " +
                      format_time(gain);
        } else {
            reason += ", only candidate";
        }
        if (o.rndv_thresh != 0 && (is_rndv(best->proto) ? lo == o.rndv_thresh : hi + 1 == o.rndv_thresh)) {
            reason += " [SWY_RNDV_THRESH]";
        }
        table.add(hi, best->proto, reason);
    }
    return table;
}

}  // namespace swy::proto
