// Rendezvous: RTS → (GET with CMA → ATS) | (RTR → PUT with CMA → FIN) | (RTR → pipelined
// fragments). The RTS travels on the endpoint's lane like any eager message, so it takes part
// in tag matching and probes in send order; the data moves only once a receive matched.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "core/worker.h"

namespace swy::core {

using common::LogLevel;
using common::log_printf;
using proto::RndvScheme;

namespace {
// Bytes a progress call moves for one rendezvous before giving other work a turn.
constexpr size_t kProgressBudget = 8u << 20;

/// A send that went (or goes) by rendezvous: the only kind an ATS or RTR may name.
bool is_rendezvous(const Request* r) {
    return r->proto >= static_cast<uint8_t>(proto::ProtoId::kRndvGetCma);
}
}  // namespace

// ------------------------------------------------------------------------------------------
// Sender
// ------------------------------------------------------------------------------------------

Status Endpoint::send_rts(Request* r) {
    proto::RtsHeader h{};
    h.tag = r->send_tag;
    h.sender_request = r->wire_id();
    h.total_length = r->length;
    h.address = reinterpret_cast<uint64_t>(r->send_buffer);
    switch (static_cast<proto::ProtoId>(r->proto)) {
        case proto::ProtoId::kRndvGetCma: h.scheme = static_cast<uint32_t>(RndvScheme::kGet); break;
        case proto::ProtoId::kRndvPutCma: h.scheme = static_cast<uint32_t>(RndvScheme::kPut); break;
        default: h.scheme = static_cast<uint32_t>(RndvScheme::kPipeline); break;
    }
    // Verbs RDMA (rndv_verbs.cpp): sets the scheme; GET registers the buffer for its rkey.
    if (r->proto >= static_cast<uint8_t>(proto::ProtoId::kRndvGetZcopy)) {
        worker_->prepare_rdma_rts(this, r, &h);
    }
    const Status s = lane_->am_send(proto::kAmRndvRts, &h, sizeof(h), nullptr, 0);
    // PUT registers only once its RTS is on the wire: the receiver registers its own buffer
    // meanwhile, so the two registrations overlap instead of adding up.
    if (s == Status::kOk && h.scheme == static_cast<uint32_t>(RndvScheme::kPutRdma)) {
        worker_->register_put_source(r);
    }
    return s;
}

void Worker::handle_ats(tl::AmSource src, const uint8_t* data, size_t length) {
    proto::AckHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = send_request_from(src, h.sender_request, "ATS");
    if (r == nullptr) return;
    if (!is_rendezvous(r)) return reject_control("ATS for a send that is no rendezvous");
    // The ATS is always the last word: for a split GET the receiver sends it only after our
    // FIN, so our own push is over too. It carries the final status (truncation, errors).
    if (!rdma_regs_.empty()) release_rdma(r);  // verbs: the peer has read our buffer
    r->local_done = r->remote_done = true;
    complete(r, status_from_wire(h.status));
}

void Worker::handle_rtr(tl::AmSource src, const uint8_t* data, size_t length) {
    proto::RtrHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = send_request_from(src, h.sender_request, "RTR");
    if (r == nullptr) return;
    if (!is_rendezvous(r) || h.length > r->length) return reject_control("RTR out of place");
    if (r->rtr_received) {
        log_printf(LogLevel::kError, "rendezvous: ignoring a second RTR for one send");
        return;
    }
    if (h.split != 0 && (h.offset > r->length || h.length > r->length - h.offset)) return;
    r->rtr_received = true;
    r->peer_request = h.receive_request;
    r->remote_address = h.address;
    // CMA only into the process our own lane verified, whatever the RTR says: its address
    // then names memory of the peer that sent it, never ours or a third process's.
    const tl::LaneAttr& la = r->ep->lane_attr();
    r->remote_pid = la.zcopy_cma ? la.remote_pid : 0;
    r->rndv_length = h.length;
    r->rndv_done = 0;
    r->rndv_scheme = static_cast<uint8_t>(h.scheme);
    r->rndv_status = status_from_wire(h.status);
    r->rndv_offset = h.split != 0 ? h.offset : 0;  // split: we push the tail
    r->split = h.split != 0;
    if (h.scheme == static_cast<uint32_t>(RndvScheme::kPutRdma)) {
        start_rdma_put(r, h.rkey);  // verbs (rndv_verbs.cpp)
        return;
    }
    start_rndv_send(r);
}

void Worker::start_rndv_send(Request* r) {
    rndv_sends_.push_back({r, r->wire_id()});
}

// Moves at most kProgressBudget bytes of one put/pipeline send. Returns true when this
// side's work is over (data moved and, for a put, the FIN sent); *error is set if it failed.
static bool push_rndv_send(Worker* w, Request* r, Status* error) {
    Endpoint* ep = r->ep;
    size_t budget = kProgressBudget;
    if (r->rndv_scheme == static_cast<uint8_t>(RndvScheme::kPut)) {
        while (!r->fin_pending && r->rndv_done < r->rndv_length && budget > 0) {
            size_t n = std::min({size_t{4} << 20, r->rndv_length - r->rndv_done, budget});
            // No verified process behind the lane (tcp, verbs): the put is refused like a
            // ptrace refusal, and the receiver learns it from the FIN.
            Status s = r->remote_pid <= 0
                           ? Status::kUnsupported
                           : tl::cma::write(w->cma_mode(), r->remote_pid,
                                            r->remote_address + r->rndv_done,
                                            r->send_buffer + r->rndv_offset + r->rndv_done, n);
            if (s != Status::kOk) {
                // Tell the receiver, whatever happened, so it never waits for a FIN: for a
                // split it then pulls our part itself (kUnsupported) or fails.
                r->fin_status = s;
                r->fin_pending = true;
                break;
            }
            r->rndv_done += n;
            budget -= n;
        }
        if (!r->fin_pending && r->rndv_done < r->rndv_length) return false;
        r->fin_pending = true;
        proto::AckHeader fin{r->peer_request, static_cast<int32_t>(r->fin_status), 0};
        Status s = ep->lane()->am_send(proto::kAmRndvFin, &fin, sizeof(fin), nullptr, 0);
        if (s == Status::kNoResource) return false;
        r->fin_pending = false;
        if (s != Status::kOk) {
            *error = s;
        } else if (!r->split && r->fin_status != Status::kOk) {
            *error = r->fin_status;  // a plain put failed: so does the send
        }
        return true;
    }
    const size_t frag = ep->fragment_max();
    while (r->rndv_done < r->rndv_length && budget > 0) {
        proto::RndvDataHeader h{r->peer_request, r->rndv_done};
        size_t n = std::min(frag, r->rndv_length - r->rndv_done);
        Status s = ep->send_payload(r, proto::kAmRndvData, &h, sizeof(h), r->rndv_done, n);
        if (s == Status::kNoResource) return false;
        if (s != Status::kOk) {
            *error = s;
            return true;
        }
        r->rndv_done += n;
        budget -= std::min(budget, n);
    }
    return r->rndv_done == r->rndv_length;
}

// ------------------------------------------------------------------------------------------
// Receiver
// ------------------------------------------------------------------------------------------

void Worker::handle_rts(tl::AmSource src, const uint8_t* data, size_t length) {
    proto::RtsHeader h{};
    if (!proto::read_header(data, length, &h) || h.scheme > proto::kRndvSchemeMax) {
        log_printf(LogLevel::kError, "dropping malformed RTS (%zu bytes)", length);
        return;
    }
    const PeerRef peer = peer_of(src);
    // The process CMA may read is the one the lane verified (0 on network lanes): the RTS's
    // address then names the sender's own memory, or nothing.
    const int pid = ifaces_[src.iface]->sender_pid(src.sender);
    if (proto::PostedReceive* p = matcher_.match_posted(h.tag)) {
        start_rndv_receive(static_cast<Request*>(p), h, src, peer, pid);
        return;
    }
    auto* d = new UnexpectedDesc;
    d->tag = h.tag;
    d->length = h.total_length;
    d->received = h.total_length;  // nothing to reassemble: the data waits at the sender
    d->rndv = true;
    d->rts = h;
    d->source = src;
    d->peer = peer;
    d->remote_pid = pid;
    matcher_.add_unexpected(d);
    unexpected_rts_.push_back(d);
}

void Worker::start_rndv_receive(Request* r, const proto::RtsHeader& rts, tl::AmSource src,
                                const PeerRef& peer, int pid) {
    r->matched = true;
    r->info.sender_tag = rts.tag;
    r->info.length = rts.total_length;
    r->truncated = rts.total_length > r->capacity;
    r->rndv_length = std::min<size_t>(rts.total_length, r->capacity);
    r->rndv_done = 0;
    r->peer_request = rts.sender_request;
    r->remote_address = rts.address;
    r->source = src;
    r->peer = peer;
    r->remote_pid = pid;
    auto scheme = static_cast<RndvScheme>(rts.scheme);
    // A scheme the lane cannot carry (CMA from a peer we could not verify) becomes the
    // pipeline, which every lane carries and which touches only our own buffer.
    if ((scheme == RndvScheme::kGet || scheme == RndvScheme::kPut) && r->remote_pid <= 0) {
        scheme = RndvScheme::kPipeline;
    }
    // Memory the CPU (and so CMA) must not touch takes the data through the pipeline, staged
    // into it fragment by fragment with the memory type's copy. RDMA may still reach it (a
    // dma-buf MR): start_rdma_receive decides, and falls back to the pipeline itself.
    const bool rdma_scheme = scheme == RndvScheme::kGetRdma || scheme == RndvScheme::kPutRdma;
    if (!r->cpu_buffer && r->rndv_length != 0 && !rdma_scheme) scheme = RndvScheme::kPipeline;
    if (scheme == RndvScheme::kGetRdma || scheme == RndvScheme::kPutRdma) {
        start_rdma_receive(r, rts, scheme);  // verbs (rndv_verbs.cpp)
        return;
    }
    if (r->rndv_length == 0 || scheme == RndvScheme::kGet) {
        r->rndv_scheme = static_cast<uint8_t>(RndvScheme::kGet);
        // Both processes copy at once: we pull the head, the sender pushes the tail. Asked
        // only after our first chunk came through, so a refused pull never leaves a split.
        r->split_wanted = r->rndv_length >= rndv_split_min_;
        rndv_gets_.push_back({r, r->wire_id()});
        return;
    }
    send_rtr(r, scheme);
}

void Worker::send_rtr(Request* r, RndvScheme scheme) {
    r->rndv_scheme = static_cast<uint8_t>(scheme);
    proto::RtrHeader h{};
    h.sender_request = r->peer_request;
    h.receive_request = r->wire_id();
    h.address = reinterpret_cast<uint64_t>(r->recv_buffer);
    h.length = r->rndv_length;
    h.scheme = static_cast<uint32_t>(scheme);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    rndv_waiting_.push_back({r, r->wire_id()});
    send_control(r->source, proto::kAmRndvRtr, &h, sizeof(h));
}

void Worker::finish_rndv_receive(Request* r, Status status) {
    if (!rdma_regs_.empty()) release_rdma(r);  // verbs: no rkey outlives the receive
    std::erase_if(rndv_waiting_, [r](const TrackedRequest& t) { return t.request == r; });
    complete(r, status);
}

void Worker::split_request(Request* r) {
    r->split_wanted = false;
    const size_t remaining = r->rndv_length - r->rndv_done;
    const size_t tail = (remaining / 2) & ~size_t{4095};
    if (tail < rndv_split_min_ / 2) return;
    r->split = true;
    r->split_offset = r->rndv_length - tail;
    proto::RtrHeader h{};
    h.sender_request = r->peer_request;
    h.receive_request = r->wire_id();
    h.address = reinterpret_cast<uint64_t>(r->recv_buffer + r->split_offset);
    h.length = tail;
    h.scheme = static_cast<uint32_t>(RndvScheme::kPut);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    h.split = 1;
    h.offset = r->split_offset;
    r->rndv_length = r->split_offset;  // our share
    rndv_waiting_.push_back({r, r->wire_id()});
    send_control(r->source, proto::kAmRndvRtr, &h, sizeof(h));
}

void Worker::finish_split(Request* r, Status own_status) {
    Status status = own_status != Status::kOk ? own_status
                    : r->fin_status != Status::kOk ? r->fin_status
                    : r->truncated ? Status::kMessageTruncated
                                   : Status::kOk;
    proto::AckHeader ats{r->peer_request, static_cast<int32_t>(status), 0};
    send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
    r->received = std::min<size_t>(r->info.length, r->capacity);
    finish_rndv_receive(r, status);
}

void Worker::handle_fin(tl::AmSource src, const uint8_t* data, size_t length) {
    proto::AckHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = receive_request_from(src, h.sender_request, "FIN");
    if (r == nullptr) return;
    // A FIN only ends a receive that waits for pushed data (put, pipeline, a split's tail):
    // one naming a receive that pulls, or is not in rendezvous at all, is a stray packet.
    if (std::none_of(rndv_waiting_.begin(), rndv_waiting_.end(),
                     [r](const TrackedRequest& t) { return t.request == r; })) {
        return;
    }
    if (r->split) {
        const auto status = status_from_wire(h.status);
        if (status == Status::kUnsupported) {
            // The sender may not write into us: we pull its share too, as a plain GET.
            std::erase_if(rndv_waiting_, [r](const TrackedRequest& t) { return t.request == r; });
            r->split = false;
            r->rndv_length = std::min<size_t>(r->info.length, r->capacity);
            if (r->own_done) {
                r->own_done = false;
                rndv_gets_.push_back({r, r->wire_id()});
            }
            return;
        }
        r->fin_received = true;
        r->fin_status = status == Status::kMessageTruncated ? Status::kOk : status;
        if (r->own_done) finish_split(r, r->rndv_status);
        return;
    }
    if (h.status != 0 && h.status != static_cast<int32_t>(Status::kMessageTruncated)) {
        finish_rndv_receive(r, status_from_wire(h.status));
        return;
    }
    r->received = r->rndv_length;
    finish_rndv_receive(r, r->truncated ? Status::kMessageTruncated : Status::kOk);
}

Request* Worker::rndv_data_target(tl::AmSource src, const proto::RndvDataHeader& h,
                                  size_t size) {
    Request* r = receive_request_from(src, h.receive_request, "pipeline fragment");
    if (r == nullptr || h.offset != r->rndv_done || size > r->rndv_length - r->rndv_done) {
        return nullptr;
    }
    // Only a receive that waits for pushed data takes fragments (never one that pulls).
    if (std::none_of(rndv_waiting_.begin(), rndv_waiting_.end(),
                     [r](const TrackedRequest& t) { return t.request == r; })) {
        return nullptr;
    }
    return r;
}

void Worker::rndv_data_arrived(Request* r, size_t size) {
    r->rndv_done += size;
    r->received = r->rndv_done;
    if (r->rndv_done == r->rndv_length) {
        finish_rndv_receive(r, r->copy_failed ? Status::kIoError
                               : r->truncated ? Status::kMessageTruncated
                                              : Status::kOk);
    }
}

void Worker::handle_rndv_data(tl::AmSource src, const uint8_t* data, size_t length) {
    proto::RndvDataHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    const size_t size = length - sizeof(h);
    Request* r = rndv_data_target(src, h, size);
    if (r == nullptr) {
        log_printf(LogLevel::kError, "dropping a rendezvous fragment that fits no receive");
        return;
    }
    if (copy_in(r, h.offset, data + sizeof(h), size) != Status::kOk) r->copy_failed = true;
    rndv_data_arrived(r, size);
}

// Stream transports (tcp) read a fragment's payload straight into the receive buffer once its
// header names the request: no bounce through the transport's buffer and copy_in(). Memory
// the CPU must not store to keeps the staged path (on_am, copy_in with the plugin's copy).
size_t Worker::placement_header(tl::AmId id) const {
    return id == proto::kAmRndvData ? sizeof(proto::RndvDataHeader) : 0;
}

uint8_t* Worker::place_payload(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t done,
                               size_t length) {
    if (id != proto::kAmRndvData || done >= length) return nullptr;
    proto::RndvDataHeader h{};
    std::memcpy(&h, hdr, sizeof(h));
    // Looked up again on every call: a receive that failed meanwhile (its peer died on
    // another connection) is completed, and its buffer may already be the user's again.
    Request* r = rndv_data_target(src, h, length);
    if (r == nullptr || !r->cpu_buffer) return nullptr;
    return r->recv_buffer + h.offset + done;
}

void Worker::on_am_placed(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t length) {
    if (id != proto::kAmRndvData) return;
    proto::RndvDataHeader h{};
    std::memcpy(&h, hdr, sizeof(h));
    if (Request* r = rndv_data_target(src, h, length)) rndv_data_arrived(r, length);
}

// ------------------------------------------------------------------------------------------
// Progress and failures
// ------------------------------------------------------------------------------------------

unsigned Worker::progress_rndv() {
    unsigned events = 0;
    for (size_t i = 0; i < rndv_gets_.size();) {
        TrackedRequest t = rndv_gets_[i];
        if (!t.live()) {
            rndv_gets_.erase(rndv_gets_.begin() + static_cast<long>(i));
            continue;
        }
        Request* r = t.request;
        size_t budget = kProgressBudget;
        Status s = Status::kOk;
        while (r->rndv_done < r->rndv_length && budget > 0 && s == Status::kOk) {
            size_t n = std::min({rndv_chunk_, r->rndv_length - r->rndv_done, budget});
            // Before a split, pull one page only: it proves CMA works with this sender, and
            // the sender starts pushing its share right after.
            if (r->split_wanted) n = std::min<size_t>(n, 4096);
            s = r->remote_pid <= 0 ? Status::kUnsupported
                                   : tl::cma::read(cma_mode_, r->remote_pid,
                                                   r->recv_buffer + r->rndv_done,
                                                   r->remote_address + r->rndv_done, n);
            if (s == Status::kOk) {
                r->rndv_done += n;
                budget -= n;
                if (r->split_wanted) split_request(r);
            }
        }
        ++events;
        if (s == Status::kUnsupported && r->rndv_done == 0 && !r->split) {
            // Ptrace policy refused us: the sender pushes the data through the lane instead.
            log_printf(LogLevel::kInfo, "rendezvous: CMA read refused, using the pipeline");
            rndv_gets_.erase(rndv_gets_.begin() + static_cast<long>(i));
            send_rtr(r, RndvScheme::kPipeline);
            continue;
        }
        if (s != Status::kOk || r->rndv_done == r->rndv_length) {
            rndv_gets_.erase(rndv_gets_.begin() + static_cast<long>(i));
            if (r->split) {
                // Our share is pulled (or failed); the ATS waits for the sender's FIN, so the
                // sender never completes while its push may still write into our buffer.
                r->own_done = true;
                r->rndv_status = s;
                if (r->fin_received) finish_split(r, s);
                continue;
            }
            const Status final_status =
                s != Status::kOk ? s : (r->truncated ? Status::kMessageTruncated : Status::kOk);
            proto::AckHeader ats{r->peer_request, static_cast<int32_t>(final_status), 0};
            send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
            r->received = r->rndv_done;
            finish_rndv_receive(r, final_status);
            continue;
        }
        ++i;
    }
    for (size_t i = 0; i < rndv_sends_.size();) {
        TrackedRequest t = rndv_sends_[i];
        if (!t.live()) {
            rndv_sends_.erase(rndv_sends_.begin() + static_cast<long>(i));
            continue;
        }
        Status error = Status::kOk;
        ++events;
        if (push_rndv_send(this, t.request, &error)) {
            rndv_sends_.erase(rndv_sends_.begin() + static_cast<long>(i));
            Request* r = t.request;
            // A split sender completes on the receiver's ATS (sent after our FIN), unless
            // the lane itself failed.
            if (r->split && error == Status::kOk) continue;
            if (r->rdma_pending) {
                // A verbs PUT's FIN went out (or failed): its WRITEs' completion ends the send
                // (on_rdma_put_done), since until then the NIC still reads our buffer.
                if (error != Status::kOk) r->rndv_status = error;
                continue;
            }
            r->local_done = r->remote_done = true;
            complete(r, error != Status::kOk ? error : r->rndv_status);
            continue;
        }
        ++i;
    }
    return events;
}

void Worker::fail_rndv(const PeerRef& peer, Status why) {
    for (UnexpectedDesc* d : unexpected_rts_) {
        if (d->peer == peer) d->sender_failed = true;
    }
    for (auto* list : {&rndv_gets_, &rndv_waiting_}) {
        // Callbacks may add entries (a reposted receive matching another RTS): walk a copy
        // and keep what they added.
        std::vector<TrackedRequest> old;
        old.swap(*list);
        for (const TrackedRequest& t : old) {
            if (!t.live()) continue;
            if (t.request->peer == peer) {
                complete(t.request, why);
            } else {
                list->push_back(t);
            }
        }
    }
}

}  // namespace swy::core
