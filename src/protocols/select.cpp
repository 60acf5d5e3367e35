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

// One model for every lane; only the figures differ (tl::LaneCosts, filled by the lane's
// transport). Write L for the lane's latency and m for its per-message CPU time:
//  * eager_short: one message, L + m + the PIO send's own fixed cost, its bytes once;
//  * eager_bcopy: L + m + the fragment's fixed cost, and per byte the copies plus one
//    message's fixed costs per fragment;
//  * both eager flavours pay a share of a copy out of the unexpected buffer per byte;
//  * a rendezvous starts with a handshake: the RTS (an eager message) and its reply (ATS or
//    RTR, a control message): 2L + 2m + the fragment's fixed cost;
//  * GET: the handshake, the zero-copy GET, a registration on each side (both on the
//    critical path: the sender's before its RTS can carry the key, the receiver's when the
//    RTS matched);
//  * PUT: the handshake, the zero-copy PUT, the FIN's CPU time (its flight is part of the
//    PUT's own fixed cost), one registration (the sender's is hidden behind RTS and RTR): it
//    wins over GET whenever a registration costs more than a message;
//  * split GET (CMA): both processes copy half, for one more zero-copy call and a FIN;
//  * pipeline: the handshake, then fragments as eager_bcopy's, and no unexpected copy
//    (rendezvous never buffers data: what makes it win for large messages even without
//    zero-copy).
std::vector<Candidate> candidates(const LaneCaps& lane) {
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    const tl::LaneCosts& c = lane.costs;
    std::vector<Candidate> out;
    const double L = c.latency_s;
    const double m = c.message_s;
    const double unexpected = kUnexpectedShare * c.unexpected_copy_per_byte_s;
    const double frag = static_cast<double>(std::max<size_t>(lane.fragment_max, 64));
    const double fragment_fixed = m + c.am_bcopy.fixed_s;
    const double fragment_per_byte = c.am_bcopy.per_byte_s + fragment_fixed / frag;
    if (lane.pio && lane.pio_max > 0) {
        out.push_back({ProtoId::kEagerShort, 0, lane.pio_max, L + m + c.am_short.fixed_s,
                       c.am_short.per_byte_s + unexpected});
    }
    out.push_back(
        {ProtoId::kEagerBcopy, 0, kMax, L + fragment_fixed, fragment_per_byte + unexpected});
    if (lane.rndv) {
        const double handshake = 2 * L + 2 * m + c.am_bcopy.fixed_s;
        const double control = L + m;  // one more control message (FIN, ...)
        if (lane.zcopy) {
            const double reg_fixed = c.reg.fixed_s;
            const double reg_per_byte = c.reg.per_byte_s;
            out.push_back({lane.remote_keys ? ProtoId::kRndvGetZcopy : ProtoId::kRndvGetCma, 0,
                           kMax, handshake + c.get_zcopy.fixed_s + 2 * reg_fixed,
                           c.get_zcopy.per_byte_s + 2 * reg_per_byte});
            if (!lane.remote_keys && lane.split_min != 0 && lane.split_min != kMax) {
                out.push_back({ProtoId::kRndvGetCma, lane.split_min, kMax,
                               handshake + 2 * c.get_zcopy.fixed_s + control,
                               c.get_zcopy.per_byte_s / 2});
            }
            out.push_back({lane.remote_keys ? ProtoId::kRndvPutZcopy : ProtoId::kRndvPutCma, 0,
                           kMax, handshake + c.put_zcopy.fixed_s + m + reg_fixed,
                           c.put_zcopy.per_byte_s + reg_per_byte});
        }
        out.push_back({ProtoId::kRndvPipeline, 0, kMax, handshake + control, fragment_per_byte});
    }
    for (Candidate& cand : out) {
        cand.fixed_s += lane.stage_fixed_s;
        cand.per_byte_s += lane.stage_per_byte_s;
    }
    return out;
}

// On a lane that reaches its peer with CMA (zero copy, no keys) the pipeline is the fallback of
// a refused GET, not a choice: its cost line is eager_bcopy's fragments, which the model
// overlaps across both cores, but each message waits for an RTR round trip and then for the
// sender's progress to push every fragment; it measured 3-9 GB/s in the middle sizes where
// GET, which the receiver runs alone (split between both cores from SWY_RNDV_SPLIT_MIN),
// reached 25-40 GB/s (issue 17). It stays where GET may not run below a size
// (SWY_ZCOPY_THRESH) or at all (SWY_PROTO), and can be forced (SWY_RNDV_SCHEME=pipeline).
std::vector<Candidate> automatic_candidates(const LaneCaps& lane, const SelectOverrides& o) {
    std::vector<Candidate> all = candidates(lane);
    if (!lane.zcopy || lane.remote_keys || o.zcopy_thresh != 0 ||
        !allowed(o, ProtoId::kRndvGetCma)) {
        return all;
    }
    std::erase_if(all, [](const Candidate& c) { return c.proto == ProtoId::kRndvPipeline; });
    return all;
}

namespace {

/// The lower envelope of @p all under @p o's thresholds and allow-list (the scheme is the
/// caller's business). @p forced: the scheme SWY_RNDV_SCHEME forced (its ranges say so) and
/// o.rndv_thresh the threshold it starts at, derived unless @p thresh_set.
ProtoTable envelope(const std::vector<Candidate>& all, const SelectOverrides& o, bool forced,
                    bool thresh_set) {
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    std::vector<Candidate> cands;
    for (Candidate c : all) {
        if (!allowed(o, c.proto)) continue;
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
        const size_t probe = hi != kMax      ? lo + (hi - lo) / 2
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
            reason +=
                ", beats " + std::string(proto_name(second->proto)) + " by " + format_time(gain);
        } else {
            reason += ", only candidate";
        }
        if (thresh_set && o.rndv_thresh != 0 &&
            (is_rndv(best->proto) ? lo == o.rndv_thresh : hi + 1 == o.rndv_thresh)) {
            reason += " [SWY_RNDV_THRESH]";
        }
        if (forced && is_rndv(best->proto)) {
            reason += o.rndv_scheme == "auto" ? " [oversubscribed: " + o.oversubscribed_why +
                                                    "; GET after one fragment: needs no peer CPU]"
                                              : " [SWY_RNDV_SCHEME=" + o.rndv_scheme + "]";
        }
        table.add(hi, best->proto, reason);
    }
    return table;
}

/// The one candidate SWY_RNDV_SCHEME=@p scheme names on this lane, null if the lane has none.
/// "get" and "put" name the operation, with or without remote keys (CMA on shm lanes, RDMA
/// on verbs lanes). "get" is the plain GET: a split GET needs the sender to copy too.
const Candidate* forced_candidate(const std::vector<Candidate>& all, const std::string& scheme) {
    for (const Candidate& c : all) {
        const bool match =
            scheme == "get"
                ? (c.proto == ProtoId::kRndvGetCma || c.proto == ProtoId::kRndvGetZcopy) &&
                      c.min_size == 0
            : scheme == "put" ? c.proto == ProtoId::kRndvPutCma || c.proto == ProtoId::kRndvPutZcopy
                              : scheme == "pipeline" && c.proto == ProtoId::kRndvPipeline;
        if (match) return &c;
    }
    return nullptr;
}

}  // namespace

// SWY_RNDV_SCHEME chooses which rendezvous runs, never whether: the threshold is the one the
// automatic choice (or SWY_RNDV_THRESH) gives, and from it on every size takes the forced
// scheme. (Keeping the scheme's own cost line instead would leave a scheme whose line never
// beats eager_bcopy, plain GET and PUT over CMA on shm, with no rendezvous at all.)
//
// Oversubscribed (and no scheme forced), a lane that reaches its peer with CMA (same host, no
// keys) runs plain GET the same way, from the automatic threshold or from the first size that
// needs a second fragment, whichever is lower, so no message waits for a descheduled sender
// or for a descheduled receiver to free ring cells. RDMA lanes keep their choice: their peer
// may be on another, idle host.
ProtoTable select_protocols(const LaneCaps& lane, const SelectOverrides& o) {
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    const std::vector<Candidate> all = candidates(lane);
    const std::vector<Candidate> weighed = automatic_candidates(lane, o);
    const bool thresh_set = o.rndv_thresh != 0;
    const bool prefer_get =
        o.rndv_scheme == "auto" && o.oversubscribed && lane.zcopy && !lane.remote_keys;
    if ((o.rndv_scheme == "auto" && !prefer_get) || o.rndv_thresh == kMax) {
        return envelope(weighed, o, false, true);
    }
    const Candidate* forced = forced_candidate(all, prefer_get ? "get" : o.rndv_scheme);
    if (forced == nullptr || !allowed(o, forced->proto)) {
        // The lane has no such scheme (tcp has no zero-copy, self no rendezvous), or
        // SWY_PROTO excludes it: the automatic choice among what is left.
        return envelope(weighed, o, false, true);
    }
    SelectOverrides at = o;
    if (!thresh_set) {
        const ProtoTable automatic = envelope(weighed, o, false, true);
        size_t lo = 0;
        at.rndv_thresh = kMax;
        for (const ProtoRange& r : automatic.ranges()) {
            if (is_rndv(r.proto)) {
                at.rndv_thresh = std::max<size_t>(lo, 1);
                break;
            }
            if (r.max_size == kMax) break;
            lo = r.max_size + 1;
        }
        if (at.rndv_thresh == kMax) return automatic;  // no rendezvous to force
        // Oversubscribed, a message of more than one fragment waits for the descheduled
        // receiver to free cells (once per ring-full, with every sender of the host sharing
        // that ring); its GET needs the receiver once and the sender not at all. 64 KiB
        // all-to-all at 16 ranks on 2 cores: 77 ms as eager, 10 ms as GET.
        if (prefer_get) {
            at.rndv_thresh =
                std::min(at.rndv_thresh, std::max(lane.fragment_max, lane.pio_max) + 1);
        }
    }
    // A zero-copy scheme starts no earlier than SWY_ZCOPY_THRESH: eager carries up to it.
    const bool zcopy = forced->proto != ProtoId::kRndvPipeline;
    if (zcopy && o.zcopy_thresh > at.rndv_thresh) at.rndv_thresh = o.zcopy_thresh;
    std::vector<Candidate> cands;
    for (const Candidate& c : all) {
        if (!is_rndv(c.proto) || &c == forced) cands.push_back(c);
    }
    return envelope(cands, at, true, thresh_set);
}

}  // namespace swy::proto
