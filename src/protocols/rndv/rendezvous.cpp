// What every rendezvous protocol shares: the RTS (sender), matching it to a receive, the
// control messages (ATS, RTR, FIN, fragments) checked against the lane they came on, the
// lists progress() walks, registrations, and failure handling.
#include "protocols/rndv/rendezvous.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "core/worker.h"
#include "protocols/am/am_send.h"
#include "protocols/rndv/stages.h"
#include "protocols/rndv/zcopy_register.h"

namespace swy::proto::rndv {

using common::log_printf;
using common::LogLevel;
using core::Request;

namespace {

/// The protocol an RTS's scheme names (validated by the caller: scheme <= kRndvSchemeMax).
ProtoId proto_for_scheme(RndvScheme scheme) {
    for (const ProtoInfo& info : kProtoInfo) {
        if (info.family == ProtoFamily::kRendezvous && info.scheme == scheme) return info.id;
    }
    return ProtoId::kRndvPipeline;
}

bool is_rendezvous_send(const Request* r) { return is_rendezvous(static_cast<ProtoId>(r->proto)); }

Status start_rts(Request* r) { return r->worker->rndv().send_rts(r); }

void abort_rndv(Request* r, Status why) {
    Rendezvous& rv = r->worker->rndv();
    if (r->kind == core::RequestKind::kRecv) {
        rv.finish_receive(r, why);
    } else {
        rv.finish_send(r, why);
    }
}

constexpr Protocol kGet{ProtoId::kRndvGetCma, start_rts, get_progress, abort_rndv};
constexpr Protocol kPut{ProtoId::kRndvPutCma, start_rts, put_progress, abort_rndv};
constexpr Protocol kPipeline{ProtoId::kRndvPipeline, start_rts, pipeline_progress, abort_rndv};
constexpr Protocol kGetZcopy{ProtoId::kRndvGetZcopy, start_rts, get_progress, abort_rndv};
constexpr Protocol kPutZcopy{ProtoId::kRndvPutZcopy, start_rts, put_progress, abort_rndv};

}  // namespace

const Protocol& protocol(ProtoId id) {
    switch (id) {
        case ProtoId::kRndvGetCma: return kGet;
        case ProtoId::kRndvPutCma: return kPut;
        case ProtoId::kRndvGetZcopy: return kGetZcopy;
        case ProtoId::kRndvPutZcopy: return kPutZcopy;
        default: return kPipeline;
    }
}

bool Rendezvous::Tracked::live(const core::RequestPool& pool) const {
    return pool.find(id) == request;
}

// ------------------------------------------------------------------------------------------
// Sender: the RTS
// ------------------------------------------------------------------------------------------

Status Rendezvous::send_rts(Request* r) {
    const ProtoInfo* info = &proto_info(static_cast<ProtoId>(r->proto));
    tl::ZcopyLane* lane = send_zcopy(r);
    if (info->remote_keys) {
        // The RTS (GET) or the RTR (PUT) must carry a key: only a lane that hands out keys, and
        // for memory the CPU must not touch only one that registers device memory.
        const uint32_t caps = lane != nullptr ? lane->caps() : 0;
        bool reachable = (caps & tl::cap::kRemoteKeys) != 0 &&
                         (r->cpu_buffer || (caps & tl::cap::kDeviceMemory) != 0);
        if (reachable && info->zcopy == ZcopyNeed::kGet && registration(r) == nullptr) {
            release(r);  // sweep finished transfers first
            std::string why;
            if (register_buffer(lane, r, r->send_buffer, r->length, tl::kZcopyRemoteRead, &why) !=
                Status::kOk) {
                log_printf(LogLevel::kInfo, "rendezvous: %s; using the pipeline", why.c_str());
                reachable = false;
            }
        }
        if (!reachable) {
            r->proto = static_cast<uint8_t>(ProtoId::kRndvPipeline);
            info = &proto_info(ProtoId::kRndvPipeline);
        }
    }
    RtsHeader h{};
    h.tag = r->send_tag;
    h.sender_request = r->wire_id();
    h.total_length = r->length;
    h.address = reinterpret_cast<uint64_t>(r->send_buffer);
    h.scheme = static_cast<uint32_t>(info->scheme);
    if (info->zcopy == ZcopyNeed::kGet && info->remote_keys) h.rkey = registration(r)->rkey();
    switch (info->zcopy) {
        case ZcopyNeed::kGet: r->set_stage(GetStage::kWaitAts); break;
        case ZcopyNeed::kPut: r->set_stage(PutStage::kWaitRtr); break;
        case ZcopyNeed::kNone: r->set_stage(PipelineStage::kWaitRtr); break;
    }
    // An active message announces itself with its own RTS (the AM id and user header).
    const Status s =
        r->am ? am::send_rts(r, h) : r->ep->lane()->am_send(kAmRndvRts, &h, sizeof(h), nullptr, 0);
    // PUT registers only once its RTS is on the wire: the receiver registers its own buffer
    // meanwhile, so the two registrations overlap instead of adding up.
    if (s == Status::kOk && info->zcopy == ZcopyNeed::kPut && info->remote_keys) {
        put_register_source(*this, r);
    }
    return s;
}

// ------------------------------------------------------------------------------------------
// Receiver: the RTS and its match
// ------------------------------------------------------------------------------------------

void Rendezvous::on_rts(tl::AmSource src, const uint8_t* data, size_t length) {
    RtsHeader h{};
    if (!read_header(data, length, &h) || h.scheme > kRndvSchemeMax) {
        log_printf(LogLevel::kError, "dropping malformed RTS (%zu bytes)", length);
        return;
    }
    const core::PeerRef peer = worker_->peer_of(src);
    if (PostedReceive* p = worker_->matcher().match_posted(h.tag)) {
        start_receive(static_cast<Request*>(p), h, src, peer);
        return;
    }
    core::UnexpectedDesc* d = worker_->new_unexpected();
    d->tag = h.tag;
    d->length = h.total_length;
    d->received = h.total_length;  // nothing to reassemble: the data waits at the sender
    d->rndv = true;
    d->rts = h;
    d->source = src;
    d->peer = peer;
    worker_->matcher().add_unexpected(d);
    unexpected_rts_.push_back(d);
}

void Rendezvous::bind_unexpected(Request* r, const core::UnexpectedDesc& d) {
    std::erase(unexpected_rts_, &d);
    if (d.sender_failed) {
        worker_->complete(r, Status::kConnectionReset);
        return;
    }
    start_receive(r, d.rts, d.source, d.peer);
}

void Rendezvous::start_receive(Request* r, const RtsHeader& rts, tl::AmSource src,
                               const core::PeerRef& peer) {
    r->matched = true;
    r->info.sender_tag = rts.tag;
    r->info.length = rts.total_length;
    r->truncated = rts.total_length > r->capacity;
    r->rndv_length = std::min<size_t>(rts.total_length, r->capacity);
    r->rndv_done = 0;
    r->peer_request = rts.sender_request;
    r->remote_address = rts.address;
    r->remote_key = rts.rkey;
    r->source = src;
    r->peer = peer;
    const ProtoId id = proto_for_scheme(static_cast<RndvScheme>(rts.scheme));
    r->proto = static_cast<uint8_t>(id);
    if (r->rndv_length == 0) {
        // Nothing to move (empty message or empty buffer): answer at once.
        const Status status = r->truncated ? Status::kMessageTruncated : Status::kOk;
        send_ats(r, status);
        r->received = 0;
        finish_receive(r, status);
        return;
    }
    // Non-contiguous data has no buffer a zero-copy read or write could land in: whatever
    // the RTS offered, the sender pushes fragments, which we unpack at their offsets. A GET
    // sender takes this RTR in its wait-for-ATS stage, a PUT sender in its wait-for-RTR one.
    if (r->view != nullptr) {
        pipeline_start_receive(*this, r);
        return;
    }
    // Zero-copy only over the lane to the peer that sent the RTS, which reaches that peer
    // alone (CMA: the pid the lane verified; RDMA: the connection): the RTS's address then
    // names the sender's own memory, or nothing.
    switch (proto_info(id).zcopy) {
        case ZcopyNeed::kGet: get_start_receive(*this, r, reply_zcopy(r)); break;
        case ZcopyNeed::kPut: put_start_receive(*this, r, reply_zcopy(r)); break;
        case ZcopyNeed::kNone: pipeline_start_receive(*this, r); break;
    }
}

// ------------------------------------------------------------------------------------------
// Control messages
// ------------------------------------------------------------------------------------------

void Rendezvous::on_ats(tl::AmSource src, const uint8_t* data, size_t length) {
    AckHeader h{};
    if (!read_header(data, length, &h)) return;
    Request* r = worker_->send_request_from(src, h.sender_request, "ATS");
    if (r == nullptr) return;
    if (!is_rendezvous_send(r))
        return worker_->reject_control("ATS for a send that is no rendezvous");
    // The ATS is always the last word: for a split GET the receiver sends it only after our
    // FIN, so our own push is over too. It carries the final status (truncation, errors).
    finish_send(r, status_from_wire(h.status));
}

void Rendezvous::on_rtr(tl::AmSource src, const uint8_t* data, size_t length) {
    RtrHeader h{};
    if (!read_header(data, length, &h)) return;
    Request* r = worker_->send_request_from(src, h.sender_request, "RTR");
    if (r == nullptr) return;
    if (!is_rendezvous_send(r) || h.length > r->length) {
        return worker_->reject_control("RTR out of place");
    }
    if (h.split != 0 && (h.offset > r->length || h.length > r->length - h.offset)) return;
    // An RTR is taken only in the stage that waits for it: a second one for one send is
    // ignored, whatever it says.
    const ProtoInfo& info = proto_info(static_cast<ProtoId>(r->proto));
    const bool waiting = info.zcopy == ZcopyNeed::kGet   ? r->in_stage(GetStage::kWaitAts)
                         : info.zcopy == ZcopyNeed::kPut ? r->in_stage(PutStage::kWaitRtr)
                                                         : r->in_stage(PipelineStage::kWaitRtr);
    if (!waiting) {
        log_printf(LogLevel::kError, "rendezvous: ignoring a second RTR for one send");
        return;
    }
    const auto scheme = static_cast<RndvScheme>(h.scheme);
    bool pipeline = scheme == RndvScheme::kPipeline;
    const bool split = h.split != 0 && scheme == RndvScheme::kPut && info.zcopy == ZcopyNeed::kGet;
    // A put RTR is taken whatever the RTS offered: the receiver may only ask us to write into
    // its own memory (the lane reaches nobody else), and a put we cannot make fails the send
    // and tells the receiver with the FIN, where ignoring it would leave the send hanging.
    bool put = h.split == 0 && (scheme == RndvScheme::kPut || scheme == RndvScheme::kPutKeyed);
    // Non-contiguous data is never written zero-copy from our buffer (it is no byte range):
    // fragments, which a receive waiting for a put takes as well.
    if (put && r->view != nullptr) {
        put = false;
        pipeline = true;
    }
    if (!pipeline && !split && !put) return worker_->reject_control("RTR out of place");
    if (put) r->proto = static_cast<uint8_t>(proto_for_scheme(scheme));
    r->peer_request = h.receive_request;
    r->remote_address = h.address;
    r->remote_key = h.rkey;
    r->rndv_length = h.length;
    r->rndv_done = 0;
    r->rndv_status = status_from_wire(h.status);
    r->rndv_offset = split ? h.offset : 0;  // split: we push the tail
    if (split) return get_start_split_push(*this, r);
    if (put) return put_start_push(*this, r);
    // The receiver cannot take zero-copy (no lane to us, memory it must stage): fragments.
    release(r);
    r->proto = static_cast<uint8_t>(ProtoId::kRndvPipeline);
    pipeline_start_push(*this, r);
}

void Rendezvous::on_fin(tl::AmSource src, const uint8_t* data, size_t length) {
    AckHeader h{};
    if (!read_header(data, length, &h)) return;
    Request* r = worker_->receive_request_from(src, h.sender_request, "FIN");
    if (r == nullptr) return;
    // A FIN only ends a receive that waits for pushed data (put, pipeline, a split's tail):
    // one naming a receive that pulls, or is not in rendezvous at all, is a stray packet.
    if (!waits_for_peer(r)) return;
    const ProtoInfo& info = proto_info(static_cast<ProtoId>(r->proto));
    const Status status = status_from_wire(h.status);
    if (info.zcopy == ZcopyNeed::kGet) {
        if (r->in_stage(GetStage::kPullSplit) || r->in_stage(GetStage::kWaitFin)) {
            get_on_split_fin(*this, r, status);
        }
        return;  // an asynchronous read in flight takes no FIN
    }
    if (status != Status::kOk && status != Status::kMessageTruncated) {
        finish_receive(r, status);
        return;
    }
    r->received = r->rndv_length;
    finish_receive(r, r->truncated ? Status::kMessageTruncated : Status::kOk);
}

Request* Rendezvous::data_target(tl::AmSource src, const RndvDataHeader& h, size_t size) {
    Request* r = worker_->receive_request_from(src, h.receive_request, "pipeline fragment");
    if (r == nullptr || h.offset != r->rndv_done || size > r->rndv_length - r->rndv_done) {
        return nullptr;
    }
    // Only a receive that waits for pushed data takes fragments: the pipeline, or a PUT whose
    // sender could not register its buffer (never one that pulls).
    const bool takes = (r->proto == static_cast<uint8_t>(ProtoId::kRndvPipeline) &&
                        r->in_stage(PipelineStage::kWaitData)) ||
                       (proto_info(static_cast<ProtoId>(r->proto)).zcopy == ZcopyNeed::kPut &&
                        r->in_stage(PutStage::kWaitFin));
    if (!takes || !waits_for_peer(r)) return nullptr;
    return r;
}

void Rendezvous::data_arrived(Request* r, size_t size) {
    r->rndv_done += size;
    r->received = r->rndv_done;
    if (r->rndv_done == r->rndv_length) finish_receive(r, r->receive_status());
}

void Rendezvous::on_data(tl::AmSource src, const uint8_t* data, size_t length) {
    RndvDataHeader h{};
    if (!read_header(data, length, &h)) return;
    const size_t size = length - sizeof(h);
    Request* r = data_target(src, h, size);
    if (r == nullptr) {
        log_printf(LogLevel::kError, "dropping a rendezvous fragment that fits no receive");
        return;
    }
    if (worker_->copy_in(r, h.offset, data + sizeof(h), size) != Status::kOk) {
        r->copy_failed = true;
    }
    data_arrived(r, size);
}

uint8_t* Rendezvous::place_data(tl::AmSource src, const uint8_t* hdr, size_t done, size_t length) {
    if (done >= length) return nullptr;
    RndvDataHeader h{};
    std::memcpy(&h, hdr, sizeof(h));
    // Looked up again on every call: a receive that failed meanwhile (its peer died on
    // another connection) is completed, and its buffer may already be the user's again.
    Request* r = data_target(src, h, length);
    if (r == nullptr) return nullptr;
    if (__builtin_expect(r->view != nullptr, 0)) {
        // Non-contiguous data: directly only where the rest of the fragment lies in one iov
        // entry (decided alike on every call of one fragment: the range only shrinks within
        // that entry); otherwise on_data() unpacks it.
        return r->view->direct(h.offset + done, length - done);
    }
    // Device memory takes the fragment through on_data(): copied with its memory type.
    if (!r->cpu_buffer) return nullptr;
    return r->recv_buffer + h.offset + done;
}

void Rendezvous::on_data_placed(tl::AmSource src, const uint8_t* hdr, size_t length) {
    RndvDataHeader h{};
    std::memcpy(&h, hdr, sizeof(h));
    if (Request* r = data_target(src, h, length)) data_arrived(r, length);
}

// ------------------------------------------------------------------------------------------
// Helpers for the protocols
// ------------------------------------------------------------------------------------------

void Rendezvous::drive(Request* r) {
    driven_.push_back({r, r->wire_id()});
    worker_->note_side_work();
}

void Rendezvous::wait_for_peer(Request* r) {
    if (!waits_for_peer(r)) waiting_.push_back({r, r->wire_id()});
}

bool Rendezvous::waits_for_peer(const Request* r) const {
    return std::any_of(waiting_.begin(), waiting_.end(), [this, r](const Tracked& t) {
        return t.request == r && t.live(worker_->pool());
    });
}

void Rendezvous::stop_waiting(Request* r) {
    std::erase_if(waiting_, [r](const Tracked& t) { return t.request == r; });
}

tl::ZcopyLane* Rendezvous::reply_zcopy(const Request* r) const {
    tl::Interface* iface = worker_->interface(r->source.iface);
    // The sender index must still belong to the peer that sent the RTS.
    if (iface == nullptr || worker_->peer_of(r->source) != r->peer) return nullptr;
    tl::Endpoint* lane = iface->reply_endpoint(r->source.sender);
    return lane != nullptr ? lane->zcopy() : nullptr;
}

tl::ZcopyLane* Rendezvous::send_zcopy(const Request* r) {
    tl::Endpoint* lane = r->ep != nullptr ? r->ep->lane() : nullptr;
    return lane != nullptr ? lane->zcopy() : nullptr;
}

Status Rendezvous::register_buffer(tl::ZcopyLane* lane, Request* r, const void* buffer,
                                   size_t length, unsigned access, std::string* why) {
    std::unique_ptr<tl::MemoryRegistration> reg;
    const RegistryDmabufExporter exporter(worker_->context()->memtypes());
    const Status s = register_zcopy_buffer(*lane, exporter, buffer, length,
                                           static_cast<mem::MemType>(r->memtype), r->cpu_buffer,
                                           access, &reg, why);
    if (s == Status::kOk) regs_.push_back({r, r->wire_id(), std::move(reg)});
    return s;
}

const tl::MemoryRegistration* Rendezvous::registration(const Request* r) const {
    for (const Registration& e : regs_) {
        if (e.request == r && e.id == r->wire_id()) return e.reg.get();
    }
    return nullptr;
}

void Rendezvous::release(Request* r) {
    if (regs_.empty()) return;
    // Also drop registrations whose request ended another way (failures, a fallback).
    std::erase_if(regs_, [this, r](const Registration& e) {
        return e.request == r || worker_->pool().find(e.id) != e.request;
    });
}

void Rendezvous::send_rtr(Request* r, RndvScheme scheme, uint32_t rkey) {
    if (scheme == RndvScheme::kPipeline) {
        release(r);
        r->proto = static_cast<uint8_t>(ProtoId::kRndvPipeline);
        r->set_stage(PipelineStage::kWaitData);
    } else {
        r->set_stage(PutStage::kWaitFin);
    }
    RtrHeader h{};
    h.sender_request = r->peer_request;
    h.receive_request = r->wire_id();
    h.address = reinterpret_cast<uint64_t>(r->recv_buffer);
    h.length = r->rndv_length;
    h.scheme = static_cast<uint32_t>(scheme);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    h.rkey = rkey;
    wait_for_peer(r);
    worker_->send_control(r->source, kAmRndvRtr, &h, sizeof(h));
}

void Rendezvous::send_ats(Request* r, Status status) {
    AckHeader ats{r->peer_request, static_cast<int32_t>(status), 0};
    worker_->send_control(r->source, kAmRndvAts, &ats, sizeof(ats));
}

void Rendezvous::finish_receive(Request* r, Status status) {
    release(r);  // no key outlives the receive
    stop_waiting(r);
    worker_->complete(r, status);
}

void Rendezvous::finish_send(Request* r, Status status) {
    release(r);  // the peer no longer reads our buffer
    // An active message's receiver chose how much of it to take: a short pull is its own
    // business (its receive says truncated), the message was delivered.
    if (r->am && status == Status::kMessageTruncated) status = Status::kOk;
    r->local_done = r->remote_done = true;
    worker_->complete(r, status);
}

Status Rendezvous::send_fin(Request* r, Status* lane_error) {
    AckHeader fin{r->peer_request, static_cast<int32_t>(r->fin_status), 0};
    const Status s = r->ep->lane()->am_send(kAmRndvFin, &fin, sizeof(fin), nullptr, 0);
    if (s == Status::kNoResource) return s;
    *lane_error = s;
    return Status::kOk;
}

// ------------------------------------------------------------------------------------------
// Progress and failures
// ------------------------------------------------------------------------------------------

unsigned Rendezvous::progress() {
    unsigned events = 0;
    for (size_t i = 0; i < driven_.size();) {
        const Tracked t = driven_[i];
        if (!t.live(worker_->pool())) {
            driven_.erase(driven_.begin() + static_cast<long>(i));
            continue;
        }
        ++events;
        // Protocols may drive more requests (appended): the index stays valid.
        if (protocol(static_cast<ProtoId>(t.request->proto)).progress(t.request)) {
            driven_.erase(driven_.begin() + static_cast<long>(i));
            continue;
        }
        ++i;
    }
    return events;
}

void Rendezvous::fail_peer(const core::PeerRef& peer, Status why) {
    for (core::UnexpectedDesc* d : unexpected_rts_) {
        if (d->peer == peer) d->sender_failed = true;
    }
    for (auto* list : {&driven_, &waiting_}) {
        // Callbacks may add entries (a reposted receive matching another RTS): walk a copy
        // and keep what they added.
        std::vector<Tracked> old;
        old.swap(*list);
        for (const Tracked& t : old) {
            if (!t.live(worker_->pool())) continue;
            if (t.request->kind == core::RequestKind::kRecv && t.request->peer == peer) {
                release(t.request);
                worker_->complete(t.request, why);
            } else {
                list->push_back(t);
            }
        }
    }
}

void Rendezvous::sender_released(tl::AmSource src) {
    // Its sender index may now go to another process: an RTS it left unmatched can never be
    // served (nor may its address be read in whoever takes the index next).
    for (core::UnexpectedDesc* d : unexpected_rts_) {
        if (d->source.iface == src.iface && d->source.sender == src.sender) d->sender_failed = true;
    }
}

}  // namespace swy::proto::rndv
