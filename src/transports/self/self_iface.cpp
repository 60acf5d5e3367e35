#include "transports/self/self_iface.h"

#include <algorithm>
#include <cstring>

#include "common/small_copy.h"

namespace swy::tl::self {

SelfEndpoint::SelfEndpoint(SelfInterface* iface) : iface_(iface) {
    attr_.transport = "self";
    attr_.pio = false;
    attr_.credits = UINT32_MAX;
    attr_.credits_shared = false;
    attr_.max_message = SelfInterface::kMaxMessage;
    attr_.costs = iface->costs_;
}

Status SelfEndpoint::am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                             size_t length) {
    uint8_t* bytes = iface_->enqueue(id, hdr_len + length);
    common::copy_bytes(bytes, hdr, hdr_len);
    common::copy_bytes(bytes + hdr_len, payload, length);
    return Status::kOk;
}

Status SelfEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack,
                                    void* arg, size_t length) {
    // Packed into a scratch buffer first: a failed pack must queue nothing.
    std::vector<uint8_t> bytes(hdr_len + length);
    std::memcpy(bytes.data(), hdr, hdr_len);
    Status s = pack(arg, bytes.data() + hdr_len, length);
    if (s != Status::kOk) return s;
    std::memcpy(iface_->enqueue(id, bytes.size()), bytes.data(), bytes.size());
    return Status::kOk;
}

uint64_t SelfEndpoint::remote_uid() const { return iface_->uid_; }

SelfInterface::SelfInterface(uint64_t worker_uid, uint16_t index, AmSink* sink,
                             const LaneCosts& costs)
    : uid_(worker_uid), index_(index), sink_(sink), costs_(costs), reply_ep_(this) {
    wants_progress_ = false;  // nothing queued yet
}

uint8_t* SelfInterface::RecordQueue::append(AmId id, size_t length) {
    const size_t record = sizeof(Header) + padded(length);
    if (__builtin_expect(used_ + record > capacity_, 0)) grow(used_ + record);
    uint8_t* at = bytes_.get() + used_;
    const Header h{id, static_cast<uint32_t>(length)};
    std::memcpy(at, &h, sizeof h);
    used_ += record;
    return at + sizeof(Header);
}

void SelfInterface::RecordQueue::grow(size_t need) {
    const size_t capacity = std::max<size_t>({need, capacity_ * 2, 4096});
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[capacity]);
    if (used_ != 0) std::memcpy(bigger.get(), bytes_.get(), used_);
    bytes_ = std::move(bigger);
    capacity_ = capacity;
}

uint8_t* SelfInterface::enqueue(AmId id, size_t length) {
    uint8_t* bytes = queue_.append(id, length);
    wants_progress_ = true;
    // Only another thread of a multi-threaded worker can send while it sleeps (under the
    // worker's lock, which the sleeper released): armed_ needs no atomics.
    if (__builtin_expect(armed_, 0)) {
        armed_ = false;
        if (sink_ != nullptr) sink_->wake();
    }
    return bytes;
}

unsigned SelfInterface::progress() {
    // Deliver only what was queued before this call: handlers may queue replies, which go
    // to the other buffer. A handler that reaches progress() again finds nothing to do:
    // draining_ is still being walked.
    if (__builtin_expect(delivering_, 0)) return 0;
    delivering_ = true;
    draining_.swap(queue_);
    unsigned n = 0;
    draining_.for_each([this, &n](AmId id, const uint8_t* data, size_t length) {
        sink_->on_am(id, AmSource{index_, 0}, data, length);
        ++n;
    });
    draining_.clear();
    delivering_ = false;
    wants_progress_ = !queue_.empty();  // replies queued by the handlers
    return n;
}

Status SelfInterface::connect(uint64_t remote_uid, const uint8_t*, size_t, bool,
                              std::unique_ptr<Endpoint>* out, std::string* why) {
    if (remote_uid != uid_) {
        *why = "self: the address belongs to another worker";
        return Status::kUnreachable;
    }
    *out = std::make_unique<SelfEndpoint>(this);
    return Status::kOk;
}

Endpoint* SelfInterface::reply_endpoint(uint16_t) { return &reply_ep_; }

uint64_t SelfInterface::sender_uid(uint16_t) const { return uid_; }

int SelfInterface::sender_pid(uint16_t) { return getpid(); }

int SelfEndpoint::verified_pid() const { return getpid(); }

}  // namespace swy::tl::self
