// Self transport: a worker talking to itself. Messages are queued and delivered from the
// next progress call (never from inside the send), so callbacks never re-enter a send.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
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

    /// Queued messages, back to back in one buffer: per record an 8-byte header (id,
    /// length), then the bytes, padded to 8. The buffer keeps its capacity, so a message
    /// costs two small copies and no allocation (a queue of vectors cost a deque node and
    /// vector moves per message).
    class RecordQueue {
    public:
        bool empty() const { return used_ == 0; }
        /// Room for a record of @p length bytes with id @p id; returns where its bytes go.
        uint8_t* append(AmId id, size_t length);
        /// Call @p f(id, data, length) for every record, in order.
        template <typename F>
        void for_each(F&& f) const {
            for (size_t at = 0; at < used_;) {
                const Header* h = reinterpret_cast<const Header*>(bytes_.get() + at);
                f(h->id, bytes_.get() + at + sizeof(Header), size_t{h->length});
                at += sizeof(Header) + padded(h->length);
            }
        }
        void clear() { used_ = 0; }
        void swap(RecordQueue& other) noexcept {
            bytes_.swap(other.bytes_);
            std::swap(used_, other.used_);
            std::swap(capacity_, other.capacity_);
        }

    private:
        struct Header {
            AmId id;
            uint32_t length;
        };
        static_assert(sizeof(Header) == 8);
        static size_t padded(size_t n) { return (n + 7) & ~size_t{7}; }
        void grow(size_t need);
        std::unique_ptr<uint8_t[]> bytes_;
        size_t used_ = 0;
        size_t capacity_ = 0;
    };
    int event_fd() const override { return -1; }

private:
    friend class SelfEndpoint;
    uint64_t uid_;
    uint16_t index_;
    AmSink* sink_;
    /// A record of @p length bytes queued for the next progress() (and the worker told to
    /// call it): the caller writes the bytes there before anything else runs.
    uint8_t* enqueue(AmId id, size_t length);
    RecordQueue queue_;     ///< what the next progress() delivers
    RecordQueue draining_;  ///< what this progress() delivers (handlers append to queue_)
    bool armed_ = false;
    bool delivering_ = false;  ///< inside progress(): draining_ is being walked
    LaneCosts costs_;          // before reply_ep_, which reads it
    SelfEndpoint reply_ep_;
};

}  // namespace swy::tl::self
