// Receive side of the worker: dispatch of active messages to the protocols (eager/, rndv/),
// memory types of receive buffers, unexpected-message memory, the identity checks of
// control messages, and the receives the application posts (tag_recv, probe, msg_recv).
#include <algorithm>
#include <cstring>
#include <new>

#include "common/log.h"
#include "core/worker.h"
#include "protocols/wire.h"

namespace swy::core {

using common::log_printf;
using common::LogLevel;

void Worker::on_am(tl::AmId id, tl::AmSource src, const uint8_t* data, size_t length) {
    // Most packets are single-packet eager messages: one compare and a tail call, before the
    // switch's range check and table jump.
    if (__builtin_expect(id == proto::kAmEagerOnly, 1))
        return eager_.on_only(src, data, length, false);
    switch (id) {
        case proto::kAmEagerSyncOnly: eager_.on_only(src, data, length, true); return;
        case proto::kAmEagerFirst: eager_.on_first(src, data, length); return;
        case proto::kAmEagerMiddle: eager_.on_middle(src, data, length); return;
        case proto::kAmSyncAck: eager_.on_ack(src, data, length); return;
        case proto::kAmRndvRts: rndv_.on_rts(src, data, length); return;
        case proto::kAmRndvAts: rndv_.on_ats(src, data, length); return;
        case proto::kAmRndvRtr: rndv_.on_rtr(src, data, length); return;
        case proto::kAmRndvFin: rndv_.on_fin(src, data, length); return;
        case proto::kAmRndvData: rndv_.on_data(src, data, length); return;
        case proto::kAmRmaPut:
        case proto::kAmRmaGet:
        case proto::kAmRmaGetReply:
        case proto::kAmRmaAtomic:
        case proto::kAmRmaAtomicReply:
        case proto::kAmRmaFlush:
        case proto::kAmRmaFlushAck: rma_.on_am(id, src, data, length); return;
        case proto::kAmUserEager: am_.on_eager(src, data, length); return;
        case proto::kAmUserRts: am_.on_rts(src, data, length); return;
        default:
            log_printf(LogLevel::kError, "dropping packet with unknown message id %u", id);
            return;
    }
}

Status Worker::resolve_memtype(const void* buffer, size_t length, swy_memtype_t stated,
                               mem::MemType* type, bool* cpu_buffer) const {
    const mem::MemTypeRegistry& memtypes = context_->memtypes();
    if (host_without_detection(stated)) {
        *type = mem::MemType::kHost;
        *cpu_buffer = true;
        return Status::kOk;
    }
    if (length == 0) {  // nothing will be touched
        *type =
            stated == SWY_MEMTYPE_UNKNOWN ? mem::MemType::kHost : static_cast<mem::MemType>(stated);
        *cpu_buffer = true;
        return Status::kOk;
    }
    mem::MemRange range;
    mem::MemType detected = memtypes.detect(buffer, length, &range);
    if (stated != SWY_MEMTYPE_UNKNOWN) {
        const auto want = static_cast<mem::MemType>(stated);
        if (static_cast<unsigned>(stated) >= mem::kMemTypeCount || !memtypes.loaded(want)) {
            log_printf(
                LogLevel::kError, "memory type %s is not loaded (SWY_MEMTYPES)",
                static_cast<unsigned>(stated) < mem::kMemTypeCount ? mem::memtype_name(want) : "?");
            return Status::kUnsupported;
        }
        // Checked up front (only for non-host types: a stated host skips detection), so that a
        // bad buffer is refused before a single fragment leaves, never halfway through.
        if (detected != want) {
            log_printf(LogLevel::kError, "buffer %p (%zu bytes) is %s, not %s memory as stated",
                       buffer, length,
                       detected == mem::MemType::kUnknown
                           ? "not inside one allocation of a known type"
                           : mem::memtype_name(detected),
                       mem::memtype_name(want));
            return Status::kInvalidParam;
        }
        *type = want;
        *cpu_buffer = range.cpu_accessible;
        return Status::kOk;
    }
    if (detected == mem::MemType::kUnknown) {
        log_printf(LogLevel::kError,
                   "cannot tell the memory type of buffer %p (%zu bytes); state it in "
                   "swy_request_params_t.memtype",
                   buffer, length);
        return Status::kInvalidParam;
    }
    *type = detected;
    *cpu_buffer = range.cpu_accessible;
    return Status::kOk;
}

Status Worker::copy_in_staged(Request* r, size_t offset, const uint8_t* src, size_t length) const {
    if (r->view != nullptr) return r->view->unpack(offset, src, length);
    if (length == 0) return Status::kOk;
    return context_->memtypes().copy_from_host(static_cast<mem::MemType>(r->memtype),
                                               r->recv_buffer + offset, src, length);
}

bool Worker::grow_unexpected(UnexpectedDesc* d, size_t need) {
    if (d->lost) return false;
    // Grow by doubling (bounded by the message) so a long message is copied O(1) times per
    // byte, while a header that announces gigabytes costs nothing until the bytes arrive.
    size_t grow = std::min(d->length, std::max(need, d->capacity * 2));
    if (d->account == nullptr) d->account = unexpected_account(d->source);
    size_t& peer_bytes = *d->account;
    const size_t extra = grow - d->capacity;
    bool fits =
        unexpected_bytes_ + extra <= unexpected_max_ && peer_bytes + extra <= unexpected_peer_max_;
    // A recycled descriptor's buffer may already be large enough: then nothing is allocated
    // (the caps are charged all the same).
    if (fits && grow > d->allocated) {
        // A message that a spare could hold gets room for all of it at once (no copy per
        // doubling, and the buffer can be parked afterwards); only grow is charged.
        const size_t want = d->length <= kSpareUnexpectedBytes ? d->length : grow;
        std::unique_ptr<uint8_t[]> bigger;
        size_t bytes = want;
        const auto spare = std::find_if(spare_unexpected_.begin(), spare_unexpected_.end(),
                                        [&](const SpareBuffer& b) { return b.bytes >= want; });
        if (spare != spare_unexpected_.end()) {
            bigger = std::move(spare->data);
            bytes = spare->bytes;
            spare_unexpected_.erase(spare);
        } else {
            bigger.reset(new (std::nothrow) uint8_t[want]);
        }
        if (bigger) {
            if (d->received != 0) std::memcpy(bigger.get(), d->data.get(), d->received);
            d->data = std::move(bigger);
            d->allocated = bytes;
        } else {
            fits = false;
        }
    }
    if (__builtin_expect(!fits, 0)) {
        ++unexpected_lost_;
        log_printf(LogLevel::kError,
                   "dropping an unexpected message of %zu bytes (tag %016llx): buffering it would "
                   "pass SWY_UNEXPECTED_MAX or SWY_UNEXPECTED_PEER_MAX (or memory ran out); the "
                   "receive that matches it fails with SWY_ERR_NO_RESOURCE",
                   d->length, static_cast<unsigned long long>(d->tag));
        release_unexpected(d);
        d->lost = true;
        return false;
    }
    d->capacity = grow;
    unexpected_bytes_ += extra;
    peer_bytes += extra;
    return true;
}

void Worker::park_unexpected_buffer(UnexpectedDesc* d) {
    if (d->allocated <= kSpareUnexpectedBytes &&
        spare_unexpected_.size() < kSpareUnexpectedBuffers) {
        spare_unexpected_.push_back({std::move(d->data), d->allocated});
    } else {
        d->data.reset();
    }
    d->allocated = 0;
}

void Worker::recycle_unexpected(UnexpectedDesc* d) {
    if (__builtin_expect(unexpected_free_.size() >= kKeptUnexpectedDescs, 0)) {
        delete d;
        return;
    }
    // Blank it for the next message, keeping its (small) buffer.
    std::unique_ptr<uint8_t[]> data = std::move(d->data);
    const size_t allocated = d->allocated;
    *d = UnexpectedDesc{};
    d->data = std::move(data);
    d->allocated = allocated;
    unexpected_free_.emplace_back(d);
}

Request* Worker::send_request_from(tl::AmSource src, uint64_t wire_id, const char* what) {
    Request* r = pool_.find(wire_id);
    if (r == nullptr || r->kind != RequestKind::kSend || r->ep == nullptr || !r->ep->wired() ||
        r->ep->peer() != peer_of(src)) {
        reject_control(what);
        return nullptr;
    }
    return r;
}

Request* Worker::receive_request_from(tl::AmSource src, uint64_t wire_id, const char* what) {
    Request* r = pool_.find(wire_id);
    if (r == nullptr || r->kind != RequestKind::kRecv || !r->matched || r->peer.key == 0 ||
        r->peer != peer_of(src)) {
        reject_control(what);
        return nullptr;
    }
    return r;
}

void Worker::reject_control(const char* what) {
    // Counted always, logged at a bounded rate: a peer must not be able to flood the log.
    ++rejected_controls_;
    if (rejected_controls_ <= 16 || (rejected_controls_ & (rejected_controls_ - 1)) == 0) {
        log_printf(LogLevel::kWarn,
                   "dropping a %s that names no request of the peer it came from (%llu so far)",
                   what, static_cast<unsigned long long>(rejected_controls_));
    }
}

// ------------------------------------------------------------------------------------------
// Receives posted by the application
// ------------------------------------------------------------------------------------------

void Worker::bind_unexpected(Request* r, UnexpectedDesc* d) {
    if (d->rndv) {
        rndv_.bind_unexpected(r, *d);
        recycle_unexpected(d);
        return;
    }
    eager_.bind_unexpected(r, d);
}

/// Shared tail of tag_recv and msg_recv: immediate completion or a handle for later.
static Status finish_receive(Worker* w, Request* r, const swy_request_params_t* params,
                             Request** out) {
    const uint32_t flags = request_params::flags(params);
    if (r->completed) {
        const Status s = r->status;
        if ((flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) != 0) {
            r->completed = false;
            r->user_owned = true;
            w->complete_later(r, s);
            *out = r;
            return Status::kInProgress;
        }
        if (swy_tag_recv_info_t* info = request_params::recv_info(params); info != nullptr) {
            *info = r->info;
        }
        w->pool().put(r);
        return s;
    }
    r->user_owned = true;
    *out = r;
    return Status::kInProgress;
}

Status Worker::describe_receive_buffer(Request* r, const swy_request_params_t* params) {
    if (const swy_datatype_t dt = stated_datatype(params);
        __builtin_expect(dt != SWY_DATATYPE_CONTIG, 0)) {
        // Non-contiguous: the buffer and count describe the data (an iov array, a generic
        // type's arguments); the receive holds its packed length and unpacks into the view.
        void* items = r->recv_buffer;
        r->recv_buffer = nullptr;
        Status s = attach_datatype(r, dt, items, r->capacity, false, stated_memtype(params));
        r->capacity = r->view != nullptr ? r->view->length() : 0;
        return s;
    }
    // Host buffers (stated, or nothing else loaded) need no work: the request says host.
    const swy_memtype_t stated = stated_memtype(params);
    if (host_without_detection(stated)) return Status::kOk;
    mem::MemType type = mem::MemType::kHost;
    bool cpu = true;
    Status s = resolve_memtype(r->recv_buffer, r->capacity, stated, &type, &cpu);
    r->memtype = static_cast<uint8_t>(type);
    r->cpu_buffer = cpu;
    return s;
}

/// A whole eager message whose bytes were kept: a receive can take it at once.
static bool whole_eager_message(const UnexpectedDesc& d) {
    return !d.rndv && !d.lost && d.received == d.length && d.reassembly_key == 0;
}

Status Worker::tag_recv_general(void* buffer, size_t length, uint64_t tag, uint64_t mask,
                                const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    const bool plain = stated_datatype(params) == SWY_DATATYPE_CONTIG &&
                       host_without_detection(stated_memtype(params));
    // A whole eager message already here, for a plain receive into host memory: copied at
    // once, and no request is made at all.
    if (plain && matcher_.unexpected_count() != 0 &&
        (request_params::flags(params) & SWY_REQ_FLAG_NO_IMM_COMPLETE) == 0) {
        proto::UnexpectedMessage* m = matcher_.match_unexpected(tag, mask, false);
        if (m != nullptr && whole_eager_message(*static_cast<UnexpectedDesc*>(m))) {
            matcher_.remove_unexpected(m);
            return eager_.receive_at_once(static_cast<UnexpectedDesc*>(m), buffer, length,
                                          request_params::recv_info(params));
        }
    }
    Request* r = new_request(params);
    set_receive(r, buffer, length, tag, mask);
    if (Status ms = describe_receive_buffer(r, params); ms != Status::kOk) {
        pool_.put(r);
        return ms;
    }
    proto::UnexpectedMessage* m =
        matcher_.unexpected_count() != 0 ? matcher_.match_unexpected(tag, mask, true) : nullptr;
    if (m != nullptr) {
        bind_unexpected(r, static_cast<UnexpectedDesc*>(m));
    } else {
        matcher_.post(r);
    }
    return finish_receive(this, r, params, out);
}

Status Worker::probe(uint64_t tag, uint64_t mask, bool remove, swy_tag_recv_info_t* info,
                     UnexpectedDesc** message) {
    proto::UnexpectedMessage* m = matcher_.match_unexpected(tag, mask, remove);
    if (m == nullptr) return Status::kNoMessage;
    auto* d = static_cast<UnexpectedDesc*>(m);
    if (info != nullptr) *info = {d->tag, d->length};
    if (remove) {
        d->probed_out = true;
        *message = d;
    }
    return Status::kOk;
}

Status Worker::msg_recv(void* buffer, size_t length, UnexpectedDesc* message,
                        const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    Request* r = new_request(params);
    r->kind = RequestKind::kRecv;
    r->recv_buffer = static_cast<uint8_t*>(buffer);
    r->capacity = length;
    if (Status ms = describe_receive_buffer(r, params); ms != Status::kOk) {
        pool_.put(r);
        return ms;
    }
    eager_.track_probed(message);
    bind_unexpected(r, message);
    return finish_receive(this, r, params, out);
}

}  // namespace swy::core
