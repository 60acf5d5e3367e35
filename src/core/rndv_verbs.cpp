// Rendezvous over verbs lanes: GET (the RTS carries the sender's address and rkey; the
// receiver pulls with RDMA READ and answers with ATS) and PUT (the receiver's RTR carries its
// address and rkey; the sender pushes with RDMA WRITE, then sends FIN). Hooked into rndv.cpp
// at four marked places; everything else (matching, truncation, failure) is shared with it.
//
// Registration: one registration per transfer and side, made when the transfer starts and
// dropped as soon as it is over (before the request completes on the side that exposed an
// rkey). No cache: a registration pins the pages that back the buffer at that moment, so a
// buffer freed and re-allocated at the same address is always registered afresh and can never
// be reached through a stale key. The cost (one ibv_reg_mr per side, measured in
// docs/verbs.md) is part of the selector's cost model (LaneAttr::reg_cost).
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
    const uint64_t id = r->wire_id();
    for (const RdmaRegistration& e : rdma_regs_) {
        if (e.request == r && e.id == id) {  // a retried RTS: already registered
            const bool get = r->proto == static_cast<uint8_t>(proto::ProtoId::kRndvGetZcopy);
            rts->scheme = static_cast<uint32_t>(get ? RndvScheme::kGetRdma : RndvScheme::kPutRdma);
            rts->rkey = e.reg->rkey();
            return;
        }
    }
    if (rdma_of(ep->lane()) == nullptr) return;  // stays a pipeline RTS
    release_rdma(r);  // sweep finished transfers first
    const bool get = r->proto == static_cast<uint8_t>(proto::ProtoId::kRndvGetZcopy);
    std::unique_ptr<tl::MemoryRegistration> reg;
    std::string why;
    Status s = register_rdma_buffer(ep->lane(), r, r->send_buffer, r->length,
                                    get ? tl::kRdmaRemoteRead : tl::kRdmaLocal, &reg, &why);
    if (s != Status::kOk) {
        log_printf(LogLevel::kInfo, "rendezvous: %s; using the pipeline", why.c_str());
        return;
    }
    rts->scheme = static_cast<uint32_t>(get ? RndvScheme::kGetRdma : RndvScheme::kPutRdma);
    rts->rkey = reg->rkey();
    rdma_regs_.push_back({r, id, std::move(reg)});
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
    const tl::MemoryRegistration* reg = nullptr;
    for (const RdmaRegistration& e : rdma_regs_) {
        if (e.request == r && e.id == id) reg = e.reg.get();
    }
    tl::RdmaEndpoint* rdma = rdma_of(r->ep->lane());
    Status s = Status::kOk;
    if (r->rndv_length == 0) {
        s = Status::kOk;
    } else if (reg == nullptr || rdma == nullptr) {
        s = Status::kIoError;  // an RTR for RDMA we never offered
    } else {
        s = rdma->put(*reg, r->rndv_offset, r->remote_address, rkey, r->rndv_length,
                      &Worker::on_rdma_put_done, this, id);
        if (s == Status::kOk) return;  // FIN once the WRITE completed
    }
    on_rdma_put_done(this, id, s);
}

void Worker::on_rdma_put_done(void* arg, uint64_t cookie, Status status) {
    auto* w = static_cast<Worker*>(arg);
    Request* r = w->pool_.find(cookie);
    if (r == nullptr || r->kind != RequestKind::kSend || r->completed) return;
    // The WRITE completed (acknowledged by the peer's NIC): the data is in place, so the FIN
    // that follows can never overtake it. Our buffer's registration is no longer needed. The
    // FIN itself goes out through the CMA put path of rndv.cpp, which retries a full lane.
    w->release_rdma(r);
    r->fin_status = status;
    r->fin_pending = true;
    r->rndv_done = r->rndv_length;
    r->rndv_scheme = static_cast<uint8_t>(RndvScheme::kPut);
    w->start_rndv_send(r);
}

}  // namespace swy::core
