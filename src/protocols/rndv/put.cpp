// PUT (rndv_put_cma, rndv_put_zcopy): the receiver's RTR carries its buffer's address (and,
// on lanes with remote keys, the key of its registration); the sender writes it with
// put_zcopy, then sends a FIN that arrives after the data (CMA: the copy is done when the
// call returns; RDMA: the FIN is posted on the same RC queue right behind the WRITE). The FIN
// ends the receive; the send ends when the FIN is out and our buffer is no longer read.
//
// On lanes with remote keys the sender registers its buffer right after the RTS went out, off
// the receiver's critical path; if that fails the data goes through the lane as pipeline
// fragments into the receiver's buffer, which the receiver takes in its PUT stage too.
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

bool is_put_send(const Request* r) {
    return r->kind == core::RequestKind::kSend && !r->completed &&
           proto_info(static_cast<ProtoId>(r->proto)).zcopy == ZcopyNeed::kPut;
}

/// Every part of an asynchronous put is handed to the lane: a FIN sent now arrives after the
/// data, so it need not wait for the put's completion.
void on_put_posted(void* arg, uint64_t cookie, Status /*status*/) {
    auto* worker = static_cast<core::Worker*>(arg);
    Request* r = worker->pool().find(cookie);
    if (r == nullptr || !is_put_send(r) || r->stage_as<PutStage>() != PutStage::kWriting) return;
    Rendezvous& rv = worker->rndv();
    r->rndv_done = r->rndv_length;
    r->fin_status = Status::kOk;
    Status lane_error = Status::kOk;
    if (rv.send_fin(r, &lane_error) == Status::kNoResource) {
        // No credit or send-queue slot now: retried from progress, still behind the put.
        r->set_stage(PutStage::kFinPendingWriting);
        rv.drive(r);
        return;
    }
    if (lane_error != Status::kOk) r->rndv_status = lane_error;
    r->set_stage(PutStage::kFinSentWriting);
}

/// An asynchronous put completed: our buffer is no longer read.
void on_put_done(void* arg, uint64_t cookie, Status status) {
    auto* worker = static_cast<core::Worker*>(arg);
    Request* r = worker->pool().find(cookie);
    if (r == nullptr || !is_put_send(r)) return;
    Rendezvous& rv = worker->rndv();
    rv.release(r);  // drop the registration before the send can complete
    switch (r->stage_as<PutStage>()) {
        case PutStage::kWriting:
            // Failed before every part was posted, so no FIN went out: tell the receiver (if
            // the lane still carries anything) so it never waits for one.
            r->fin_status = status != Status::kOk ? status : Status::kIoError;
            r->rndv_done = r->rndv_length;
            r->set_stage(PutStage::kFinPending);
            rv.drive(r);
            return;
        case PutStage::kFinPendingWriting:
            // A failed put moved the lane to an error state, so the FIN behind it never
            // arrives: the receiver fails with the connection. One still waiting says so too.
            if (status != Status::kOk) r->rndv_status = r->fin_status = status;
            r->set_stage(PutStage::kFinPending);  // progress completes it once the FIN is out
            return;
        case PutStage::kFinSentWriting:
            if (status != Status::kOk) r->rndv_status = status;
            rv.finish_send(r, r->rndv_status);
            return;
        default: return;
    }
}

/// Sender: FIN still to go. @return true when done driving.
bool send_pending_fin(Rendezvous& rv, Request* r) {
    Status lane_error = Status::kOk;
    if (rv.send_fin(r, &lane_error) == Status::kNoResource) return false;
    if (r->stage_as<PutStage>() == PutStage::kFinPendingWriting) {
        // The send ends when the put completed (on_put_done): the lane reads our buffer until
        // then, and our registration must outlive that.
        if (lane_error != Status::kOk) r->rndv_status = lane_error;
        r->set_stage(PutStage::kFinSentWriting);
        return true;
    }
    const Status own = lane_error != Status::kOk ? lane_error : r->fin_status;
    rv.finish_send(r, own != Status::kOk ? own : r->rndv_status);
    return true;
}

}  // namespace

Status put_range(Rendezvous& rv, Request* r) {
    tl::ZcopyLane* lane = Rendezvous::send_zcopy(r);
    // No lane that reaches the receiver (tcp, or a probe that failed): refused like a ptrace
    // refusal, and the receiver learns it from the FIN.
    if (lane == nullptr || (lane->caps() & tl::cap::kPutZcopy) == 0) return Status::kUnsupported;
    const tl::MemoryRegistration* reg = rv.registration(r);
    const tl::ZcopyCompletion completion{on_put_done, on_put_posted, rv.worker(), r->wire_id()};
    size_t budget = kProgressBudget;
    while (r->rndv_done < r->rndv_length && budget > 0) {
        const size_t n = std::min(lane->max_zcopy(), r->rndv_length - r->rndv_done);
        const Status s =
            lane->put_zcopy(r->send_buffer + r->rndv_offset + r->rndv_done, reg,
                            {r->remote_address + r->rndv_done, r->remote_key}, n, completion);
        if (s != Status::kOk) return s;  // kInProgress: the callbacks take over
        r->rndv_done += n;
        budget -= std::min(budget, n);
    }
    return r->rndv_done == r->rndv_length ? Status::kOk : Status::kNoResource;
}

void put_register_source(Rendezvous& rv, Request* r) {
    tl::ZcopyLane* lane = Rendezvous::send_zcopy(r);
    if (lane == nullptr) return;  // put_start_push pushes through the lane
    rv.release(r);                // sweep finished transfers first
    std::string why;
    if (rv.register_buffer(lane, r, r->send_buffer, r->length, tl::kZcopyLocal, &why) !=
        Status::kOk) {
        // The RTS already asked for a put with keys: the receiver will answer with its key,
        // and we push the data through the lane into its buffer instead (put_start_push).
        log_printf(LogLevel::kInfo,
                   "rendezvous: %s; the put's data will be pushed through the lane", why.c_str());
    }
}

void put_start_receive(Rendezvous& rv, Request* r, tl::ZcopyLane* lane) {
    const uint32_t caps = lane != nullptr ? lane->caps() : 0;
    const bool keys = (caps & tl::cap::kRemoteKeys) != 0;
    // Where the sender's lane can write into us (our lane to it says the same), and with a key
    // exactly where the RTS expects one.
    bool usable = (caps & tl::cap::kPutZcopy) != 0 &&
                  keys == proto_info(static_cast<ProtoId>(r->proto)).remote_keys;
    if (usable && !r->cpu_buffer && !keys) usable = false;  // CMA must not touch it
    std::string why = "no zero-copy lane to the sender";
    if (usable && keys &&
        rv.register_buffer(lane, r, r->recv_buffer, r->rndv_length, tl::kZcopyRemoteWrite, &why) !=
            Status::kOk) {
        usable = false;
    }
    if (!usable) {
        if (keys || lane != nullptr) {
            log_printf(LogLevel::kInfo,
                       "rendezvous: zero-copy put not possible (%s); using the pipeline",
                       why.c_str());
        }
        rv.send_rtr(r, RndvScheme::kPipeline);
        return;
    }
    const tl::MemoryRegistration* reg = rv.registration(r);
    rv.send_rtr(r, keys ? RndvScheme::kPutKeyed : RndvScheme::kPut,
                reg != nullptr ? reg->rkey() : 0);
}

void put_start_push(Rendezvous& rv, Request* r) {
    tl::ZcopyLane* lane = Rendezvous::send_zcopy(r);
    if (lane != nullptr && (lane->caps() & tl::cap::kRemoteKeys) != 0 && r->rndv_length != 0 &&
        rv.registration(r) == nullptr) {
        // Our registration failed after the RTS went out. The receiver's buffer is ready for
        // the data either way: push it through the lane as pipeline fragments, which the
        // receiver places by offset and completes on.
        r->proto = static_cast<uint8_t>(ProtoId::kRndvPipeline);
        pipeline_start_push(rv, r);
        return;
    }
    r->set_stage(PutStage::kPushing);
    rv.drive(r);
}

bool put_progress(Request* r) {
    Rendezvous& rv = r->worker->rndv();
    switch (r->stage_as<PutStage>()) {
        case PutStage::kPushing: {
            r->set_stage(PutStage::kWriting);  // what a callback during the call must see
            const Status s = put_range(rv, r);
            if (s == Status::kInProgress) return true;  // the callbacks take over
            if (s == Status::kNoResource) {
                r->set_stage(PutStage::kPushing);
                return false;
            }
            // Moved, or failed: tell the receiver, whatever happened, so it never waits.
            r->fin_status = s;
            r->set_stage(PutStage::kFinPending);
            return send_pending_fin(rv, r);
        }
        case PutStage::kFinPending:
        case PutStage::kFinPendingWriting: return send_pending_fin(rv, r);
        default: return true;  // waits for the peer or for a callback
    }
}

}  // namespace swy::proto::rndv
