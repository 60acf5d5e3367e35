// Target half of the one-sided message path: executes the puts, gets, atomics and flushes a
// peer sends, in the order they arrived, each validated against the key table
// (validate_access) before memory is touched.
//
// Replies to one peer leave in arrival order through one per-peer backlog: while anything
// waits there (no credit on the reply lane, or a large read going out packet by packet),
// later requests from that peer queue behind it, so that a get answered late never sees a
// put that arrived after it, and a flush ack never overtakes an earlier reply. A large read
// is not copied: its packets are read from the target memory as credits allow, the range
// re-validated before each (a mapping unmapped meanwhile is never read).
#include <cstring>

#include "common/log.h"
#include "core/worker.h"
#include "protocols/rma/rma_engine.h"
#include "protocols/rma/rma_state.h"
#include "protocols/wire.h"

namespace swy::rma {

namespace {

/// The CPU atomic @p op on @p word (the context's atomicity mode "cpu": every atomic on a
/// location is one of these, whoever runs it). @return the value before.
template <typename T>
T run_atomic(uint8_t op, T* word, T operand, T compare) {
    switch (op) {
        case SWY_ATOMIC_OP_ADD: return __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_AND: return __atomic_fetch_and(word, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_OR: return __atomic_fetch_or(word, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_XOR: return __atomic_fetch_xor(word, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_SWAP: return __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
        default: {  // CSWAP (validated before)
            T expected = compare;
            __atomic_compare_exchange_n(word, &expected, operand, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return expected;
        }
    }
}

}  // namespace

Engine::PeerState* Engine::peer_state(tl::AmSource src) {
    const uint32_t key = uint32_t{src.iface} << 16 | src.sender;
    std::unique_ptr<PeerState>& p = peers_[key];
    if (!p) {
        p = std::make_unique<PeerState>();
        p->src = src;
    }
    const uint64_t peer_key = worker_->peer_of(src).key;
    if (p->peer_key != peer_key) {
        // Another peer took the sender index: nothing of the old one's is owed to it.
        p->backlog.clear();
        p->first_error = Status::kOk;
        p->peer_key = peer_key;
    }
    return p.get();
}

void Engine::sender_released(tl::AmSource src) {
    auto it = peers_.find(uint32_t{src.iface} << 16 | src.sender);
    if (it == peers_.end()) return;
    it->second->backlog.clear();  // drain() uncounts it
    it->second->first_error = Status::kOk;
    it->second->peer_key = 0;
}

void Engine::remember_error(PeerState* p, Status why) {
    ++refused_;
    if (p->first_error == Status::kOk) p->first_error = why;
}

void Engine::enqueue(PeerState* p, Reply&& item) {
    if (p->backlog.empty() && run(p, item)) return;
    p->backlog.push_back(std::move(item));
    if (!p->counted) {
        p->counted = true;
        ++backlog_peers_;
    }
}

unsigned Engine::drain(PeerState* p) {
    unsigned n = 0;
    while (!p->backlog.empty()) {
        if (!run(p, p->backlog.front())) break;
        p->backlog.pop_front();
        ++n;
    }
    if (p->backlog.empty() && p->counted) {
        p->counted = false;
        --backlog_peers_;
    }
    return n;
}

// ------------------------------------------------------------------------------------------
// Requests as they arrive
// ------------------------------------------------------------------------------------------

void Engine::on_put(tl::AmSource src, const uint8_t* data, size_t length) {
    PeerState* p = peer_state(src);
    PutHeader h;
    if (!decode_request(data, length, &h)) {
        remember_error(p, Status::kMalformed);
        return;
    }
    const uint8_t* payload = data + sizeof(h);
    const size_t n = length - sizeof(h);
    if (p->backlog.empty()) {
        execute_put(p, h, payload, n);
        return;
    }
    // Behind replies still owed to this peer: keep the order, so keep the bytes (checked
    // first, so that a peer cannot make us hold what it may not write anyway).
    uint8_t* local = nullptr;
    const Status st =
        validate_access(worker_->context(), h.slot, h.secret, h.address, n, kAccessWrite, &local);
    if (st != Status::kOk) {
        remember_error(p, st);
        return;
    }
    Reply item;
    item.kind = Reply::Kind::kPut;
    item.put = h;
    item.bytes.assign(payload, payload + n);
    enqueue(p, std::move(item));
}

void Engine::execute_put(PeerState* p, const PutHeader& h, const uint8_t* payload, size_t length) {
    uint8_t* local = nullptr;
    const Status st = validate_access(worker_->context(), h.slot, h.secret, h.address, length,
                                      kAccessWrite, &local);
    if (st != Status::kOk) {
        remember_error(p, st);
        return;
    }
    if (length != 0) std::memcpy(local, payload, length);
}

void Engine::on_get(tl::AmSource src, const uint8_t* data, size_t length) {
    PeerState* p = peer_state(src);
    Reply item;
    item.kind = Reply::Kind::kGetData;
    if (!proto::read_header(data, length, &item.get)) {
        remember_error(p, Status::kMalformed);  // no request id to answer
        return;
    }
    item.request = item.get.request;
    if (item.get.version != kRmaWireVersion || length != sizeof(GetHeader)) {
        item.status = Status::kMalformed;
    }
    enqueue(p, std::move(item));
}

void Engine::on_atomic(tl::AmSource src, const uint8_t* data, size_t length) {
    PeerState* p = peer_state(src);
    Reply item;
    item.kind = Reply::Kind::kAtomic;
    if (!proto::read_header(data, length, &item.atomic)) {
        remember_error(p, Status::kMalformed);
        return;
    }
    item.request = item.atomic.request;
    if (item.atomic.version != kRmaWireVersion || length != sizeof(AtomicHeader) ||
        !valid_atomic(item.atomic.op, item.atomic.size) ||
        item.atomic.address % item.atomic.size != 0) {
        item.status = Status::kMalformed;
        item.executed = true;  // never executed
    }
    enqueue(p, std::move(item));
}

void Engine::on_flush(tl::AmSource src, const uint8_t* data, size_t length) {
    PeerState* p = peer_state(src);
    FlushHeader h;
    if (!decode_request(data, length, &h)) {
        remember_error(p, Status::kMalformed);
        return;
    }
    Reply item;
    item.kind = Reply::Kind::kFlushAck;
    item.request = h.id;
    enqueue(p, std::move(item));
}

// ------------------------------------------------------------------------------------------
// Executing and answering, in order
// ------------------------------------------------------------------------------------------

bool Engine::run(PeerState* p, Reply& item) {
    if (item.kind == Reply::Kind::kPut) {
        execute_put(p, item.put, item.bytes.data(), item.bytes.size());
        return true;
    }
    // Everything else answers: through the lane back to this very peer, or nowhere.
    const tl::AmSource src = p->src;
    tl::Interface* iface = worker_->interface(src.iface);
    tl::Endpoint* lane = iface != nullptr ? iface->reply_endpoint(src.sender) : nullptr;
    const bool peer_there = lane != nullptr && worker_->peer_of(src).key == p->peer_key;
    switch (item.kind) {
        case Reply::Kind::kAtomic: {
            if (!item.executed) {
                item.executed = true;
                const AtomicHeader& a = item.atomic;
                uint8_t* local = nullptr;
                item.status = validate_access(worker_->context(), a.slot, a.secret, a.address,
                                              a.size, kAccessAtomic, &local);
                if (item.status == Status::kOk &&
                    reinterpret_cast<uintptr_t>(local) % a.size != 0) {
                    item.status = Status::kInvalidParam;  // the mapping moved it off alignment
                }
                if (item.status == Status::kOk) {
                    if (a.size == 4) {
                        item.value = run_atomic<uint32_t>(a.op, reinterpret_cast<uint32_t*>(local),
                                                          static_cast<uint32_t>(a.operand),
                                                          static_cast<uint32_t>(a.compare));
                    } else {
                        item.value = run_atomic<uint64_t>(a.op, reinterpret_cast<uint64_t*>(local),
                                                          a.operand, a.compare);
                    }
                }
            }
            if (item.request == 0) {  // posted: its error waits for the next flush
                if (item.status != Status::kOk) remember_error(p, item.status);
                return true;
            }
            if (item.status != Status::kOk) ++refused_;
            if (!peer_there) return true;
            const AtomicReplyHeader h{.request = item.request,
                                      .value = item.value,
                                      .status = static_cast<int32_t>(item.status),
                                      .reserved = 0};
            return lane->am_send(proto::kAmRmaAtomicReply, &h, sizeof(h), nullptr, 0) !=
                   Status::kNoResource;
        }
        case Reply::Kind::kFlushAck: {
            if (!item.executed) {  // everything before it is done: take the news now
                item.executed = true;
                item.status = p->first_error;
                p->first_error = Status::kOk;
            }
            if (!peer_there) return true;
            const FlushAckHeader h{
                .id = item.request, .status = static_cast<int32_t>(item.status), .reserved = 0};
            return lane->am_send(proto::kAmRmaFlushAck, &h, sizeof(h), nullptr, 0) !=
                   Status::kNoResource;
        }
        case Reply::Kind::kGetData: {
            if (!peer_there) return true;
            const GetHeader& g = item.get;
            if (!item.executed && item.status == Status::kOk) {
                item.executed = true;
                uint8_t* local = nullptr;
                item.status = validate_access(worker_->context(), g.slot, g.secret, g.address,
                                              g.length, kAccessRead, &local);
            }
            const size_t max = lane->attr().max_message;
            if (max <= sizeof(GetReplyHeader)) item.status = Status::kUnsupported;
            while (item.status == Status::kOk && item.offset < g.length) {
                const size_t n =
                    std::min<uint64_t>(max - sizeof(GetReplyHeader), g.length - item.offset);
                uint8_t* local = nullptr;
                const Status st = validate_access(worker_->context(), g.slot, g.secret,
                                                  g.address + item.offset, n, kAccessRead, &local);
                if (st != Status::kOk) {
                    item.status = st;  // unmapped while the read went out
                    break;
                }
                const GetReplyHeader h{
                    .request = item.request, .offset = item.offset, .status = 0, .reserved = 0};
                const Status s = lane->am_send(proto::kAmRmaGetReply, &h, sizeof(h), local, n);
                if (s == Status::kNoResource) return false;
                if (s != Status::kOk) return true;  // the lane failed: nobody to answer
                item.offset += n;
            }
            if (item.status == Status::kOk) return true;
            ++refused_;
            const GetReplyHeader h{.request = item.request,
                                   .offset = 0,
                                   .status = static_cast<int32_t>(item.status),
                                   .reserved = 0};
            return lane->am_send(proto::kAmRmaGetReply, &h, sizeof(h), nullptr, 0) !=
                   Status::kNoResource;
        }
        case Reply::Kind::kPut: break;
    }
    return true;
}

// ------------------------------------------------------------------------------------------
// Placement straight from a byte stream (tcp)
// ------------------------------------------------------------------------------------------

size_t Engine::placement_header(tl::AmId id) {
    if (id == proto::kAmRmaPut) return sizeof(PutHeader);
    if (id == proto::kAmRmaGetReply) return sizeof(GetReplyHeader);
    return 0;
}

uint8_t* Engine::place_payload(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t done,
                               size_t length) {
    if (id == proto::kAmRmaPut) {
        PutHeader h;
        std::memcpy(&h, hdr, sizeof(h));
        if (h.version != kRmaWireVersion) return nullptr;
        PeerState* p = peer_state(src);
        // Behind queued replies a put must wait its turn: on_am() keeps its bytes.
        if (done == 0 && !p->backlog.empty()) return nullptr;
        uint8_t* local = nullptr;
        const Status st = validate_access(worker_->context(), h.slot, h.secret, h.address, length,
                                          kAccessWrite, &local);
        if (st != Status::kOk) {
            // Before the first byte, on_am() gets the message and reports it; later, the rest
            // is dropped and the flush reports it.
            if (done != 0) remember_error(p, st);
            return nullptr;
        }
        return local + done;
    }
    if (id == proto::kAmRmaGetReply) {
        GetReplyHeader h;
        std::memcpy(&h, hdr, sizeof(h));
        if (h.status != 0) return nullptr;
        Op* op = op_of_reply(src, h.request, static_cast<uint8_t>(OpKind::kGet), nullptr);
        if (op == nullptr || !op->view.contiguous()) return nullptr;
        const size_t total = op->view.length();
        if (h.offset > total || length > total - h.offset) return nullptr;
        return op->view.data() + h.offset + done;
    }
    return nullptr;
}

void Engine::on_am_placed(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t length) {
    placed_bytes_ += length;
    if (id != proto::kAmRmaGetReply) return;  // a put is done once its bytes are in place
    GetReplyHeader h;
    std::memcpy(&h, hdr, sizeof(h));
    Op* op = op_of_reply(src, h.request, static_cast<uint8_t>(OpKind::kGet), "placed get reply");
    if (op == nullptr) return;
    EpState* s = op->ep;
    op->done += length;
    if (op->done < op->view.length()) return;
    finish(op, Status::kOk);
    check_flushes(s);
    update_busy();
}

}  // namespace swy::rma
