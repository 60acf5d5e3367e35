#include "transports/self/self_iface.h"

#include <cstring>

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
    std::vector<uint8_t> bytes;
    if (!iface_->spare_.empty()) {
        bytes = std::move(iface_->spare_.back());
        iface_->spare_.pop_back();
    }
    bytes.resize(hdr_len + length);
    std::memcpy(bytes.data(), hdr, hdr_len);
    if (length != 0) std::memcpy(bytes.data() + hdr_len, payload, length);
    iface_->enqueue(id, std::move(bytes));
    return Status::kOk;
}

Status SelfEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack,
                                    void* arg, size_t length) {
    std::vector<uint8_t> bytes(hdr_len + length);
    std::memcpy(bytes.data(), hdr, hdr_len);
    Status s = pack(arg, bytes.data() + hdr_len, length);
    if (s != Status::kOk) return s;
    iface_->enqueue(id, std::move(bytes));
    return Status::kOk;
}

uint64_t SelfEndpoint::remote_uid() const { return iface_->uid_; }

SelfInterface::SelfInterface(uint64_t worker_uid, uint16_t index, AmSink* sink,
                             const LaneCosts& costs)
    : uid_(worker_uid), index_(index), sink_(sink), costs_(costs), reply_ep_(this) {
    wants_progress_ = false;  // nothing queued yet
}

void SelfInterface::enqueue(AmId id, std::vector<uint8_t> bytes) {
    queue_.push_back({id, std::move(bytes)});
    wants_progress_ = true;
    // Only another thread of a multi-threaded worker can send while it sleeps (under the
    // worker's lock, which the sleeper released): armed_ needs no atomics.
    if (__builtin_expect(armed_, 0)) {
        armed_ = false;
        if (sink_ != nullptr) sink_->wake();
    }
}

unsigned SelfInterface::progress() {
    // Deliver only what was queued before this call: handlers may queue replies.
    size_t n = queue_.size();
    for (size_t i = 0; i < n; ++i) {
        Packet p = std::move(queue_.front());
        queue_.pop_front();
        sink_->on_am(p.id, AmSource{index_, 0}, p.bytes.data(), p.bytes.size());
        if (spare_.size() < 64) spare_.push_back(std::move(p.bytes));
    }
    wants_progress_ = !queue_.empty();  // replies queued by the handlers
    return static_cast<unsigned>(n);
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
