// Rendezvous over verbs lanes: GET (the RTS carries the sender's address and rkey; the
// receiver pulls with RDMA READ and answers with ATS) and PUT (the receiver's RTR carries its
// address and rkey; the sender pushes with RDMA WRITE and posts the FIN right behind the last
// WRITE on the same QP). Hooked into rndv.cpp at marked places; everything else (matching,
// truncation, failure) is shared with it. docs/verbs.md, "Rendezvous", gives the critical
// path of each.
//
// Registration: one use of a registration per transfer and side, taken when the transfer
// starts (a PUT sender: right after its RTS went out) and dropped as soon as it is over (before
// the request completes on the side that exposed an rkey, and on a PUT sender once its WRITEs
// completed). The lane decides what a use costs: a hit in its registration cache, validated
// against the page frames on every lookup so a buffer re-mapped at the same address is never
// reached through a stale key, or a registration made and dropped per transfer when the cache
// cannot run (docs/verbs.md, "Registration"). The expected cost is part of the selector's cost
// model (LaneAttr::reg_cost).
#include <algorithm>

#include "common/log.h"
#include "core/rdma_register.h"
#include "core/worker.h"

namespace swy::core {

using common::LogLevel;
using common::log_printf;
using proto::RndvScheme;

namespace {

tl::RdmaEndpoint* rdma_of(tl::Endpoint* lane) {
    return lane != nullptr ? dynamic_cast<tl::RdmaEndpoint*>(lane) : nullptr;
}

}  // namespace

// Host memory, or device memory exported as a dma-buf where the lane takes dma-buf MRs
// (rdma_register.h); anything else is refused and the transfer uses the pipeline.
Status Worker::register_rdma_buffer(tl::Endpoint* lane, const Request* r, const void* buffer,
                                    size_t length, unsigned access,
                                    std::unique_ptr<tl::MemoryRegistration>* out,
                                    std::string* why) {
    tl::RdmaEndpoint* rdma = rdma_of(lane);
    if (rdma == nullptr) {
        *why = "no RDMA lane";
        return Status::kUnsupported;
    }
    const RegistryDmabufExporter exporter(context_->memtypes());
    return register_for_rdma(*rdma, lane->attr(), exporter, buffer, length,
                             static_cast<mem::MemType>(r->memtype), r->cpu_buffer, access, out,
                             why);
}

void Worker::release_rdma(Request* r) {
    // Also drop registrations whose request ended another way (failures, a pipeline fallback).
    std::erase_if(rdma_regs_, [r](const RdmaRegistration& e) {
        return e.request == r || e.request->completed || e.request->wire_id() != e.id;
    });
}

void Worker::prepare_rdma_rts(Endpoint* ep, Request* r, proto::RtsHeader* rts) {
    const bool get = r->proto == static_cast<uint8_t>(proto::ProtoId::kRndvGetZcopy);
    tl::RdmaEndpoint* rdma = rdma_of(ep->lane());
    // Device memory too: register_rdma_buffer refuses what the lane cannot register (then
    // the RTS stays a pipeline one, or PUT falls back to pushing through the lane).
    if (rdma == nullptr || (!r->cpu_buffer && !ep->lane()->attr().rdma_device_memory)) return;
    if (!get) {
        // A PUT RTS carries no key: the buffer is registered once the RTS is on the wire
        // (register_put_source), off the receiver's critical path.
        rts->scheme = static_cast<uint32_t>(RndvScheme::kPutRdma);
        return;
    }
    const uint64_t id = r->wire_id();
    for (const RdmaRegistration& e : rdma_regs_) {
        if (e.request == r && e.id == id) {  // a retried RTS: already registered
            rts->scheme = static_cast<uint32_t>(RndvScheme::kGetRdma);
            rts->rkey = e.reg->rkey();
            return;
        }
    }
    release_rdma(r);  // sweep finished transfers first
    std::unique_ptr<tl::MemoryRegistration> reg;
    std::string why;
    Status s = register_rdma_buffer(ep->lane(), r, r->send_buffer, r->length,
                                    tl::kRdmaRemoteRead, &reg, &why);
    if (s != Status::kOk) {
        log_printf(LogLevel::kInfo, "rendezvous: %s; using the pipeline", why.c_str());
        return;
    }
    rts->scheme = static_cast<uint32_t>(RndvScheme::kGetRdma);
    rts->rkey = reg->rkey();
    rdma_regs_.push_back({r, id, std::move(reg)});
}

void Worker::register_put_source(Request* r) {
    tl::RdmaEndpoint* rdma = rdma_of(r->ep->lane());
    if (rdma == nullptr) return;  // start_rdma_put pushes through the lane
    release_rdma(r);  // sweep finished transfers first
    std::unique_ptr<tl::MemoryRegistration> reg;
    std::string why;
    Status s = register_rdma_buffer(r->ep->lane(), r, r->send_buffer, r->length, tl::kRdmaLocal,
                                    &reg, &why);
    if (s != Status::kOk) {
        // The RTS already asked for RDMA WRITE: the receiver will answer with its key, and we
        // push the data through the lane into its buffer instead (start_rdma_put).
        log_printf(LogLevel::kInfo,
                   "rendezvous: %s; the put's data will be pushed through the lane", why.c_str());
        return;
    }
    rdma_regs_.push_back({r, r->wire_id(), std::move(reg)});
}

void Worker::start_rdma_receive(Request* r, const proto::RtsHeader& rts, RndvScheme scheme) {
    r->rndv_scheme = static_cast<uint8_t>(scheme);
    if (r->rndv_length == 0) {
        // Nothing to move (empty message or empty buffer): answer at once.
        const Status status = r->truncated ? Status::kMessageTruncated : Status::kOk;
        proto::AckHeader ats{r->peer_request, static_cast<int32_t>(status), 0};
        send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
        r->received = 0;
        finish_rndv_receive(r, status);
        return;
    }
    tl::Endpoint* lane = ifaces_[r->source.iface]->reply_endpoint(r->source.sender);
    tl::RdmaEndpoint* rdma = rdma_of(lane);
    std::unique_ptr<tl::MemoryRegistration> reg;
    std::string why;
    const bool get = scheme == RndvScheme::kGetRdma;
    // Device memory too, where the lane takes dma-buf MRs (register_rdma_buffer).
    Status s = rdma == nullptr ? Status::kUnsupported
                               : register_rdma_buffer(lane, r, r->recv_buffer, r->rndv_length,
                                                      get ? tl::kRdmaLocalWrite
                                                          : tl::kRdmaRemoteWrite,
                                                      &reg, &why);
    if (s != Status::kOk) {
        // The sender can always push through the lane instead.
        log_printf(LogLevel::kInfo, "rendezvous: RDMA not possible (%s); using the pipeline",
                   rdma == nullptr ? "no RDMA lane to the sender" : why.c_str());
        send_rtr(r, RndvScheme::kPipeline);
        return;
    }
    const uint64_t id = r->wire_id();
    if (get) {
        s = rdma->get(*reg, 0, rts.address, rts.rkey, r->rndv_length, &Worker::on_rdma_get_done,
                      this, id);
        if (s != Status::kOk) {
            proto::AckHeader ats{r->peer_request, static_cast<int32_t>(s), 0};
            send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
            complete(r, s);
            return;
        }
        rdma_regs_.push_back({r, id, std::move(reg)});
        rndv_waiting_.push_back({r, id});  // failed by fail_rndv if the sender dies
        return;
    }
    proto::RtrHeader h{};
    h.sender_request = r->peer_request;
    h.receive_request = id;
    h.address = reinterpret_cast<uint64_t>(r->recv_buffer);
    h.length = r->rndv_length;
    h.scheme = static_cast<uint32_t>(RndvScheme::kPutRdma);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    h.rkey = reg->rkey();
    rdma_regs_.push_back({r, id, std::move(reg)});
    rndv_waiting_.push_back({r, id});
    send_control(r->source, proto::kAmRndvRtr, &h, sizeof(h));
}

void Worker::on_rdma_get_done(void* arg, uint64_t cookie, Status status) {
    auto* w = static_cast<Worker*>(arg);
    Request* r = w->pool_.find(cookie);
    if (r == nullptr || r->kind != RequestKind::kRecv || r->completed) return;  // failed already
    const Status final_status =
        status != Status::kOk ? status : r->truncated ? Status::kMessageTruncated : Status::kOk;
    proto::AckHeader ats{r->peer_request, static_cast<int32_t>(final_status), 0};
    w->send_control(r->source, proto::kAmRndvAts, &ats, sizeof(ats));
    r->received = status == Status::kOk ? r->rndv_length : 0;
    w->finish_rndv_receive(r, final_status);
}

void Worker::start_rdma_put(Request* r, uint32_t rkey) {
    const uint64_t id = r->wire_id();
    if (r->rndv_length == 0) {  // nothing to write: the FIN alone
        on_rdma_put_posted(this, id, Status::kOk);
        return;
    }
    const tl::MemoryRegistration* reg = nullptr;
    for (const RdmaRegistration& e : rdma_regs_) {
        if (e.request == r && e.id == id) reg = e.reg.get();
    }
    tl::RdmaEndpoint* rdma = rdma_of(r->ep->lane());
    if (reg == nullptr || rdma == nullptr) {
        // Our registration failed after the RTS went out. The receiver's buffer is ready for
        // the data either way: push it through the lane as pipeline fragments, which the
        // receiver places by offset and completes on, exactly as in the pipeline protocol.
        r->rndv_scheme = static_cast<uint8_t>(RndvScheme::kPipeline);
        start_rndv_send(r);
        return;
    }
    r->rdma_pending = true;
    const Status s = rdma->put(*reg, r->rndv_offset, r->remote_address, rkey, r->rndv_length,
                               &Worker::on_rdma_put_done, &Worker::on_rdma_put_posted, this, id);
    if (s != Status::kOk) {
        r->rdma_pending = false;
        on_rdma_put_done(this, id, s);  // tells the receiver, then fails the send
    }
}

void Worker::on_rdma_put_posted(void* arg, uint64_t cookie, Status /*status*/) {
    auto* w = static_cast<Worker*>(arg);
    Request* r = w->pool_.find(cookie);
    if (r == nullptr || r->kind != RequestKind::kSend || r->completed) return;
    // Every WRITE chunk is in the send queue. The FIN goes into the same RC queue behind
    // them, so the receiver's NIC executes it, and the receiver sees it, only after the data
    // is placed: no need to wait for the WRITEs' acknowledgement first.
    r->rndv_done = r->rndv_length;
    r->fin_status = Status::kOk;
    w->send_put_fin(r);
}

void Worker::send_put_fin(Request* r) {
    proto::AckHeader fin{r->peer_request, static_cast<int32_t>(r->fin_status), 0};
    const Status s = r->ep->lane()->am_send(proto::kAmRndvFin, &fin, sizeof(fin), nullptr, 0);
    if (s == Status::kNoResource) {
        // No credit or send-queue slot now: retried from progress (push_rndv_send), still
        // behind the WRITEs, which are all posted already.
        r->fin_pending = true;
        r->rndv_scheme = static_cast<uint8_t>(RndvScheme::kPut);
        start_rndv_send(r);
        return;
    }
    if (r->rdma_pending) {
        // The send ends when the WRITEs completed (on_rdma_put_done): the NIC reads our
        // buffer until then, and our registration must outlive that.
        if (s != Status::kOk) r->rndv_status = s;
        return;
    }
    r->local_done = r->remote_done = true;
    const Status own = s != Status::kOk ? s : r->fin_status;
    complete(r, own != Status::kOk ? own : r->rndv_status);
}

void Worker::on_rdma_put_done(void* arg, uint64_t cookie, Status status) {
    auto* w = static_cast<Worker*>(arg);
    Request* r = w->pool_.find(cookie);
    if (r == nullptr || r->kind != RequestKind::kSend || r->completed) return;
    // Our buffer is no longer read: drop its registration before the send can complete.
    r->rdma_pending = false;
    w->release_rdma(r);
    if (r->rndv_done != r->rndv_length) {
        // Failed before every chunk was posted, so no FIN went out: tell the receiver (if the
        // lane still carries anything) so it never waits for one; the FIN path completes us.
        r->fin_status = status != Status::kOk ? status : Status::kIoError;
        r->rndv_done = r->rndv_length;
        w->send_put_fin(r);
        return;
    }
    if (status != Status::kOk) {
        // A failed WRITE moved the QP to the error state, so the FIN behind it was flushed,
        // never delivered: the receiver fails with the connection.
        r->rndv_status = status;
        r->fin_status = status;  // a FIN still waiting for the lane says so too
    }
    if (r->fin_pending) return;  // progress completes the send once the FIN went out
    r->local_done = r->remote_done = true;
    w->complete(r, r->rndv_status);
}

}  // namespace swy::core
