// Initiator half of the one-sided message path: put, get, atomics, flush and fence become
// kAmRma* messages on the endpoint's lane, in start order; replies complete them. The target
// half (executing requests) is rma_target.cpp.
//
// Ordering rests on the lane being FIFO and the target answering each peer in arrival order:
// a flush sent after an op is answered after it, so "ack received and no older op still
// live" means every older op is complete at the target.
#include "protocols/rma/rma_engine.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "common/log.h"
#include "core/endpoint.h"
#include "core/worker.h"
#include "protocols/rma/rma_state.h"
#include "protocols/wire.h"

namespace swy::rma {

using core::Endpoint;
using core::Request;

namespace {

/// The fields of @p p its field_mask says were set; the rest default.
swy_request_params_t masked(const swy_request_params_t* p) {
    swy_request_params_t m{};
    if (p == nullptr) return m;
    m.field_mask = p->field_mask & (SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                                    SWY_REQ_PARAM_FIELD_USER_DATA);
    if ((p->field_mask & SWY_REQ_PARAM_FIELD_FLAGS) != 0) m.flags = p->flags;
    if ((p->field_mask & SWY_REQ_PARAM_FIELD_CALLBACK) != 0) m.send_cb = p->send_cb;
    if ((p->field_mask & SWY_REQ_PARAM_FIELD_USER_DATA) != 0) m.user_data = p->user_data;
    return m;
}

bool no_imm_complete(const swy_request_params_t* p) {
    return (masked(p).flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) != 0;
}

Status first_error(Status have, Status next) { return have != Status::kOk ? have : next; }

Status refuse_on_failed(const Endpoint* ep) {
    return ep->failure() == Status::kCanceled ? Status::kEndpointClosed : ep->failure();
}

struct PackArgs {
    dt::DataView* view;
    size_t offset;
};
Status pack_into_cell(void* arg, uint8_t* dst, size_t length) {
    auto* a = static_cast<PackArgs*>(arg);
    return a->view->pack(a->offset, dst, length) == length ? Status::kOk : Status::kInvalidParam;
}

}  // namespace

Engine::Engine(core::Worker* worker) : worker_(worker) {}

Engine::~Engine() {
    // The worker closed every endpoint first (endpoint_failed ended their ops); what is left
    // belongs to no request any more.
    for (auto& [ep, s] : eps_) {
        while (Op* op = s->head) {
            s->head = op->next;
            delete op;
        }
    }
    for (Op* op : free_ops_)
        delete op;
}

Engine::Op* Engine::alloc_op() {
    if (free_ops_.empty()) return new Op;
    Op* op = free_ops_.back();
    free_ops_.pop_back();
    return new (op) Op;  // the previous use was destroyed in release_op()
}

void Engine::release_op(Op* op) {
    op->~Op();
    free_ops_.push_back(op);
}

// ------------------------------------------------------------------------------------------
// Starting operations
// ------------------------------------------------------------------------------------------

Engine::EpState* Engine::ep_state(Endpoint* ep) {
    std::unique_ptr<EpState>& s = eps_[ep];
    if (!s) {
        s = std::make_unique<EpState>();
        s->ep = ep;
    }
    return s.get();
}

Engine::Op* Engine::new_op(EpState* s, uint8_t kind, const swy_request_params_t* params) {
    Op* op = alloc_op();
    op->kind = static_cast<OpKind>(kind);
    op->ep = s;
    op->seq = s->next_seq++;
    op->prev = s->tail;
    if (s->tail != nullptr) {
        s->tail->next = op;
    } else {
        s->head = op;
    }
    s->tail = op;
    const swy_request_params_t m = masked(params);
    Request* r = worker_->new_request(&m);
    r->kind = core::RequestKind::kRma;
    r->ep = s->ep;
    // On the endpoint's in-flight queue: the endpoint is not idle (a flush close waits) and
    // a failure that reaches it without us (it never does today) still completes it.
    s->ep->in_flight().push_back(r);
    r->queue = 2;
    op->request = r;
    if (r->index >= op_of_request_.size()) op_of_request_.resize(size_t{r->index} + 1, nullptr);
    op_of_request_[r->index] = op;
    return op;
}

Engine::Op* Engine::new_flush(EpState* s, Op* parent, bool with_request,
                              const swy_request_params_t* params) {
    Op* op = nullptr;
    if (with_request) {
        op = new_op(s, static_cast<uint8_t>(OpKind::kFlush), params);
    } else {
        op = alloc_op();
        op->kind = OpKind::kFlush;
        op->ep = s;
        op->seq = s->next_seq++;
        op->prev = s->tail;
        if (s->tail != nullptr) {
            s->tail->next = op;
        } else {
            s->head = op;
        }
        s->tail = op;
    }
    op->parent = parent;
    op->flush_id = next_flush_id_++;
    flushes_[op->flush_id] = op;
    return op;
}

void Engine::launch(Op* op) {
    EpState* s = op->ep;
    if (s->to_send.empty() && s->ep->wired()) {
        const Status st = push(op);
        if (st == Status::kOk) {
            sent(op);
            return;
        }
        if (st != Status::kNoResource) {
            finish(op, st);
            return;
        }
    }
    op->queued = true;
    s->to_send.push_back(op);
    if (!s->sending) {
        s->sending = true;
        ++sending_eps_;
    }
    update_busy();
}

Status Engine::start(Op* op, const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    Request* r = op->request;
    launch(op);  // may end op (and delete it): only r is used below
    if (r->completed) {
        const Status st = r->status;
        if (no_imm_complete(params)) {
            r->completed = false;
            r->user_owned = true;
            worker_->complete_later(r, st);
            *out = r;
            return Status::kInProgress;
        }
        worker_->pool().put(r);
        return st;
    }
    r->user_owned = true;
    *out = r;
    return Status::kInProgress;
}

Status Engine::immediate(Status st, const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (!no_imm_complete(params)) return st;
    const swy_request_params_t m = masked(params);
    Request* r = worker_->new_request(&m);
    r->kind = core::RequestKind::kRma;
    r->user_owned = true;
    worker_->complete_later(r, st);
    *out = r;
    return Status::kInProgress;
}

Status Engine::transfer(Endpoint* ep, uint8_t kind, const KeyIdentity& key, uint64_t address,
                        const void* buffer, size_t count, swy_datatype_t datatype,
                        const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (ep->failed()) return refuse_on_failed(ep);
    Op* op = new_op(ep_state(ep), kind, params);
    op->key = key;
    op->address = address;
    const bool for_pack = kind == static_cast<uint8_t>(OpKind::kPut);
    if (Status v = op->view.init(datatype, buffer, count, for_pack); v != Status::kOk) {
        Request* r = op->request;
        finish(op, v);
        worker_->pool().put(r);
        return v;
    }
    return start(op, params, out);
}

Status Engine::put(Endpoint* ep, const KeyIdentity& key, uint64_t address, const void* buffer,
                   size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
                   Request** out) {
    return transfer(ep, static_cast<uint8_t>(OpKind::kPut), key, address, buffer, count, datatype,
                    params, out);
}

Status Engine::get(Endpoint* ep, const KeyIdentity& key, uint64_t address, void* buffer,
                   size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
                   Request** out) {
    return transfer(ep, static_cast<uint8_t>(OpKind::kGet), key, address, buffer, count, datatype,
                    params, out);
}

Status Engine::atomic(Endpoint* ep, const KeyIdentity& key, uint64_t address, swy_atomic_op_t op,
                      size_t size, uint64_t operand, uint64_t compare, void* result,
                      const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (static_cast<unsigned>(op) > SWY_ATOMIC_OP_CSWAP || (size != 4 && size != 8) ||
        address % size != 0) {
        return Status::kInvalidParam;
    }
    if (ep->failed()) return refuse_on_failed(ep);
    Op* a = new_op(ep_state(ep), static_cast<uint8_t>(OpKind::kAtomic), params);
    a->key = key;
    a->address = address;
    a->atomic_op = static_cast<uint8_t>(op);
    a->size = static_cast<uint8_t>(size);
    const uint64_t mask = size == 8 ? ~uint64_t{0} : 0xffffffffull;
    a->operand = operand & mask;
    a->compare = compare & mask;
    a->result = result;
    return start(a, params, out);
}

bool Engine::unflushed(const EpState* s) {
    return s->head != nullptr || s->next_seq - 1 > s->remote_done_seq;
}

Status Engine::flush_ep(Endpoint* ep, const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (ep->failed()) return refuse_on_failed(ep);
    auto it = eps_.find(ep);
    if (it == eps_.end()) return immediate(Status::kOk, params, out);
    EpState* s = it->second.get();
    if (!unflushed(s)) {
        const Status st = s->pending_error;
        s->pending_error = Status::kOk;
        return immediate(st, params, out);
    }
    return start(new_flush(s, nullptr, true, params), params, out);
}

Status Engine::flush_worker(const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    Op* parent = alloc_op();
    parent->kind = OpKind::kWorkerFlush;
    parent->parts_left = 1;  // held until every part is launched
    // Operations on an endpoint that failed before a flush covered them may never have been
    // performed: this flush cannot say they were (endpoint_failed()).
    parent->status = lost_error_;
    lost_error_ = Status::kOk;
    std::vector<EpState*> states;
    for (auto& [ep, s] : eps_) {
        if (s->ep != nullptr && !s->ep->failed()) states.push_back(s.get());
    }
    for (EpState* s : states) {
        if (!unflushed(s)) {
            parent->status = first_error(parent->status, s->pending_error);
            s->pending_error = Status::kOk;
            continue;
        }
        ++parent->parts_left;
        launch(new_flush(s, parent, false, nullptr));
    }
    if (--parent->parts_left == 0) {
        const Status st = parent->status;
        release_op(parent);
        return immediate(st, params, out);
    }
    const swy_request_params_t m = masked(params);
    Request* r = worker_->new_request(&m);
    r->kind = core::RequestKind::kRma;
    r->user_owned = true;
    parent->request = r;
    *out = r;
    return Status::kInProgress;
}

void Engine::fence() {
    // Later message-path ops are ordered behind earlier ones by the lane itself; what a fence
    // must add is that direct operations (which bypass the lane) wait until the target has
    // executed everything started before: a flush of our own tells us when.
    scratch_eps_.clear();
    for (auto& [ep, s] : eps_) {
        if (s->ep != nullptr && !s->ep->failed()) scratch_eps_.push_back(s.get());
    }
    for (EpState* s : scratch_eps_) {
        const uint64_t last = s->next_seq - 1;
        if (last <= s->remote_done_seq || last <= s->fence_seq) continue;
        s->fence_seq = last;
        s->ep->rma_fence_pending = true;
        launch(new_flush(s, nullptr, false, nullptr));
    }
}

void Engine::record_error(Endpoint* ep, Status why) {
    if (ep->failed()) return;  // its state is gone; the failure is what it reports
    EpState* s = ep_state(ep);
    s->pending_error = first_error(s->pending_error, why);
}

// ------------------------------------------------------------------------------------------
// Sending
// ------------------------------------------------------------------------------------------

Status Engine::push(Op* op) {
    tl::Endpoint* lane = op->ep->ep->lane();
    if (lane == nullptr) return Status::kNoResource;  // not wired yet
    const size_t max = lane->attr().max_message;
    switch (op->kind) {
        case OpKind::kPut: {
            if (max <= sizeof(PutHeader)) return Status::kUnsupported;
            const size_t total = op->view.length();
            while (op->done < total) {
                const size_t n = std::min(max - sizeof(PutHeader), total - op->done);
                const PutHeader h{.secret = op->key.secret,
                                  .address = op->address + op->done,
                                  .slot = op->key.slot,
                                  .version = kRmaWireVersion,
                                  .reserved = {}};
                Status st;
                if (op->view.contiguous()) {
                    st = lane->am_send(proto::kAmRmaPut, &h, sizeof(h), op->view.data() + op->done,
                                       n);
                } else {
                    PackArgs a{&op->view, op->done};
                    st = lane->am_send_packed(proto::kAmRmaPut, &h, sizeof(h), pack_into_cell, &a,
                                              n);
                }
                if (st != Status::kOk) return st;
                op->done += n;
            }
            return Status::kOk;
        }
        case OpKind::kGet: {
            if (op->view.length() == 0) return Status::kOk;  // nothing to ask
            const GetHeader h{.secret = op->key.secret,
                              .address = op->address,
                              .length = op->view.length(),
                              .request = op->request->wire_id(),
                              .slot = op->key.slot,
                              .version = kRmaWireVersion,
                              .reserved = {}};
            return lane->am_send(proto::kAmRmaGet, &h, sizeof(h), nullptr, 0);
        }
        case OpKind::kAtomic: {
            const AtomicHeader h{.secret = op->key.secret,
                                 .address = op->address,
                                 .operand = op->operand,
                                 .compare = op->compare,
                                 .request = op->result != nullptr ? op->request->wire_id() : 0,
                                 .slot = op->key.slot,
                                 .version = kRmaWireVersion,
                                 .op = op->atomic_op,
                                 .size = op->size,
                                 .reserved = 0};
            return lane->am_send(proto::kAmRmaAtomic, &h, sizeof(h), nullptr, 0);
        }
        case OpKind::kFlush: {
            const FlushHeader h{.id = op->flush_id, .version = kRmaWireVersion, .reserved = {}};
            return lane->am_send(proto::kAmRmaFlush, &h, sizeof(h), nullptr, 0);
        }
        case OpKind::kWorkerFlush: break;
    }
    return Status::kInvalidParam;
}

void Engine::sent(Op* op) {
    op->request_sent = true;
    const bool waits_for_reply = (op->kind == OpKind::kGet && op->view.length() != 0) ||
                                 (op->kind == OpKind::kAtomic && op->result != nullptr) ||
                                 op->kind == OpKind::kFlush;
    if (!waits_for_reply) finish(op, Status::kOk);  // puts and posted atomics: local completion
}

void Engine::drive_sends(EpState* s) {
    while (s->ep != nullptr && s->ep->wired() && !s->to_send.empty()) {
        Op* op = s->to_send.front();
        const Status st = push(op);
        if (st == Status::kNoResource) return;
        s->to_send.pop_front();
        op->queued = false;
        if (st == Status::kOk) {
            sent(op);  // callbacks may queue more on s (kept alive until the next progress)
        } else {
            finish(op, st);
            check_flushes(s);
        }
    }
    if (s->to_send.empty() && s->sending) {
        s->sending = false;
        --sending_eps_;
    }
}

// ------------------------------------------------------------------------------------------
// Completion
// ------------------------------------------------------------------------------------------

void Engine::finish(Op* op, Status why) {
    EpState* s = op->ep;
    if (op->queued) {
        auto it = std::find(s->to_send.begin(), s->to_send.end(), op);
        if (it != s->to_send.end()) s->to_send.erase(it);
        op->queued = false;
    }
    if (s != nullptr) {
        if (op->prev != nullptr) {
            op->prev->next = op->next;
        } else {
            s->head = op->next;
        }
        if (op->next != nullptr) {
            op->next->prev = op->prev;
        } else {
            s->tail = op->prev;
        }
    }
    op->view.finish();
    if (op->kind == OpKind::kFlush) flushes_.erase(op->flush_id);
    Request* r = op->request;
    if (r != nullptr) op_of_request_[r->index] = nullptr;
    Op* parent = op->parent;
    release_op(op);
    // Callbacks last: they may start operations (or close the endpoint) from here.
    if (r != nullptr) worker_->complete(r, why);
    if (parent != nullptr) {
        parent->status = first_error(parent->status, why);
        if (--parent->parts_left == 0) {
            Request* pr = parent->request;
            const Status st = parent->status;
            release_op(parent);
            if (pr != nullptr) worker_->complete(pr, st);
        }
    }
}

void Engine::check_flushes(EpState* s) {
    // Restart after each completion: its callback may have changed the list.
    for (bool again = true; again;) {
        again = false;
        bool older_live = false;
        for (Op* op = s->head; op != nullptr; op = op->next) {
            if (op->kind != OpKind::kFlush) {
                older_live = true;
                continue;
            }
            if (!op->acked || older_live) continue;
            s->remote_done_seq = std::max(s->remote_done_seq, op->seq);
            if (s->ep != nullptr && s->fence_seq <= s->remote_done_seq) {
                s->ep->rma_fence_pending = false;
            }
            if (op->request == nullptr && op->parent == nullptr) {
                // A fence's flush: its news waits for the next flush the user sees.
                s->pending_error = first_error(s->pending_error, op->status);
                finish(op, Status::kOk);
            } else {
                const Status st = first_error(s->pending_error, op->status);
                s->pending_error = Status::kOk;
                finish(op, st);
            }
            again = true;
            break;
        }
    }
}

void Engine::endpoint_failed(Endpoint* ep, Status why) {
    auto it = eps_.find(ep);
    if (it == eps_.end()) return;
    EpState* s = it->second.get();
    // Operations no flush covered yet (puts and posted atomics complete locally) are lost
    // with the endpoint: the next worker flush reports it, never success, unless a flush the
    // user sees covers them all (the last op started) and fails below. A user's close
    // (kCanceled) takes the endpoint out of the worker: its operations are its own business.
    const bool told = s->tail != nullptr && s->tail->kind == OpKind::kFlush &&
                      (s->tail->request != nullptr || s->tail->parent != nullptr);
    if (why != Status::kCanceled && unflushed(s) && !told) {
        lost_error_ = first_error(lost_error_, why);
    }
    dead_eps_.push_back(std::move(it->second));
    eps_.erase(it);
    s->ep = nullptr;
    if (s->sending) {
        s->sending = false;
        --sending_eps_;
    }
    while (Op* op = s->head)
        finish(op, why);
    s->to_send.clear();
    update_busy();
}

void Engine::update_busy() {
    busy_ = sending_eps_ != 0 || backlog_peers_ != 0 || !dead_eps_.empty();
    if (busy_) worker_->note_side_work();
}

unsigned Engine::progress() {
    unsigned n = 0;
    dead_eps_.clear();  // no call that could hold one is running now
    if (sending_eps_ != 0) {
        scratch_eps_.clear();
        for (auto& [ep, s] : eps_) {
            if (s->sending) scratch_eps_.push_back(s.get());
        }
        for (EpState* s : scratch_eps_) {
            drive_sends(s);
            ++n;
        }
    }
    if (backlog_peers_ != 0) {
        scratch_peers_.clear();
        for (auto& [key, p] : peers_) {
            if (p->counted) scratch_peers_.push_back(p.get());
        }
        for (PeerState* p : scratch_peers_)
            n += drain(p);
    }
    update_busy();
    return n;
}

// ------------------------------------------------------------------------------------------
// Replies (initiator side)
// ------------------------------------------------------------------------------------------

void Engine::on_am(tl::AmId id, tl::AmSource src, const uint8_t* data, size_t length) {
    switch (id) {
        case proto::kAmRmaPut: on_put(src, data, length); break;
        case proto::kAmRmaGet: on_get(src, data, length); break;
        case proto::kAmRmaAtomic: on_atomic(src, data, length); break;
        case proto::kAmRmaFlush: on_flush(src, data, length); break;
        case proto::kAmRmaGetReply: on_get_reply(src, data, length); break;
        case proto::kAmRmaAtomicReply: on_atomic_reply(src, data, length); break;
        case proto::kAmRmaFlushAck: on_flush_ack(src, data, length); break;
        default: worker_->reject_control("one-sided message of unknown id"); break;
    }
    update_busy();
}

Engine::Op* Engine::op_of_reply(tl::AmSource src, uint64_t wire_id, uint8_t kind,
                                const char* what) {
    Request* r = worker_->pool().find(wire_id);
    Op* op = nullptr;
    if (r != nullptr && r->kind == core::RequestKind::kRma && r->index < op_of_request_.size()) {
        op = op_of_request_[r->index];
    }
    if (op == nullptr || op->kind != static_cast<OpKind>(kind) || !op->request_sent ||
        op->ep == nullptr || op->ep->ep == nullptr || op->ep->ep->peer() != worker_->peer_of(src)) {
        if (what != nullptr) worker_->reject_control(what);
        return nullptr;
    }
    return op;
}

void Engine::on_get_reply(tl::AmSource src, const uint8_t* data, size_t length) {
    GetReplyHeader h;
    if (!proto::read_header(data, length, &h)) {
        worker_->reject_control("truncated get reply");
        return;
    }
    Op* op = op_of_reply(src, h.request, static_cast<uint8_t>(OpKind::kGet), "get reply");
    if (op == nullptr) return;
    EpState* s = op->ep;
    const Status st = status_from_wire(h.status);
    const size_t n = length - sizeof(h);
    const size_t total = op->view.length();
    if (st != Status::kOk) {
        finish(op, st);
    } else if (h.offset > total || n > total - h.offset) {
        worker_->reject_control("get reply beyond the read");
        finish(op, Status::kMalformed);
    } else if (Status u = op->view.unpack(h.offset, data + sizeof(h), n); u != Status::kOk) {
        finish(op, u);
    } else {
        op->done += n;
        if (op->done < total) return;
        finish(op, Status::kOk);
    }
    check_flushes(s);
}

void Engine::on_atomic_reply(tl::AmSource src, const uint8_t* data, size_t length) {
    AtomicReplyHeader h;
    if (!proto::read_header(data, length, &h)) {
        worker_->reject_control("truncated atomic reply");
        return;
    }
    Op* op = op_of_reply(src, h.request, static_cast<uint8_t>(OpKind::kAtomic), "atomic reply");
    if (op == nullptr || op->result == nullptr) return;
    EpState* s = op->ep;
    const Status st = status_from_wire(h.status);
    if (st == Status::kOk) {
        if (op->size == 4) {
            const auto v = static_cast<uint32_t>(h.value);
            std::memcpy(op->result, &v, sizeof(v));
        } else {
            std::memcpy(op->result, &h.value, sizeof(h.value));
        }
    }
    finish(op, st);
    check_flushes(s);
}

void Engine::on_flush_ack(tl::AmSource src, const uint8_t* data, size_t length) {
    FlushAckHeader h;
    if (!proto::read_header(data, length, &h)) {
        worker_->reject_control("truncated flush ack");
        return;
    }
    auto it = flushes_.find(h.id);
    Op* op = it != flushes_.end() ? it->second : nullptr;
    if (op == nullptr || !op->request_sent || op->acked || op->ep == nullptr ||
        op->ep->ep == nullptr || op->ep->ep->peer() != worker_->peer_of(src)) {
        worker_->reject_control("flush ack");
        return;
    }
    op->acked = true;
    op->status = status_from_wire(h.status);
    check_flushes(op->ep);
}

}  // namespace swy::rma
