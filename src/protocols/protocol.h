// The protocol interface: what every protocol (eager/, rndv/) is, as data and as code.
//
// Two parts, as UCX's ucp_proto_t:
//  * ProtoInfo: a constexpr descriptor per ProtoId (name, family, the scheme its RTS carries,
//    the zero-copy operations it needs from a lane). Everything that used to read meaning
//    into the order of the ProtoId enum asks this table instead.
//  * Protocol: the code of one protocol, a table of plain function pointers (start, progress,
//    abort, cost). Callers on the hot path switch on the ProtoId and call the eager functions
//    directly; the table is for everything else (rendezvous, tools, tests), so no protocol
//    adds a virtual call to the eager fast path.
//
// A protocol's state lives in the Request it runs: Request::stage holds that protocol's own
// stage enum (each protocol declares one; 0 is always "not started"), so a request says at
// every moment which step it is in, instead of a dozen booleans.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "protocols/proto_table.h"
#include "protocols/wire.h"

namespace swy::core {
struct Request;
}

namespace swy::proto {

struct LaneCaps;

/// Which family a protocol belongs to: how a send's completion and its receive work.
enum class ProtoFamily : uint8_t {
    kEager,       ///< the data travels with the message; a send completes when handed over
                  ///< (or on the sync ack)
    kRendezvous,  ///< an RTS travels first; the data moves once a receive matched; the send
                  ///< completes on ATS or FIN
};

/// The zero-copy operation a protocol needs from a lane (tl::ZcopyLane), if any.
enum class ZcopyNeed : uint8_t {
    kNone,  ///< only active messages
    kGet,   ///< the receiver reads the sender's buffer (get_zcopy with the sender's key)
    kPut,   ///< the sender writes the receiver's buffer (put_zcopy with the receiver's key)
};

/// What a protocol is, known at compile time.
struct ProtoInfo {
    ProtoId id;
    const char* name;  ///< stable name: SWY_PROTO values, tables, swy-perf ("eager_short")
    ProtoFamily family;
    RndvScheme scheme;  ///< rendezvous: the scheme its RTS carries (eager: unused, kGet)
    ZcopyNeed zcopy;    ///< zero-copy operation it needs from the lane
    /// True when the zero-copy lane must hand out remote keys (RDMA: the RTS or RTR carries
    /// an rkey); false when the lane's verified peer is the key (CMA).
    bool remote_keys;
};

/// One descriptor per ProtoId, indexed by the enum value (checked below).
inline constexpr ProtoInfo kProtoInfo[kProtoCount] = {
    {ProtoId::kEagerShort, "eager_short", ProtoFamily::kEager, RndvScheme::kGet, ZcopyNeed::kNone,
     false},
    {ProtoId::kEagerBcopy, "eager_bcopy", ProtoFamily::kEager, RndvScheme::kGet, ZcopyNeed::kNone,
     false},
    {ProtoId::kRndvGetCma, "rndv_get_cma", ProtoFamily::kRendezvous, RndvScheme::kGet,
     ZcopyNeed::kGet, false},
    {ProtoId::kRndvPutCma, "rndv_put_cma", ProtoFamily::kRendezvous, RndvScheme::kPut,
     ZcopyNeed::kPut, false},
    {ProtoId::kRndvPipeline, "rndv_pipeline", ProtoFamily::kRendezvous, RndvScheme::kPipeline,
     ZcopyNeed::kNone, false},
    {ProtoId::kRndvGetZcopy, "rndv_get_zcopy", ProtoFamily::kRendezvous, RndvScheme::kGetKeyed,
     ZcopyNeed::kGet, true},
    {ProtoId::kRndvPutZcopy, "rndv_put_zcopy", ProtoFamily::kRendezvous, RndvScheme::kPutKeyed,
     ZcopyNeed::kPut, true},
};

namespace detail {
constexpr bool info_table_is_indexed() {
    for (size_t i = 0; i < kProtoCount; ++i) {
        if (static_cast<size_t>(kProtoInfo[i].id) != i) return false;
    }
    return true;
}
}  // namespace detail
static_assert(detail::info_table_is_indexed(), "kProtoInfo must be indexed by ProtoId");

/// The descriptor of @p id.
constexpr const ProtoInfo& proto_info(ProtoId id) { return kProtoInfo[static_cast<size_t>(id)]; }

/// True for the rendezvous protocols (an RTS goes first; ATS/RTR/FIN may name the send).
constexpr bool is_rendezvous(ProtoId id) {
    return proto_info(id).family == ProtoFamily::kRendezvous;
}

/// Stage of a request inside its protocol: each protocol casts its own `enum class : uint8_t`
/// to this (0 = not started), stored in Request::stage.
using Stage = uint8_t;

/// The code of one protocol. Any member may be null where the protocol has nothing to do
/// (eager protocols have no progress of their own: the endpoint's pending queue drives them).
struct Protocol {
    ProtoId id;
    /// Sender: put @p r on the wire (eager: the data; rendezvous: the RTS).
    /// kOk: handed over; kNoResource: the lane is full, retried from progress; other: failed.
    Status (*start)(core::Request* r);
    /// Move @p r on by at most one progress budget. @return true when this side's work is
    /// over (the request completed or waits only for the peer).
    bool (*progress)(core::Request* r);
    /// End @p r with @p why (peer failure, cancel): drops what the protocol holds for it
    /// (registrations, queue entries) and completes it.
    void (*abort)(core::Request* r, Status why);
};

/// Cost hook: the time, in seconds, protocol @p id takes to move @p size bytes over a lane
/// with @p lane (its own cost figures, LaneAttr::costs), by the cost lines of the selector
/// (select.cpp owns them; this forwards). Negative when the lane does not offer @p id there.
double protocol_cost(ProtoId id, const LaneCaps& lane, size_t size);

}  // namespace swy::proto
