#include "protocols/am/am_recv.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "common/log.h"
#include "core/request_params.h"
#include "core/worker.h"
#include "protocols/am/am_wire.h"

namespace swy::proto::am {

using common::log_printf;
using common::LogLevel;
using core::Request;
using core::UnexpectedDesc;

namespace {

/// Logged at a bounded rate (a peer must not be able to flood the log): the first 16, then
/// at powers of two.
bool worth_logging(uint64_t count) { return count <= 16 || (count & (count - 1)) == 0; }

}  // namespace

ActiveMessages::~ActiveMessages() {
    for (UnexpectedDesc* d : descs_) {
        worker_->rndv().forget_unexpected(d);
        delete d;
    }
}

Status ActiveMessages::set_handler(uint16_t id, swy_am_recv_cb_t cb, void* arg, uint32_t flags) {
    if ((flags & ~uint32_t{SWY_AM_HANDLER_FLAG_KEEP_DATA}) != 0) return Status::kInvalidParam;
    if (cb == nullptr) {
        if (id < handlers_.size()) handlers_[id] = Handler{};
        return Status::kOk;
    }
    if (id >= handlers_.size()) handlers_.resize(size_t{id} + 1);
    handlers_[id] = Handler{cb, arg, flags};
    return Status::kOk;
}

const ActiveMessages::Handler* ActiveMessages::handler(uint16_t id) {
    if (__builtin_expect(id < handlers_.size() && handlers_[id].cb != nullptr, 1)) {
        return &handlers_[id];
    }
    ++unknown_dropped_;
    if (worth_logging(unknown_dropped_)) {
        log_printf(LogLevel::kWarn,
                   "dropping an active message for id %u: no handler is set (%llu so far)", id,
                   static_cast<unsigned long long>(unknown_dropped_));
    }
    return nullptr;
}

swy_ep_h ActiveMessages::reply_ep(tl::AmSource src) {
    if (__builtin_expect(
            cached_valid_ && src.iface == cached_src_.iface && src.sender == cached_src_.sender,
            1)) {
        return cached_ep_;
    }
    const core::PeerRef peer = worker_->peer_of(src);
    const auto it = reply_eps_.find({peer.iface, peer.key});
    cached_ep_ = it != reply_eps_.end() ? it->second->handle() : nullptr;
    if (cached_ep_ == nullptr && peer.key != 0) {
        // An endpoint whose lane moved to this connection after it was wired (tcp: both
        // workers connected at once, one connection was kept): registered from now on.
        if (core::Endpoint* ep = worker_->wired_endpoint_of(peer)) {
            reply_eps_.emplace(std::make_pair(peer.iface, peer.key), ep);
            cached_ep_ = ep->handle();
        }
    }
    cached_src_ = src;
    cached_valid_ = true;
    return cached_ep_;
}

// ------------------------------------------------------------------------------------------
// Eager
// ------------------------------------------------------------------------------------------

void ActiveMessages::on_eager(tl::AmSource src, const uint8_t* data, size_t length) {
    AmEagerHeader h{};
    if (!read_header(data, length, &h) || h.version != kAmWireVersion ||
        h.header_length > SWY_AM_MAX_HEADER || h.header_length > length - sizeof(h)) {
        log_printf(LogLevel::kError, "dropping a malformed active message (%zu bytes)", length);
        return;
    }
    const Handler* found = handler(h.am_id);
    if (found == nullptr) return;
    const Handler hd = *found;  // the handler may change the table
    const uint8_t* header = data + sizeof(h);
    const uint8_t* payload = header + h.header_length;
    const size_t payload_length = length - sizeof(h) - h.header_length;
    swy_am_recv_param_t param{};
    param.field_mask = SWY_AM_RECV_PARAM_FIELD_FLAGS | SWY_AM_RECV_PARAM_FIELD_REPLY_EP;
    param.reply_ep = reply_ep(src);
    // The handler may keep the data: hand it over in memory of its own (without memory for
    // it, in place and not keepable).
    std::unique_ptr<uint8_t[]> copy;
    if (__builtin_expect((hd.flags & SWY_AM_HANDLER_FLAG_KEEP_DATA) != 0, 0)) {
        copy.reset(new (std::nothrow) uint8_t[std::max<size_t>(payload_length, 1)]);
    }
    if (__builtin_expect(copy == nullptr, 1)) {
        // In place: valid during the call (the lane's cell is reused after it).
        hd.cb(hd.arg, header, h.header_length, const_cast<uint8_t*>(payload), payload_length,
              &param);
        return;
    }
    param.flags = SWY_AM_RECV_FLAG_DATA_KEEPABLE;
    if (payload_length != 0) std::memcpy(copy.get(), payload, payload_length);
    void* kept = copy.get();
    if (hd.cb(hd.arg, header, h.header_length, kept, payload_length, &param) == SWY_INPROGRESS) {
        kept_.emplace(kept, std::move(copy));
    }
}

// ------------------------------------------------------------------------------------------
// Rendezvous
// ------------------------------------------------------------------------------------------

void ActiveMessages::on_rts(tl::AmSource src, const uint8_t* data, size_t length) {
    AmRtsHeader h{};
    if (!read_header(data, length, &h) || h.version != kAmWireVersion ||
        h.rts.scheme > kRndvSchemeMax || h.header_length > SWY_AM_MAX_HEADER ||
        h.header_length != length - sizeof(h)) {
        log_printf(LogLevel::kError, "dropping a malformed active-message RTS (%zu bytes)", length);
        return;
    }
    auto d = std::make_unique<UnexpectedDesc>();
    d->length = h.rts.total_length;
    d->received = h.rts.total_length;  // nothing to reassemble: the data waits at the sender
    d->rndv = true;
    d->rts = h.rts;
    d->rts.tag = 0;
    d->source = src;
    d->peer = worker_->peer_of(src);
    const Handler* found = handler(h.am_id);
    if (found == nullptr) return drop(d.release());  // the sender still completes
    const Handler hd = *found;
    UnexpectedDesc* desc = d.release();
    descs_.insert(desc);
    // Its sender's failure marks it, as for an unmatched tag RTS: recv_data then fails.
    worker_->rndv().track_unexpected(desc);
    swy_am_recv_param_t param{};
    param.field_mask = SWY_AM_RECV_PARAM_FIELD_FLAGS | SWY_AM_RECV_PARAM_FIELD_REPLY_EP;
    param.flags = SWY_AM_RECV_FLAG_RNDV;
    param.reply_ep = reply_ep(src);
    const swy_status_t st =
        hd.cb(hd.arg, data + sizeof(h), h.header_length, desc, h.rts.total_length, &param);
    // Received inside the handler (consumed), kept for later, or dropped. A handler cannot
    // make progress, so no other descriptor can have taken this address meanwhile.
    if (st != SWY_INPROGRESS && descs_.erase(desc) != 0) drop(desc);
}

void ActiveMessages::drop(UnexpectedDesc* d) {
    worker_->rndv().forget_unexpected(d);
    // The sender waits for the ATS (GET) or the RTR (PUT, pipeline): an ATS ends either, and
    // releases what it registered. Only over the lane the RTS came on, and only while that
    // still belongs to the sender.
    if (!d->sender_failed && worker_->peer_of(d->source) == d->peer) {
        const AckHeader ats{d->rts.sender_request, static_cast<int32_t>(Status::kOk), 0};
        worker_->send_control(d->source, kAmRndvAts, &ats, sizeof(ats));
    }
    delete d;
}

Status ActiveMessages::recv_data(void* desc, void* buffer, size_t count,
                                 const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    auto* d = static_cast<UnexpectedDesc*>(desc);
    if (descs_.count(d) == 0) {
        log_printf(LogLevel::kError,
                   "swy_am_recv_data_nb: %p is no rendezvous descriptor this worker holds", desc);
        return Status::kInvalidParam;
    }
    const uint32_t flags = core::request_params::flags(params);
    Request* r = worker_->new_request(params);  // flags, callback, user data by their bits
    r->kind = core::RequestKind::kRecv;
    r->recv_buffer = static_cast<uint8_t*>(buffer);
    r->capacity = count;
    // Its memory type, or for iov/generic data its view (then the sender's data comes through
    // the pipeline and is unpacked fragment by fragment, as for a tag receive).
    Status ms = worker_->describe_receive_buffer(r, params);
    if (ms == Status::kOk && r->view == nullptr &&
        (r->memtype != static_cast<uint8_t>(mem::MemType::kHost) || !r->cpu_buffer)) {
        ms = Status::kUnsupported;  // host memory only (the descriptor stays the caller's)
    }
    if (ms != Status::kOk) {
        worker_->pool().put(r);
        return ms;
    }
    descs_.erase(d);
    // As a matched tag receive is bound to an unexpected RTS: the protocol the sender chose
    // moves the data (zero-copy where the lane allows), truncated to the buffer; a sender that
    // died meanwhile fails it with kConnectionReset.
    worker_->rndv().bind_unexpected(r, *d);
    delete d;
    if (r->completed) {
        const Status s = r->status;
        if ((flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) != 0) {
            r->completed = false;
            r->user_owned = true;
            worker_->complete_later(r, s);
            *out = r;
            return Status::kInProgress;
        }
        if (swy_tag_recv_info_t* info = core::request_params::recv_info(params)) *info = r->info;
        worker_->pool().put(r);
        return s;
    }
    r->user_owned = true;
    *out = r;
    return Status::kInProgress;
}

bool ActiveMessages::release(void* data) {
    if (const auto it = kept_.find(data); it != kept_.end()) {
        kept_.erase(it);
        return true;
    }
    auto* d = static_cast<UnexpectedDesc*>(data);
    if (descs_.erase(d) != 0) {
        drop(d);
        return true;
    }
    log_printf(LogLevel::kError,
               "swy_am_data_release: %p is neither kept data nor a descriptor of this worker",
               data);
    return false;
}

// ------------------------------------------------------------------------------------------
// Reply endpoints
// ------------------------------------------------------------------------------------------

void ActiveMessages::endpoint_wired(core::Endpoint* ep) {
    const core::PeerRef peer = ep->peer();
    if (peer.key == 0) return;
    reply_eps_.emplace(std::make_pair(peer.iface, peer.key), ep);  // the first one stays
    cached_valid_ = false;
}

void ActiveMessages::endpoint_closed(core::Endpoint* ep, core::Endpoint* others) {
    if (!ep->wired()) return;
    const core::PeerRef peer = ep->peer();
    const auto it = reply_eps_.find({peer.iface, peer.key});
    if (it == reply_eps_.end() || it->second != ep) return;
    reply_eps_.erase(it);
    cached_valid_ = false;
    for (core::Endpoint* e = others; e != nullptr; e = e->next_in_worker) {
        if (e != ep && !e->closed && e->wired() && e->peer() == peer) {
            reply_eps_.emplace(std::make_pair(peer.iface, peer.key), e);
            return;
        }
    }
}

}  // namespace swy::proto::am
