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
    h.pid = getpid();
    switch (static_cast<proto::ProtoId>(r->proto)) {
        case proto::ProtoId::kRndvGetCma: h.scheme = static_cast<uint32_t>(RndvScheme::kGet); break;
        case proto::ProtoId::kRndvPutCma: h.scheme = static_cast<uint32_t>(RndvScheme::kPut); break;
        default: h.scheme = static_cast<uint32_t>(RndvScheme::kPipeline); break;
    }
    return lane_->am_send(proto::kAmRndvRts, &h, sizeof(h), nullptr, 0);
}

void Worker::handle_ats(const uint8_t* data, size_t length) {
    proto::AckHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = pool_.find(h.sender_request);
    if (r == nullptr || r->kind != RequestKind::kSend) return;
    if (h.status != 0) r->rndv_status = static_cast<Status>(h.status);
    if (r->parts_left > 0 && --r->parts_left > 0) return;  // our own put is still running
    r->local_done = r->remote_done = true;
    complete(r, static_cast<Status>(h.status) != Status::kOk ? static_cast<Status>(h.status)
                                                             : r->rndv_status);
}

void Worker::handle_rtr(const uint8_t* data, size_t length) {
    proto::RtrHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = pool_.find(h.sender_request);
    if (r == nullptr || r->kind != RequestKind::kSend || h.length > r->length) return;
    r->peer_request = h.receive_request;
    r->remote_address = h.address;
    r->remote_pid = h.pid;
    r->rndv_length = h.length;
    r->rndv_done = 0;
    r->rndv_scheme = static_cast<uint8_t>(h.scheme);
    r->rndv_status = static_cast<Status>(h.status);
    r->rndv_offset = 0;
    if (h.split != 0) {
        // Split GET: the receiver pulls the head, we push the tail; done when both are.
        if (h.offset > r->length || h.length > r->length - h.offset) return;
        r->rndv_offset = h.offset;
        r->parts_left = 2;
    }
    start_rndv_send(r);
}

void Worker::start_rndv_send(Request* r) {
    rndv_sends_.push_back({r, r->wire_id()});
}

// Moves at most kProgressBudget bytes of one put/pipeline send; true when finished.
static bool push_rndv_send(Worker* w, Request* r, Status* error) {
    Endpoint* ep = r->ep;
    size_t budget = kProgressBudget;
    if (r->rndv_scheme == static_cast<uint8_t>(RndvScheme::kPut)) {
        while (r->rndv_done < r->rndv_length && budget > 0) {
            size_t n = std::min({size_t{4} << 20, r->rndv_length - r->rndv_done, budget});
            Status s = tl::cma::write(w->cma_mode(), r->remote_pid, r->remote_address + r->rndv_done,
                                      r->send_buffer + r->rndv_offset + r->rndv_done, n);
            if (s != Status::kOk) {
                if (r->parts_left > 0 && s == Status::kUnsupported) {
                    // We may not write into the receiver: tell it to pull our part itself.
                    proto::AckHeader fin{r->peer_request, static_cast<int32_t>(s), 0};
                    if (ep->lane()->am_send(proto::kAmRndvFin, &fin, sizeof(fin), nullptr, 0) ==
                        Status::kOk) {
                        return true;  // parts_left: the ATS will now cover everything
                    }
                }
                *error = s;
                return true;
            }
            r->rndv_done += n;
            budget -= n;
        }
        if (r->rndv_done < r->rndv_length) return false;
        proto::AckHeader fin{r->peer_request, static_cast<int32_t>(r->rndv_status), 0};
        Status s = ep->lane()->am_send(proto::kAmRndvFin, &fin, sizeof(fin), nullptr, 0);
        if (s == Status::kNoResource) return false;
        if (s != Status::kOk) *error = s;
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
    if (!proto::read_header(data, length, &h) || h.scheme > 2) {
        log_printf(LogLevel::kError, "dropping malformed RTS (%zu bytes)", length);
        return;
    }
    const uint64_t remote_uid = ifaces_[src.iface]->sender_uid(src.sender);
    if (proto::PostedReceive* p = matcher_.match_posted(h.tag)) {
        start_rndv_receive(static_cast<Request*>(p), h, src, remote_uid);
        return;
    }
    auto* d = new UnexpectedDesc;
    d->tag = h.tag;
    d->length = h.total_length;
    d->received = h.total_length;  // nothing to reassemble: the data waits at the sender
    d->rndv = true;
    d->rts = h;
    d->source = src;
    d->remote_uid = remote_uid;
    matcher_.add_unexpected(d);
    unexpected_rts_.push_back(d);
}

void Worker::start_rndv_receive(Request* r, const proto::RtsHeader& rts, tl::AmSource src,
                                uint64_t remote_uid) {
    r->matched = true;
    r->info.sender_tag = rts.tag;
    r->info.length = rts.total_length;
    r->truncated = rts.total_length > r->capacity;
    r->rndv_length = std::min<size_t>(rts.total_length, r->capacity);
    r->rndv_done = 0;
    r->peer_request = rts.sender_request;
    r->remote_address = rts.address;
    r->remote_pid = rts.pid;
    r->remote_uid = remote_uid;
    r->source = src;
    auto scheme = static_cast<RndvScheme>(rts.scheme);
    // Memory the CPU (and so CMA) must not touch takes the data through the pipeline, staged
    // into it fragment by fragment with the memory type's copy.
    if (!r->cpu_buffer && r->rndv_length != 0) scheme = RndvScheme::kPipeline;
    if (r->rndv_length == 0 || scheme == RndvScheme::kGet) {
        r->rndv_scheme = static_cast<uint8_t>(RndvScheme::kGet);
        if (r->rndv_length >= rndv_split_min_ && cma_mode_ != tl::cma::CmaMode::kOff &&
            cma_mode_ != tl::cma::CmaMode::kSimulateEperm) {
            // Both processes copy at once: we pull the head, the sender pushes the tail.
            const size_t tail = (r->rndv_length / 2) & ~size_t{4095};
            r->split_offset = r->rndv_length - tail;
            r->parts_left = 2;
            proto::RtrHeader h{};
            h.sender_request = r->peer_request;
            h.receive_request = r->wire_id();
            h.address = reinterpret_cast<uint64_t>(r->recv_buffer + r->split_offset);
            h.length = tail;
            h.pid = getpid();
            h.scheme = static_cast<uint32_t>(RndvScheme::kPut);
            h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
            h.split = 1;
            h.offset = r->split_offset;
            r->rndv_length = r->split_offset;  // our part
            rndv_waiting_.push_back({r, r->wire_id()});
            send_control(r->source, proto::kAmRndvRtr, &h, sizeof(h));
        }
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
    h.pid = getpid();
    h.scheme = static_cast<uint32_t>(scheme);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    rndv_waiting_.push_back({r, r->wire_id()});
    send_control(r->source, proto::kAmRndvRtr, &h, sizeof(h));
}

void Worker::finish_rndv_receive(Request* r, Status status) {
    std::erase_if(rndv_waiting_, [r](const TrackedRequest& t) { return t.request == r; });
    complete(r, status);
}

void Worker::handle_fin(const uint8_t* data, size_t length) {
    proto::AckHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = pool_.find(h.sender_request);
    if (r == nullptr || r->kind != RequestKind::kRecv || !r->matched) return;
    if (r->parts_left > 0) {
        if (h.status == static_cast<int32_t>(Status::kUnsupported)) {
            // The sender may not write into us: pull its part ourselves, after ours.
            r->rndv_length = r->info.length < r->capacity ? r->info.length : r->capacity;
            r->parts_left = 0;
            std::erase_if(rndv_waiting_, [r](const TrackedRequest& t) { return t.request == r; });
            if (r->rndv_done == r->split_offset) rndv_gets_.push_back({r, r->wire_id()});
            return;
        }
        std::erase_if(rndv_waiting_, [r](const TrackedRequest& t) { return t.request == r; });
        if (--r->parts_left > 0) return;  // our own pull is still running
        r->received = r->rndv_done + (r->info.length < r->capacity ? r->info.length : r->capacity) -
                      r->split_offset;
        complete(r, r->truncated ? Status::kMessageTruncated : Status::kOk);
        return;
    }
    if (h.status != 0 && h.status != static_cast<int32_t>(Status::kMessageTruncated)) {
        finish_rndv_receive(r, static_cast<Status>(h.status));
        return;
    }
    r->received = r->rndv_length;
    finish_rndv_receive(r, r->truncated ? Status::kMessageTruncated : Status::kOk);
}

void Worker::handle_rndv_data(const uint8_t* data, size_t length) {
    proto::RndvDataHeader h{};
    if (!proto::read_header(data, length, &h)) return;
    Request* r = pool_.find(h.receive_request);
    const size_t size = length - sizeof(h);
    if (r == nullptr || r->kind != RequestKind::kRecv || h.offset != r->rndv_done ||
        size > r->rndv_length - r->rndv_done) {
        log_printf(LogLevel::kError, "dropping a rendezvous fragment that fits no receive");
        return;
    }
    if (copy_in(r, h.offset, data + sizeof(h), size) != Status::kOk) r->copy_failed = true;
    r->rndv_done += size;
    r->received = r->rndv_done;
    if (r->rndv_done == r->rndv_length) {
        finish_rndv_receive(r, r->copy_failed ? Status::kIoError
                               : r->truncated ? Status::kMessageTruncated
                                              : Status::kOk);
    }
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
            s = tl::cma::read(cma_mode_, r->remote_pid, r->recv_buffer + r->rndv_done,
                              r->remote_address + r->rndv_done, n);
            if (s == Status::kOk) {
                r->rndv_done += n;
                budget -= n;
            }
        }
        ++events;
        if (s == Status::kUnsupported && r->rndv_done == 0) {
            // Ptrace policy refused us: the sender pushes the data through the lane instead.
            log_printf(LogLevel::kInfo, "rendezvous: CMA read refused, using the pipeline");
            rndv_gets_.erase(rndv_gets_.begin() + static_cast<long>(i));
            send_rtr(r, RndvScheme::kPipeline);
            continue;
        }
        if (s != Status::kOk || r->rndv_done == r->rndv_length) {
            rndv_gets_.erase(rndv_gets_.begin() + static_cast<long>(i));
            const Status final_status =
                s != Status::kOk ? s : (r->truncated ? Status::kMessageTruncated : Status::kOk);
            proto::AckHeader ats{r->peer_request, static_cast<int32_t>(final_status), 0};
            send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
            r->received = r->rndv_done;
            if (s == Status::kOk && r->parts_left > 0 && --r->parts_left > 0) continue;  // FIN
            complete(r, final_status);
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
            if (error == Status::kOk && r->parts_left > 0 && --r->parts_left > 0) continue;
            r->local_done = r->remote_done = true;
            complete(r, error != Status::kOk ? error : r->rndv_status);
            continue;
        }
        ++i;
    }
    return events;
}

void Worker::fail_rndv(uint64_t remote_uid, Status why) {
    for (UnexpectedDesc* d : unexpected_rts_) {
        if (d->remote_uid == remote_uid) d->sender_failed = true;
    }
    for (auto* list : {&rndv_gets_, &rndv_waiting_}) {
        std::vector<TrackedRequest> keep;
        for (const TrackedRequest& t : *list) {
            if (t.live() && t.request->remote_uid == remote_uid) {
                complete(t.request, why);
            } else if (t.live()) {
                keep.push_back(t);
            }
        }
        list->swap(keep);
    }
}

}  // namespace swy::core
