// Endpoint set-up, its protocol table, and the send path down to the protocols (eager/,
// rndv/): the fast path for one-packet sends, protocol choice, the pending queue.
#include "core/endpoint.h"

#include <algorithm>
#include <cstring>

#include "core/worker.h"
#include "memtypes/registry.h"
#include "protocols/am/am_send.h"
#include "protocols/datatype_table.h"
#include "protocols/eager/eager_send.h"
#include "protocols/lane_caps.h"
#include "protocols/protocol.h"
#include "protocols/rndv/zcopy_register.h"
#include "protocols/wire.h"

namespace swy::core {

using proto::ProtoId;

// ------------------------------------------------------------------------------------------
// RequestQueue
// ------------------------------------------------------------------------------------------

void RequestQueue::push_back(Request* r) {
    r->link.prev = tail_;
    r->link.next = nullptr;
    if (tail_ != nullptr) {
        tail_->link.next = r;
    } else {
        head_ = r;
    }
    tail_ = r;
}

void RequestQueue::remove(Request* r) {
    if (r->link.prev != nullptr) {
        r->link.prev->link.next = r->link.next;
    } else {
        head_ = r->link.next;
    }
    if (r->link.next != nullptr) {
        r->link.next->link.prev = r->link.prev;
    } else {
        tail_ = r->link.prev;
    }
    r->link = {};
    r->queue = 0;
}

Request* RequestQueue::pop_front() {
    Request* r = head_;
    if (r != nullptr) remove(r);
    return r;
}

// ------------------------------------------------------------------------------------------
// Set-up
// ------------------------------------------------------------------------------------------

const tl::LaneAttr Endpoint::kUnwiredAttr{};
const EndpointTables Endpoint::kUnwiredTables{};

Endpoint::Endpoint(Worker* worker, const swy_ep_params_t& params)
    : worker_(worker), iface_index_(0), err_cb_(params.err_cb), err_arg_(params.err_arg) {}

Endpoint::Endpoint(Worker* worker, std::unique_ptr<tl::Endpoint> lane, uint16_t iface_index,
                   const swy_ep_params_t& params)
    : Endpoint(worker, params) {
    wire(std::move(lane), iface_index);
}

void Endpoint::wire(std::unique_ptr<tl::Endpoint> lane, uint16_t iface_index) {
    lane_ = std::move(lane);
    iface_index_ = iface_index;
    const tl::LaneAttr& a = lane_->attr();
    // Limits and tables through the same library path swy-info prints (protocols/lane_caps.h):
    // the lane's own cost figures, the context's overrides.
    const proto::SelectOverrides o = proto::overrides_from(worker_->context()->config());
    const proto::EagerLimits limits = proto::eager_limits(a, o.pio_max);
    single_packet_max_ = limits.single_packet_max;
    fragment_max_ = limits.fragment_max;
    pio_max_ = limits.pio_max;
    // Built here, then shared with the worker's endpoints that built the same (the idle
    // cost of an endpoint, endpoint_tables.h).
    EndpointTables tables;
    tables.by_memtype[static_cast<size_t>(mem::MemType::kHost)] = proto::table_for(a, o);
    tables.datatype =
        proto::datatype_table(tables.by_memtype[static_cast<size_t>(mem::MemType::kHost)],
                              single_packet_max_, fragment_max_);
    const mem::MemTypeRegistry& memtypes = worker_->context()->memtypes();
    for (size_t t = 2; t < mem::kMemTypeCount; ++t) {
        const auto type = static_cast<mem::MemType>(t);
        if (!memtypes.loaded(type)) continue;
        const mem::MemTypeAttr attr = memtypes.attr(type);
        proto::DeviceMemoryPath device;
        device.stage_fixed_s = attr.copy_latency_s;
        device.stage_per_byte_s = 1.0 / attr.copy_bw_Bps;
        // Zero-copy reaches device memory only through dma-buf registration on a lane with
        // remote keys (the transport probes it), and only memory types whose plugin exports
        // a dma-buf (protocols/rndv/zcopy_register.h).
        device.zcopy_reaches = proto::rndv::zcopy_reaches_device_memory(a, type, attr);
        tables.by_memtype[t] = proto::table_for(a, o, &device);
    }
    tables_ = worker_->endpoint_tables().intern(std::move(tables));
    const proto::ProtoTable& host = tables_->by_memtype[static_cast<size_t>(mem::MemType::kHost)];
    // eager_short can only run up to pio_max_ (the selector already caps it there).
    const auto& first = host.ranges().front();
    confirms_delivery_ = a.confirms_delivery;
    // The fast path completes a send as it returns: not where delivery must be confirmed.
    fast_path_ = (first.proto == ProtoId::kEagerShort || first.proto == ProtoId::kEagerBcopy) &&
                 !confirms_delivery_;
    if (fast_path_) {
        size_t eager_end = 0;
        for (const auto& r : host.ranges()) {
            if (r.proto != ProtoId::kEagerShort && r.proto != ProtoId::kEagerBcopy) break;
            eager_end = r.max_size;
        }
        fast_max_ = std::min(eager_end, single_packet_max_);
    }
    // Sends posted before wire-up waited without a protocol: choose it now, in order.
    for (Request* r = pending_.front(); r != nullptr; r = r->link.next)
        choose_protocol(r);
}

Endpoint::~Endpoint() {
    if (lane_) {
        lane_->disconnect();
    } else {
        worker_->endpoint_deleted(this);
    }
}

void Endpoint::fail(Status why) {
    if (!failed_) {
        failed_ = true;
        failure_ = why;
    }
    // One-sided operations first: the engine ends them with their own state.
    worker_->rma().endpoint_failed(this, why);
    // Sends the peer acknowledged before the failure were delivered: they succeed; the rest
    // fail below with the failure.
    if (awaiting_delivery_ != 0 && lane_) complete_delivered();
    awaiting_delivery_ = 0;
    const Status request_status = why == Status::kCanceled ? Status::kCanceled : why;
    while (Request* r = pending_.pop_front())
        worker_->complete(r, request_status);
    while (Request* r = in_flight_.pop_front())
        worker_->complete(r, request_status);
    if (!error_reported_ && why != Status::kCanceled && err_cb_ != nullptr) {
        error_reported_ = true;
        err_cb_(err_arg_, handle(), static_cast<swy_status_t>(why));
    }
}

// ------------------------------------------------------------------------------------------
// Eager send
// ------------------------------------------------------------------------------------------

Status Endpoint::tag_send_queued(const void* buffer, size_t length, uint64_t tag,
                                 const swy_request_params_t* params, Request** out) {
    *out = nullptr;
    if (__builtin_expect(failed_, 0)) {
        return failure_ == Status::kCanceled ? Status::kEndpointClosed : failure_;
    }
    const uint32_t flags = request_params::flags(params);
    // Non-contiguous data (iov, generic) takes its own path: here, one predictable branch.
    if (__builtin_expect(Worker::stated_datatype(params) != SWY_DATATYPE_CONTIG, 0)) {
        return tag_send_datatype(buffer, length, tag, params, out);
    }
    // (The one-packet fast path was tried inline by tag_send(), core/endpoint_send.h.)
    Request* r = worker_->new_request(params);
    r->kind = RequestKind::kSend;
    r->ep = this;
    r->send_buffer = static_cast<const uint8_t*>(buffer);
    r->length = length;
    r->send_tag = tag;
    mem::MemType type = mem::MemType::kHost;
    bool cpu_buffer = true;
    const swy_memtype_t stated = Worker::stated_memtype(params);
    if (!worker_->host_without_detection(stated)) {
        Status ms = worker_->resolve_memtype(buffer, length, stated, &type, &cpu_buffer);
        if (ms != Status::kOk) {
            worker_->pool().put(r);
            return ms;
        }
    }
    r->memtype = static_cast<uint8_t>(type);
    r->cpu_buffer = cpu_buffer;
    return post_send(r, flags, out);
}

Status Endpoint::post_send(Request* r, uint32_t flags, Request** out) {
    if (lane_) choose_protocol(r);

    if (lane_ && pending_.empty()) {
        Status s = push(r);
        if (is_error(s) && s != Status::kNoResource) {
            worker_->pool().put(r);
            return s;
        }
        if (s == Status::kOk) {
            r->local_done = true;
            if (r->remote_done && !await_delivery(r)) {
                if ((flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) == 0) {
                    worker_->pool().put(r);
                    return Status::kOk;
                }
                r->user_owned = true;
                worker_->complete_later(r, Status::kOk);
                *out = r;
                return Status::kInProgress;
            }
            in_flight_.push_back(r);
            r->queue = 2;
            r->user_owned = true;
            *out = r;
            return Status::kInProgress;
        }
    }
    pending_.push_back(r);
    r->queue = 1;
    r->user_owned = true;
    if (lane_) worker_->mark_pending(this);  // unwired: the worker marks it once wired
    *out = r;
    return Status::kInProgress;
}

void Endpoint::choose_protocol(Request* r) {
    if (r->am) return proto::am::choose(this, r);
    const size_t length = r->length;
    const proto::ProtoTable& table =
        r->view == nullptr ? tables_->by_memtype[r->memtype] : tables_->datatype;
    r->proto = static_cast<uint8_t>(table.lookup(length));
    const bool rndv = proto::is_rendezvous(static_cast<ProtoId>(r->proto));
    // Rendezvous completes on ATS/FIN, which already implies a matched receive (sync).
    r->remote_done = !rndv && (r->flags & SWY_REQ_FLAG_SYNC) == 0;
    if (!rndv && length > single_packet_max_) r->message_id = next_message_id();
}

Status Endpoint::push(Request* r) {
    // Active messages have their own packets (protocols/am/); they share this queue so that
    // they leave in order with the tag sends.
    if (__builtin_expect(r->am, 0)) return proto::am::start(r);
    const auto id = static_cast<ProtoId>(r->proto);
    // Eager by a direct call (the common case); rendezvous through its Protocol entry.
    if (!proto::is_rendezvous(id)) return proto::eager::start(r);
    return proto::rndv::protocol(id).start(r);
}

namespace {
struct StageArgs {
    const mem::MemTypeRegistry* memtypes;
    mem::MemType type;
    const uint8_t* src;
};
Status stage_to_cell(void* arg, uint8_t* dst, size_t length) {
    auto* a = static_cast<StageArgs*>(arg);
    return a->memtypes->copy_to_host(a->type, dst, a->src, length);
}
}  // namespace

Status Endpoint::send_payload(Request* r, tl::AmId id, const void* hdr, size_t hdr_len,
                              size_t offset, size_t length) {
    if (r->cpu_buffer) return lane_->am_send(id, hdr, hdr_len, r->send_buffer + offset, length);
    if (r->view != nullptr) return send_packed(r, id, hdr, hdr_len, offset, length);
    StageArgs a{&worker_->context()->memtypes(), static_cast<mem::MemType>(r->memtype),
                r->send_buffer + offset};
    return lane_->am_send_packed(id, hdr, hdr_len, stage_to_cell, &a, length);
}

bool Endpoint::progress_pending() {
    if (!lane_) return true;  // wire_endpoint() puts it back on the list
    while (Request* r = pending_.front()) {
        Status s = push(r);
        if (s == Status::kNoResource) return false;
        pending_.remove(r);
        if (s != Status::kOk) {
            worker_->complete(r, s);
            fail(s);
            return true;
        }
        r->local_done = true;
        if (r->remote_done && !await_delivery(r)) {
            worker_->complete(r, Status::kOk);
        } else {
            in_flight_.push_back(r);
            r->queue = 2;
        }
    }
    // Sends awaiting delivery are the worker's delivery list's business (watch_delivery()):
    // waiting for the peer's acknowledgement is no reason to poll, nor to refuse an arm.
    return true;
}

bool Endpoint::start_delivery_wait(Request* r) {
    if (!r->remote_done) return false;  // an answer from the peer ends it anyway
    r->remote_done = false;
    r->delivery_mark = std::max<uint64_t>(lane_->accepted_bytes(), 1);
    delivery_wanted_ = std::max(delivery_wanted_, r->delivery_mark);
    ++awaiting_delivery_;
    worker_->watch_delivery(this);  // complete_delivered() completes it once acknowledged
    return true;
}

unsigned Endpoint::complete_delivered() {
    // Cheap when nothing new can be known: the lane asks its kernel only when worth it.
    const uint64_t acked = lane_->acknowledged_bytes(delivery_wanted_);
    // Collected first: a completion callback may send on (or close) this endpoint.
    delivered_scratch_.clear();
    size_t waiting = 0;
    for (Request* r = in_flight_.front(); r != nullptr; r = r->link.next) {
        if (r->delivery_mark == 0) continue;
        if (r->delivery_mark <= acked) {
            delivered_scratch_.push_back(r);
        } else {
            ++waiting;
        }
    }
    awaiting_delivery_ = waiting;
    if (delivered_scratch_.empty()) return 0;
    const auto completed = static_cast<unsigned>(delivered_scratch_.size());
    std::vector<Request*> done;
    done.swap(delivered_scratch_);
    for (Request* r : done) {
        in_flight_.remove(r);
        r->queue = 0;
        r->delivery_mark = 0;
        r->remote_done = true;
        worker_->complete(r, Status::kOk);
    }
    done.clear();
    if (delivered_scratch_.capacity() < done.capacity()) delivered_scratch_.swap(done);
    return completed;
}

}  // namespace swy::core
