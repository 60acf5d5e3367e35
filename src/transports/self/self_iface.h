// Self transport: a worker talking to itself. Messages are queued and delivered from the
// next progress call (never from inside the send), so callbacks never re-enter a send.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "transports/transport.h"

namespace swy::tl::self {

class SelfInterface;

class SelfEndpoint final : public Endpoint {
public:
    explicit SelfEndpoint(SelfInterface* iface);
    const LaneAttr& attr() const override { return attr_; }
    Status am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                   size_t length) override;
    Status am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                          size_t length) override;
    uint64_t remote_uid() const override;
    uint64_t peer_key() const override { return remote_uid(); }
    void disconnect() override {}
    /// This process: the self lane never leaves it.
    int verified_pid() const override;

private:
    SelfInterface* iface_;
    LaneAttr attr_;
};

class SelfInterface final : public Interface {
public:
    /// Largest message of one am_send (fragments above it, like any lane).
    static constexpr size_t kMaxMessage = 64 * 1024;

    /// @p costs: what its lanes report (self_lane_costs(), self_costs.h). @p sink may be null
    /// for an interface that is never progressed (swy-info asks its lanes' attributes).
    SelfInterface(uint64_t worker_uid, uint16_t index, AmSink* sink, const LaneCosts& costs);
    const char* name() const override { return "self"; }
    unsigned progress() override;
    std::vector<uint8_t> address() const override { return {}; }
    Status connect(uint64_t remote_uid, const uint8_t* section, size_t length, bool want_pio,
                   std::unique_ptr<Endpoint>* out, std::string* why) override;
    Endpoint* reply_endpoint(uint16_t sender) override;
    uint64_t sender_uid(uint16_t sender) const override;
    uint64_t sender_key(uint16_t sender) const override { return sender_uid(sender); }
    /// This process: a message on the self lane never leaves it.
    int sender_pid(uint16_t sender) override;
    /// Armed while nothing is queued: a send from another thread then wakes the worker
    /// (AmSink::wake(): self has no fd of its own).
    bool arm() override {
        armed_ = queue_.empty();
        return armed_;
    }
    void disarm() override { armed_ = false; }
    /// Nothing queued: progress would do nothing (wants_progress() says the same to the
    /// worker's poll loop).
    bool idle() const { return queue_.empty(); }
    int event_fd() const override { return -1; }

private:
    friend class SelfEndpoint;
    struct Packet {
        AmId id;
        std::vector<uint8_t> bytes;
    };
    uint64_t uid_;
    uint16_t index_;
    AmSink* sink_;
    /// Queue a message for the next progress() (and have the worker call it).
    void enqueue(AmId id, std::vector<uint8_t> bytes);
    std::deque<Packet> queue_;
    bool armed_ = false;
    std::vector<std::vector<uint8_t>> spare_;  // recycled packet buffers
    LaneCosts costs_;                          // before reply_ep_, which reads it
    SelfEndpoint reply_ep_;
};

}  // namespace swy::tl::self
