#include "protocols/eager/eager_send.h"

#include <algorithm>

#include "core/endpoint.h"
#include "core/worker.h"
#include "protocols/wire.h"

namespace swy::proto::eager {

using core::Endpoint;
using core::Request;

namespace {

/// A message that fits one packet: EagerOnly, or EagerSyncOnly when the receiver must ack.
Status send_single(Endpoint* ep, Request* r) {
    if (r->remote_done) {
        EagerOnlyHeader h{r->send_tag};
        return ep->send_payload(r, kAmEagerOnly, &h, sizeof(h), 0, r->length);
    }
    EagerSyncHeader h{r->send_tag, r->wire_id()};
    return ep->send_payload(r, kAmEagerSyncOnly, &h, sizeof(h), 0, r->length);
}

/// A larger message: the first fragment announces the total, middle ones carry offsets.
Status send_fragments(Endpoint* ep, Request* r) {
    const size_t fragment = ep->fragment_max();
    if (r->in_stage(SendStage::kNotStarted)) {
        EagerFirstHeader h{};
        h.tag = r->send_tag;
        h.total_length = r->length;
        h.message_id = r->message_id;
        const bool sync = !r->remote_done;
        h.sender_request = sync ? r->wire_id() : 0;
        h.flags = sync ? kEagerFlagSync : 0;
        const size_t chunk = std::min(fragment, r->length);
        Status s = ep->send_payload(r, kAmEagerFirst, &h, sizeof(h), 0, chunk);
        if (s != Status::kOk) return s;
        r->set_stage(SendStage::kFragments);
        r->offset = chunk;
    }
    while (r->offset < r->length) {
        EagerMiddleHeader h{r->offset, r->message_id, 0};
        const size_t chunk = std::min(fragment, r->length - r->offset);
        Status s = ep->send_payload(r, kAmEagerMiddle, &h, sizeof(h), r->offset, chunk);
        if (s != Status::kOk) return s;
        r->offset += chunk;
    }
    return Status::kOk;
}

constexpr Protocol kEagerShort{ProtoId::kEagerShort, &start, nullptr, &abort};
constexpr Protocol kEagerBcopy{ProtoId::kEagerBcopy, &start, nullptr, &abort};

}  // namespace

Status start(Request* r) {
    Endpoint* ep = r->ep;
    return r->length <= ep->single_packet_max() ? send_single(ep, r) : send_fragments(ep, r);
}

void abort(Request* r, Status why) {
    if (r->queue == 1) r->ep->pending().remove(r);
    if (r->queue == 2) r->ep->in_flight().remove(r);
    r->ep->worker()->complete(r, why);
}

const Protocol& protocol(ProtoId id) {
    return id == ProtoId::kEagerShort ? kEagerShort : kEagerBcopy;
}

}  // namespace swy::proto::eager
