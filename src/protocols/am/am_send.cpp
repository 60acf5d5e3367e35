#include "protocols/am/am_send.h"

#include <switchyard/am.h>

#include <cstring>

#include "core/endpoint.h"
#include "core/request_params.h"
#include "core/worker.h"
#include "datatype/data_view.h"
#include "protocols/am/am_wire.h"
#include "protocols/protocol.h"
#include "protocols/rndv/rendezvous.h"

namespace swy::proto::am {

using core::Endpoint;
using core::Request;

namespace {

/// Room for the eager wire header and the longest user header: the eager packet's front is
/// assembled here, on the stack (no allocation per message).
struct EagerFront {
    alignas(8) uint8_t bytes[sizeof(AmEagerHeader) + SWY_AM_MAX_HEADER];
    size_t length;

    EagerFront(uint16_t id, const void* header, size_t header_length) {
        const AmEagerHeader h{kAmWireVersion, 0, id, static_cast<uint32_t>(header_length)};
        std::memcpy(bytes, &h, sizeof(h));
        if (header_length != 0) std::memcpy(bytes + sizeof(h), header, header_length);
        length = sizeof(h) + header_length;
    }
};

Status pack_view(void* arg, uint8_t* dst, size_t length) {
    static_cast<dt::DataView*>(arg)->pack(0, dst, length);
    return Status::kOk;
}

/// The rendezvous protocol for @p length bytes: the table's, or when the table sends that size
/// eager (a forced rendezvous, or eager fragments that AM does not use), its first rendezvous.
ProtoId rendezvous_for(const ProtoTable& table, size_t length) {
    const ProtoId id = table.lookup(length);
    if (is_rendezvous(id)) return id;
    for (const ProtoRange& range : table.ranges()) {
        if (is_rendezvous(range.proto)) return range.proto;
    }
    return ProtoId::kRndvPipeline;
}

bool fits_eager(const Endpoint& ep, size_t header_length, size_t length) {
    return header_length <= eager_max(ep) && length <= eager_max(ep) - header_length;
}

bool goes_eager(const Endpoint& ep, const Request* r) {
    if ((r->flags & SWY_AM_SEND_FLAG_RNDV) != 0) return false;
    return fits_eager(ep, r->am_header_length, r->length);
}

/// A message the lane cannot carry, known once the endpoint is wired: forced eager but too
/// large, or a rendezvous whose RTS (with the user header) does not fit a packet.
bool refused(const Endpoint& ep, const Request* r) {
    if (goes_eager(ep, r)) return false;
    return (r->flags & SWY_AM_SEND_FLAG_EAGER) != 0 ||
           sizeof(AmRtsHeader) + r->am_header_length > ep.single_packet_max();
}

}  // namespace

size_t eager_max(const Endpoint& ep) { return ep.single_packet_max(); }

Status send(Endpoint* ep, uint16_t id, const void* header, size_t header_length, const void* data,
            size_t count, const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (__builtin_expect(ep->failed(), 0)) {
        return ep->failure() == Status::kCanceled ? Status::kEndpointClosed : ep->failure();
    }
    const uint32_t flags = core::request_params::flags(params);
    const swy_datatype_t datatype = core::request_params::datatype(params);
    const swy_memtype_t memtype = core::request_params::memtype(params);
    constexpr uint32_t kForced = SWY_AM_SEND_FLAG_EAGER | SWY_AM_SEND_FLAG_RNDV;
    if ((flags & kForced) == kForced || header_length > SWY_AM_MAX_HEADER) {
        return Status::kInvalidParam;
    }
    core::Worker* worker = ep->worker();
    if (__builtin_expect(!worker->host_without_detection(memtype), 0) && count != 0 &&
        datatype == SWY_DATATYPE_CONTIG) {
        mem::MemType type = mem::MemType::kHost;
        bool cpu = true;
        const Status ms = worker->resolve_memtype(data, count, memtype, &type, &cpu);
        if (ms != Status::kOk) return ms;
        if (type != mem::MemType::kHost || !cpu) return Status::kUnsupported;
    }
    const bool wired = ep->wired();
    // Completing at once is not allowed where the lane confirms delivery later (tcp).
    const bool may_go_now =
        wired && ep->pending().empty() && !ep->lane_attr().confirms_delivery &&
        (flags & (uint32_t{SWY_AM_SEND_FLAG_RNDV} | SWY_REQ_FLAG_NO_IMM_COMPLETE)) == 0;

    // Non-contiguous data: packed into the cell when eager; a rendezvous streams it through
    // the pipeline, packed fragment by fragment (the request takes the view over).
    dt::DataView view;
    size_t length = count;
    bool streamed = false;
    if (__builtin_expect(datatype != SWY_DATATYPE_CONTIG, 0)) {
        if (!wired) return Status::kUnsupported;
        if (memtype != SWY_MEMTYPE_UNKNOWN && memtype != SWY_MEMTYPE_HOST) {
            return Status::kUnsupported;  // non-contiguous data is host memory only
        }
        const Status vs = view.init(datatype, data, count, true);
        if (vs != Status::kOk) return vs;
        length = view.length();
        streamed = (flags & SWY_AM_SEND_FLAG_RNDV) != 0 || !fits_eager(*ep, header_length, length);
        if (streamed && ((flags & SWY_AM_SEND_FLAG_EAGER) != 0 ||
                         sizeof(AmRtsHeader) + header_length > ep->single_packet_max())) {
            return Status::kInvalidParam;  // forced eager, or the RTS would not fit a packet
        }
        if (may_go_now && !streamed) {
            const EagerFront front(id, header, header_length);
            const Status s = ep->lane()->am_send_packed(kAmUserEager, front.bytes, front.length,
                                                        pack_view, &view, length);
            if (s != Status::kNoResource) return s;
        }
    } else if (wired) {
        if ((flags & SWY_AM_SEND_FLAG_EAGER) != 0 && !fits_eager(*ep, header_length, length)) {
            return Status::kInvalidParam;
        }
        // The fast path: one packet, now.
        if (may_go_now && fits_eager(*ep, header_length, length)) {
            const EagerFront front(id, header, header_length);
            const Status s =
                ep->lane()->am_send(kAmUserEager, front.bytes, front.length, data, length);
            if (__builtin_expect(s == Status::kOk, 1)) return Status::kOk;
            if (s != Status::kNoResource) return s;
        }
        const bool rndv =
            (flags & SWY_AM_SEND_FLAG_RNDV) != 0 || !fits_eager(*ep, header_length, length);
        if (rndv && sizeof(AmRtsHeader) + header_length > ep->single_packet_max()) {
            return Status::kInvalidParam;  // the RTS itself would not fit a packet
        }
    }

    // Queued behind earlier sends, no room on the lane, or rendezvous: a request.
    Request* r = worker->new_request(params);
    r->kind = core::RequestKind::kSend;
    r->ep = ep;
    r->flags = flags;
    r->am = true;
    r->am_id = id;
    r->am_header_length = static_cast<uint16_t>(header_length);
    r->length = length;
    r->am_bytes.resize(header_length + (view.contiguous() || streamed ? 0 : length));
    if (header_length != 0) std::memcpy(r->am_bytes.data(), header, header_length);
    if (view.contiguous()) {
        r->send_buffer = static_cast<const uint8_t*>(data);
    } else if (streamed) {
        // As a non-contiguous tag send: nothing reads it as bytes, the pipeline packs it.
        worker->pool().attach_view(r)->take(view);
        r->memtype = static_cast<uint8_t>(mem::MemType::kHost);
        r->cpu_buffer = false;
        r->send_buffer = nullptr;
    } else {
        // Eager data is at most one packet: packed now, the caller's buffer is free at once.
        view.pack(0, r->am_bytes.data() + header_length, length);
        view.finish();
        r->send_buffer = r->am_bytes.data() + header_length;
    }
    if (wired) choose(ep, r);

    if (wired && ep->pending().empty()) {
        const Status s = start(r);
        if (is_error(s) && s != Status::kNoResource) {
            worker->pool().put(r);
            return s;
        }
        if (s == Status::kOk) {
            r->local_done = true;
            if (r->remote_done && !ep->await_delivery(r)) {
                if ((flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) == 0) {
                    worker->pool().put(r);
                    return Status::kOk;
                }
                r->user_owned = true;
                worker->complete_later(r, Status::kOk);
                *out = r;
                return Status::kInProgress;
            }
            ep->in_flight().push_back(r);
            r->queue = 2;
            r->user_owned = true;
            *out = r;
            return Status::kInProgress;
        }
    }
    ep->pending().push_back(r);
    r->queue = 1;
    r->user_owned = true;
    if (wired) worker->mark_pending(ep);  // unwired: the worker marks it once wired
    *out = r;
    return Status::kInProgress;
}

void choose(Endpoint* ep, Request* r) {
    if (goes_eager(*ep, r) || refused(*ep, r)) {
        r->proto = static_cast<uint8_t>(ProtoId::kEagerBcopy);
        r->remote_done = true;
        return;
    }
    // Non-contiguous data has no buffer a zero-copy protocol could reach: the pipeline.
    r->proto =
        r->view != nullptr
            ? static_cast<uint8_t>(ProtoId::kRndvPipeline)
            : static_cast<uint8_t>(rendezvous_for(ep->table(mem::MemType::kHost), r->length));
    r->remote_done = false;  // the ATS or the FIN ends it
}

Status start(Request* r) {
    Endpoint* ep = r->ep;
    const auto id = static_cast<ProtoId>(r->proto);
    if (is_rendezvous(id)) return rndv::protocol(id).start(r);
    if (__builtin_expect(refused(*ep, r), 0)) {
        // Not sent; leaves the queue as if sent, and completes with the error from progress.
        r->remote_done = false;
        ep->worker()->complete_later(r, Status::kInvalidParam);
        return Status::kOk;
    }
    const EagerFront front(r->am_id, r->am_bytes.data(), r->am_header_length);
    return ep->lane()->am_send(kAmUserEager, front.bytes, front.length, r->send_buffer, r->length);
}

Status send_rts(Request* r, const RtsHeader& rts) {
    AmRtsHeader h{};
    h.rts = rts;
    h.version = kAmWireVersion;
    h.am_id = r->am_id;
    h.header_length = r->am_header_length;
    return r->ep->lane()->am_send(kAmUserRts, &h, sizeof(h), r->am_bytes.data(),
                                  r->am_header_length);
}

}  // namespace swy::proto::am
