// GET (rndv_get_cma, rndv_get_zcopy): the RTS carries the sender's address (and, on lanes
// with remote keys, the key of its registered buffer); the receiver reads it with get_zcopy
// and answers with an ATS, which completes the send. On a lane that copies in the call (CMA)
// the receiver pulls chunk by chunk from progress; on one that completes later (RDMA) the
// whole range is one operation and its callback ends the receive.
//
// Split GET (lanes without remote keys, messages from SWY_RNDV_SPLIT_MIN): once the first
// page came through (at once when the lane has already copied with this sender), the receiver
// asks the sender (a split RTR) to put the tail while it pulls the head, so two cores copy at
// once. The sender's FIN says its part is in; the ATS, sent only after the receiver's own pull
// and that FIN, completes the send, so the sender never completes while its put may still
// write into the receiver's buffer.
#include <algorithm>

#include "common/log.h"
#include "core/worker.h"
#include "protocols/rndv/rendezvous.h"
#include "protocols/rndv/stages.h"

namespace swy::proto::rndv {

using common::log_printf;
using common::LogLevel;
using core::Request;

namespace {

/// Split: both processes copy at once. Asked only after the first page came through, or once
/// the lane has copied with this sender before, so a refused pull never leaves a split behind.
void request_split(Rendezvous& rv, Request* r) {
    r->set_stage(GetStage::kPull);
    const size_t remaining = r->rndv_length - r->rndv_done;
    const size_t tail = (remaining / 2) & ~size_t{4095};
    if (tail < rv.split_min() / 2) return;
    r->set_stage(GetStage::kPullSplit);
    r->split_offset = r->rndv_length - tail;
    RtrHeader h{};
    h.sender_request = r->peer_request;
    h.receive_request = r->wire_id();
    h.address = reinterpret_cast<uint64_t>(r->recv_buffer + r->split_offset);
    h.length = tail;
    h.scheme = static_cast<uint32_t>(RndvScheme::kPut);
    h.status = static_cast<int32_t>(r->truncated ? Status::kMessageTruncated : Status::kOk);
    h.split = 1;
    h.offset = r->split_offset;
    r->rndv_length = r->split_offset;  // our share
    rv.wait_for_peer(r);
    rv.worker()->send_control(r->source, kAmRndvRtr, &h, sizeof(h));
}

/// Our head is pulled and the sender's FIN came: one ATS with the status of both parts.
void finish_split(Rendezvous& rv, Request* r, Status own_status) {
    const Status status = own_status != Status::kOk      ? own_status
                          : r->fin_status != Status::kOk ? r->fin_status
                          : r->truncated                 ? Status::kMessageTruncated
                                                         : Status::kOk;
    rv.send_ats(r, status);
    r->received = std::min<size_t>(r->info.length, r->capacity);
    rv.finish_receive(r, status);
}

/// An asynchronous read ended.
void on_read_done(void* arg, uint64_t cookie, Status status) {
    auto* worker = static_cast<core::Worker*>(arg);
    Request* r = worker->pool().find(cookie);
    if (r == nullptr || r->kind != core::RequestKind::kRecv || r->completed ||
        r->stage_as<GetStage>() != GetStage::kReading) {
        return;  // failed already
    }
    const Status final_status = status != Status::kOk ? status
                                : r->truncated        ? Status::kMessageTruncated
                                                      : Status::kOk;
    Rendezvous& rv = worker->rndv();
    rv.send_ats(r, final_status);
    r->received = status == Status::kOk ? r->rndv_length : 0;
    rv.finish_receive(r, final_status);
}

/// Receiver: pull by at most one budget. @return true when progress need not drive it more.
bool pull(Rendezvous& rv, Request* r) {
    tl::ZcopyLane* lane = rv.reply_zcopy(r);
    const tl::MemoryRegistration* reg = rv.registration(r);
    const tl::ZcopyCompletion done{on_read_done, nullptr, rv.worker(), r->wire_id()};
    size_t budget = kProgressBudget;
    Status s = lane == nullptr ? Status::kUnsupported : Status::kOk;
    while (s == Status::kOk && r->rndv_done < r->rndv_length && budget > 0) {
        size_t n = std::min(lane->max_zcopy(), r->rndv_length - r->rndv_done);
        if ((lane->caps() & tl::cap::kRemoteKeys) == 0) n = std::min(n, rv.get_chunk());
        // Before a split, one page only: it proves the lane works with this sender, and the
        // sender starts putting its share right after.
        if (r->stage_as<GetStage>() == GetStage::kProbe) n = std::min<size_t>(n, 4096);
        const GetStage before = r->stage_as<GetStage>();
        r->set_stage(GetStage::kReading);  // what a callback during the call must see
        s = lane->get_zcopy(r->recv_buffer + r->rndv_done, reg,
                            {r->remote_address + r->rndv_done, r->remote_key}, n, done);
        if (s == Status::kInProgress) {
            rv.wait_for_peer(r);  // failed with its peer meanwhile
            return true;
        }
        r->set_stage(before);
        if (s != Status::kOk) break;
        r->rndv_done += n;
        budget -= std::min(budget, n);
        if (before == GetStage::kProbe) request_split(rv, r);
    }
    const GetStage stage = r->stage_as<GetStage>();
    const bool split = stage == GetStage::kPullSplit || stage == GetStage::kPullSplitFin;
    if (s == Status::kUnsupported && r->rndv_done == 0 && !split) {
        // Ptrace policy (or a lane that cannot reach the sender) refused us: the sender pushes
        // the data through the lane instead.
        log_printf(LogLevel::kInfo, "rendezvous: zero-copy read refused, using the pipeline");
        rv.send_rtr(r, RndvScheme::kPipeline);
        return true;
    }
    if (s == Status::kOk && r->rndv_done < r->rndv_length) return false;
    if (split) {
        // Our share is pulled (or failed); the ATS waits for the sender's FIN, so the sender
        // never completes while its put may still write into our buffer.
        r->rndv_status = s;
        if (stage == GetStage::kPullSplitFin) {
            finish_split(rv, r, s);
        } else {
            r->set_stage(GetStage::kWaitFin);
        }
        return true;
    }
    const Status final_status =
        s != Status::kOk ? s : (r->truncated ? Status::kMessageTruncated : Status::kOk);
    rv.send_ats(r, final_status);
    r->received = r->rndv_done;
    rv.finish_receive(r, final_status);
    return true;
}

/// Sender of a split: put the tail, then the FIN. @return true when done driving.
bool push_tail(Rendezvous& rv, Request* r) {
    if (r->stage_as<GetStage>() == GetStage::kSplitPushing) {
        tl::ZcopyLane* lane = Rendezvous::send_zcopy(r);
        // A split RTR carries no key: only lanes without remote keys take one (else the
        // receiver pulls our part itself, as after any refusal).
        const Status s = lane == nullptr || (lane->caps() & tl::cap::kRemoteKeys) != 0
                             ? Status::kUnsupported
                             : put_range(rv, r);
        if (s == Status::kNoResource) return false;
        // Tell the receiver, whatever happened, so it never waits for a FIN: it then pulls
        // our part itself (kUnsupported) or fails.
        r->fin_status = s;
        r->set_stage(GetStage::kSplitFin);
    }
    Status lane_error = Status::kOk;
    if (rv.send_fin(r, &lane_error) == Status::kNoResource) return false;
    if (lane_error != Status::kOk) {
        rv.finish_send(r, lane_error);
        return true;
    }
    r->set_stage(GetStage::kSplitWaitAts);  // the receiver's ATS completes us
    return true;
}

}  // namespace

void get_start_receive(Rendezvous& rv, Request* r, tl::ZcopyLane* lane) {
    const uint32_t caps = lane != nullptr ? lane->caps() : 0;
    const bool keys = (caps & tl::cap::kRemoteKeys) != 0;
    // The RTS must fit the lane: a key where the lane needs one, none where it does not.
    bool usable = (caps & tl::cap::kGetZcopy) != 0 &&
                  keys == proto_info(static_cast<ProtoId>(r->proto)).remote_keys;
    // Memory the CPU (and so CMA) must not touch is reached only by registering it (a dma-buf
    // MR); otherwise the pipeline stages it with the memory type's copy.
    if (usable && !r->cpu_buffer && !keys) usable = false;
    std::string why = "no zero-copy lane to the sender";
    if (usable && keys &&
        rv.register_buffer(lane, r, r->recv_buffer, r->rndv_length, tl::kZcopyLocalWrite, &why) !=
            Status::kOk) {
        usable = false;
    }
    if (!usable) {
        // The sender can always push through the lane instead.
        log_printf(LogLevel::kInfo,
                   "rendezvous: zero-copy get not possible (%s); using the pipeline", why.c_str());
        rv.send_rtr(r, RndvScheme::kPipeline);
        return;
    }
    // A split needs its probe page first, unless the lane has already copied with this
    // sender: then ask for the split before our first pull, so the sender starts putting its
    // share at once (the probe was one more system call and a later start for the sender).
    const bool split = !keys && r->rndv_length >= rv.split_min();
    if (split && lane->proven()) {
        request_split(rv, r);
    } else {
        r->set_stage(split ? GetStage::kProbe : GetStage::kPull);
    }
    rv.drive(r);
}

void get_start_split_push(Rendezvous& rv, Request* r) {
    r->set_stage(GetStage::kSplitPushing);
    rv.drive(r);
}

void get_on_split_fin(Rendezvous& rv, Request* r, Status status) {
    if (status == Status::kUnsupported) {
        // The sender may not write into us: we pull its share too, as a plain GET.
        rv.stop_waiting(r);
        r->rndv_length = std::min<size_t>(r->info.length, r->capacity);
        if (r->stage_as<GetStage>() == GetStage::kWaitFin) rv.drive(r);  // our own pull was over
        r->set_stage(GetStage::kPull);
        return;
    }
    r->fin_status = status == Status::kMessageTruncated ? Status::kOk : status;
    if (r->stage_as<GetStage>() == GetStage::kWaitFin) {
        finish_split(rv, r, r->rndv_status);
    } else {
        r->set_stage(GetStage::kPullSplitFin);
    }
}

bool get_progress(Request* r) {
    Rendezvous& rv = r->worker->rndv();
    switch (r->stage_as<GetStage>()) {
        case GetStage::kProbe:
        case GetStage::kPull:
        case GetStage::kPullSplit:
        case GetStage::kPullSplitFin: return pull(rv, r);
        case GetStage::kSplitPushing:
        case GetStage::kSplitFin: return push_tail(rv, r);
        default: return true;  // waits for the peer: nothing to drive
    }
}

}  // namespace swy::proto::rndv
