#include "protocols/eager/eager_recv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "core/worker.h"
#include "protocols/protocol.h"
#include "protocols/wire.h"

namespace swy::proto::eager {

using common::log_printf;
using common::LogLevel;
using core::Request;
using core::UnexpectedDesc;

namespace {

void malformed(const char* what, size_t length) {
    log_printf(LogLevel::kError, "dropping malformed %s packet (%zu bytes)", what, length);
}

}  // namespace

void EagerReceiver::free_probed() {
    // An incomplete unexpected message is also in the matcher (freed by the worker) unless a
    // matched probe took it out.
    for (auto& [key, e] : reassembly_) {
        if (e.desc != nullptr && e.desc->probed_out) delete e.desc;
    }
    reassembly_.clear();
}

// Inline: only this file calls it, once per eager message.
inline void EagerReceiver::deliver(Request* r, uint64_t tag, size_t total, const uint8_t* payload,
                                   size_t length) {
    r->matched = true;
    r->info.sender_tag = tag;
    r->info.length = total;
    r->truncated = total > r->capacity;
    const size_t n = std::min(length, r->capacity);
    if (worker_->copy_in(r, 0, payload, n) != Status::kOk) r->copy_failed = true;
    r->received = length;
}

void EagerReceiver::send_sync_ack(tl::AmSource src, uint64_t sender_request, Status status) {
    AckHeader ack{sender_request, static_cast<int32_t>(status), 0};
    worker_->send_control(src, kAmSyncAck, &ack, sizeof(ack));
}

void EagerReceiver::on_only(tl::AmSource src, const uint8_t* data, size_t length, bool sync) {
    // Every call from here is a tail call, so this path saves no registers: the lists of
    // posted receives (out of line) and an unexpected message go down on_only_general(),
    // which asks the matcher again (a lone receive that did not accept the tag stays posted).
    TagMatcher& matcher = worker_->matcher();
    if (__builtin_expect(sync || length < sizeof(EagerOnlyHeader) || !matcher.has_solo(), 0)) {
        return on_only_general(src, data, length, sync);
    }
    uint64_t tag;
    std::memcpy(&tag, data, sizeof(tag));
    const uint8_t* payload = data + sizeof(EagerOnlyHeader);
    const size_t size = length - sizeof(EagerOnlyHeader);
    PostedReceive* p = matcher.match_solo(tag);
    if (__builtin_expect(p == nullptr, 0)) return on_only_general(src, data, length, false);
    auto* r = static_cast<Request*>(p);
    // What deliver() and Worker::complete() do for this case, with every store before the
    // copy: the copy is then the last thing (a tail call where it goes to libc), and this
    // path saves no registers. Worker::complete()'s inline case (completes_by_itself()).
    if (__builtin_expect(!r->cpu_buffer || !r->completes_by_itself() || r->completed, 0)) {
        return deliver_and_complete(r, tag, payload, size);
    }
    const bool truncated = size > r->capacity;
    r->matched = true;
    r->info.sender_tag = tag;
    r->info.length = size;
    r->truncated = truncated;
    r->received = size;
    r->status = truncated ? Status::kMessageTruncated : Status::kOk;
    r->completed = true;
    // Only hot fields written since try_post_receive() posted it: its next reset() may skip
    // the cold part (Request::cold_clean).
    r->cold_clean = r->posted_alone;
    common::copy_bytes(r->recv_buffer, payload, truncated ? r->capacity : size);
}

void EagerReceiver::deliver_and_complete(Request* r, uint64_t tag, const uint8_t* payload,
                                         size_t size) {
    deliver(r, tag, size, payload, size);
    worker_->complete(r, r->receive_status());
}

void EagerReceiver::on_only_general(tl::AmSource src, const uint8_t* data, size_t length,
                                    bool sync) {
    uint64_t tag = 0;
    uint64_t sender_request = 0;
    const size_t header = sync ? sizeof(EagerSyncHeader) : sizeof(EagerOnlyHeader);
    if (length < header) return malformed("eager", length);
    std::memcpy(&tag, data, sizeof(tag));
    if (sync) std::memcpy(&sender_request, data + 8, sizeof(sender_request));
    const uint8_t* payload = data + header;
    const size_t size = length - header;

    if (PostedReceive* p = worker_->matcher().match_posted(tag)) {
        auto* r = static_cast<Request*>(p);
        deliver(r, tag, size, payload, size);
        if (sync) send_sync_ack(src, sender_request);
        worker_->complete(r, r->receive_status());
        return;
    }
    on_only_unexpected(src, tag, sender_request, sync, payload, size);
}

void EagerReceiver::on_only_unexpected(tl::AmSource src, uint64_t tag, uint64_t sender_request,
                                       bool sync, const uint8_t* payload, size_t size) {
    UnexpectedDesc* d = worker_->new_unexpected();
    d->tag = tag;
    d->length = size;
    d->sync = sync;
    d->sender_request = sender_request;
    d->source = src;
    if (size != 0 && worker_->reserve_unexpected(d, size)) {
        common::copy_bytes(d->data.get(), payload, size);
    }
    d->received = size;
    worker_->matcher().add_unexpected(d);
}

void EagerReceiver::on_first(tl::AmSource src, const uint8_t* data, size_t length) {
    EagerFirstHeader h{};
    if (!read_header(data, length, &h)) return malformed("first fragment", length);
    const uint8_t* payload = data + sizeof(h);
    const size_t size = length - sizeof(h);
    const uint64_t key = reassembly_key(src, h.message_id);
    // No machine buffers half a terabyte: a larger total is a corrupt header, not a message.
    constexpr uint64_t kMaxEagerMessage = uint64_t{1} << 39;
    if (size > h.total_length || h.total_length > kMaxEagerMessage || reassembly_.count(key) != 0) {
        return malformed("first fragment (length or duplicate id)", length);
    }
    const bool sync = (h.flags & kEagerFlagSync) != 0;
    Reassembly entry;
    entry.peer = worker_->peer_of(src);
    entry.total = h.total_length;
    entry.received = size;

    if (PostedReceive* p = worker_->matcher().match_posted(h.tag)) {
        auto* r = static_cast<Request*>(p);
        deliver(r, h.tag, h.total_length, payload, size);
        if (sync) send_sync_ack(src, h.sender_request);
        if (size == h.total_length) {
            worker_->complete(r, r->receive_status());
            return;
        }
        entry.request = r;
        reassembly_.emplace(key, entry);
        return;
    }
    UnexpectedDesc* d = worker_->new_unexpected();
    d->tag = h.tag;
    d->length = h.total_length;
    d->sync = sync;
    d->sender_request = h.sender_request;
    d->source = src;
    // Only what arrived is buffered (a first fragment may announce far more than it brings).
    if (size != 0 && worker_->reserve_unexpected(d, size)) {
        std::memcpy(d->data.get(), payload, size);
    }
    d->received = size;
    d->reassembly_key = size == h.total_length ? 0 : key;
    worker_->matcher().add_unexpected(d);
    if (d->reassembly_key != 0) {
        entry.desc = d;
        reassembly_.emplace(key, entry);
    }
}

void EagerReceiver::on_middle(tl::AmSource src, const uint8_t* data, size_t length) {
    EagerMiddleHeader h{};
    if (!read_header(data, length, &h)) return malformed("fragment", length);
    const uint8_t* payload = data + sizeof(h);
    const size_t size = length - sizeof(h);
    auto it = reassembly_.find(reassembly_key(src, h.message_id));
    if (it == reassembly_.end()) return malformed("fragment of an unknown message", length);
    Reassembly& e = it->second;
    if (h.offset != e.received || size > e.total - e.received) {
        return malformed("fragment (offset out of sequence)", length);
    }
    if (Request* r = e.request) {
        if (h.offset < r->capacity &&
            worker_->copy_in(r, h.offset, payload, std::min(size, r->capacity - h.offset)) !=
                Status::kOk) {
            r->copy_failed = true;
        }
        e.received += size;
        r->received = e.received;
        if (e.received == e.total) {
            reassembly_.erase(it);
            worker_->complete(r, r->receive_status());
        }
        return;
    }
    UnexpectedDesc* d = e.desc;
    if (d == nullptr) {  // a lost message whose receive already failed
        e.received += size;
        if (e.received == e.total) reassembly_.erase(it);
        return;
    }
    // A lost message still takes its fragments (to keep the stream in step), but keeps none.
    if (worker_->reserve_unexpected(d, h.offset + size)) {
        std::memcpy(d->data.get() + h.offset, payload, size);
    }
    e.received += size;
    d->received = e.received;
    if (e.received == e.total) {
        d->reassembly_key = 0;
        reassembly_.erase(it);
    }
}

void EagerReceiver::on_ack(tl::AmSource src, const uint8_t* data, size_t length) {
    AckHeader h{};
    if (!read_header(data, length, &h)) return malformed("ack", length);
    Request* r = worker_->send_request_from(src, h.sender_request, "sync ack");
    if (r == nullptr) return;
    if (is_rendezvous(static_cast<ProtoId>(r->proto))) {
        return worker_->reject_control("sync ack for a rendezvous send");
    }
    if (r->remote_done) {
        log_printf(LogLevel::kDebug, "ignoring an ack for a finished send");
        return;
    }
    r->remote_done = true;
    if (r->local_done) worker_->complete(r, status_from_wire(h.status));
}

void EagerReceiver::bind_unexpected(Request* r, UnexpectedDesc* d) {
    r->matched = true;
    r->info.sender_tag = d->tag;
    r->info.length = d->length;
    r->truncated = d->length > r->capacity;
    if (d->lost) {
        // Matched in its place, so order is kept; its bytes were never kept.
        if (d->sync) send_sync_ack(d->source, d->sender_request, Status::kNoResource);
        // The rest of its fragments still arrive: the entry stays, with no owner, and
        // swallows them.
        if (d->reassembly_key != 0) reassembly_[d->reassembly_key].desc = nullptr;
        worker_->complete(r, Status::kNoResource);
        worker_->recycle_unexpected(d);
        return;
    }
    const size_t n = std::min(d->received, r->capacity);
    if (n != 0 && worker_->copy_in(r, 0, d->data.get(), n) != Status::kOk) r->copy_failed = true;
    r->received = d->received;
    worker_->release_unexpected(d);
    if (d->sync) send_sync_ack(d->source, d->sender_request);
    if (d->received == d->length) {
        worker_->complete(r, r->receive_status());
    } else if (d->reassembly_key == 0) {
        worker_->complete(r, Status::kConnectionReset);  // its sender died before finishing it
    } else {
        Reassembly& e = reassembly_[d->reassembly_key];
        e.request = r;
        e.desc = nullptr;
    }
    worker_->recycle_unexpected(d);
}

Status EagerReceiver::receive_at_once(UnexpectedDesc* d, void* buffer, size_t capacity,
                                      swy_tag_recv_info_t* info) {
    common::copy_bytes(buffer, d->data.get(), std::min(d->length, capacity));
    if (info != nullptr) *info = {d->tag, d->length};
    const Status s = d->length > capacity ? Status::kMessageTruncated : Status::kOk;
    worker_->release_unexpected(d);
    if (d->sync) send_sync_ack(d->source, d->sender_request);
    worker_->recycle_unexpected(d);
    return s;
}

void EagerReceiver::track_probed(UnexpectedDesc* d) {
    if (d->reassembly_key != 0) reassembly_[d->reassembly_key].desc = d;
}

void EagerReceiver::drop_sender(tl::AmSource src, Status why) {
    const uint64_t prefix = reassembly_key(src, 0);
    drop([prefix](uint64_t key,
                  const Reassembly&) { return (key & ~uint64_t{0xFFFFFFFF}) == prefix; },
         why);
}

void EagerReceiver::drop_peer(const core::PeerRef& peer, Status why) {
    drop([peer](uint64_t, const Reassembly& e) { return e.peer == peer; }, why);
}

void EagerReceiver::drop(const std::function<bool(uint64_t, const Reassembly&)>& which,
                         Status why) {
    // Take the entries out first: completion callbacks may add new ones.
    std::vector<Reassembly> dropped;
    for (auto it = reassembly_.begin(); it != reassembly_.end();) {
        if (which(it->first, it->second)) {
            dropped.push_back(it->second);
            it = reassembly_.erase(it);
        } else {
            ++it;
        }
    }
    for (const Reassembly& e : dropped) {
        if (e.request != nullptr && !e.request->completed) {
            worker_->complete(e.request, why);
        } else if (e.desc != nullptr) {
            e.desc->reassembly_key = 0;  // a receive that matches it later fails
            if (!e.desc->probed_out) {
                worker_->matcher().remove_unexpected(e.desc);
                worker_->release_unexpected(e.desc);
                delete e.desc;
            }
        }
    }
}

}  // namespace swy::proto::eager
