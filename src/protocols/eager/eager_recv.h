// Receive half of the eager protocols (eager_short, eager_bcopy; single packet, fragmented,
// synchronous): deliver a packet to the posted receive it matches or buffer it as an
// unexpected message, reassemble fragmented messages by offset, and acknowledge synchronous
// sends once matched. Tag matching and the unexpected queue with its memory caps stay in the
// worker (plumbing); this file owns what the eager wire messages mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "common/status.h"
#include "core/request.h"
#include "transports/transport.h"

namespace swy::core {
class Worker;
struct UnexpectedDesc;
}  // namespace swy::core

namespace swy::proto::eager {

/// A fragmented message being reassembled: its bytes go either to a receive request or to
/// an unexpected desc (or nowhere: a lost message whose receive already failed).
struct Reassembly {
    core::Request* request = nullptr;
    core::UnexpectedDesc* desc = nullptr;
    core::PeerRef peer;  ///< who sends it, as its lane vouches (failures drop it)
    size_t total = 0;
    size_t received = 0;
};

class EagerReceiver {
public:
    explicit EagerReceiver(core::Worker* worker) : worker_(worker) {}
    EagerReceiver(const EagerReceiver&) = delete;
    EagerReceiver& operator=(const EagerReceiver&) = delete;

    // ---- active messages (kAmEagerOnly/SyncOnly/First/Middle, kAmSyncAck) ----
    /// A single-packet message. A plain one that matches a posted receive of
    /// contiguous host memory, with nothing more to do at completion (no callback, view or
    /// endpoint queue, not freed), completes here without a call: the common case of a
    /// latency loop. The rest goes to on_only_general().
    void on_only(tl::AmSource src, const uint8_t* data, size_t length, bool sync);
    void on_first(tl::AmSource src, const uint8_t* data, size_t length);
    void on_middle(tl::AmSource src, const uint8_t* data, size_t length);
    /// A receiver matched our synchronous send: it completes once also handed over.
    void on_ack(tl::AmSource src, const uint8_t* data, size_t length);

    // ---- the worker's matching plumbing ----
    /// A posted receive @p r matched the buffered eager message @p d (deletes @p d): copy
    /// what arrived, acknowledge a synchronous send, and let later fragments go to @p r.
    /// Deliver @p d (a whole eager message with its bytes kept, already out of the matcher) into the contiguous host
    /// buffer @p buffer of @p capacity bytes, acknowledge a synchronous send, recycle @p d.
    /// Fills @p info if not null. Returns kOk or kMessageTruncated.
    Status receive_at_once(core::UnexpectedDesc* d, void* buffer, size_t capacity,
                           swy_tag_recv_info_t* info);
    void bind_unexpected(core::Request* r, core::UnexpectedDesc* d);
    /// A desc a matched probe took out of the matcher is still the target of its fragments.
    void track_probed(core::UnexpectedDesc* d);
    /// The sender index @p src was released: its half-sent messages can never complete.
    void drop_sender(tl::AmSource src, Status why);
    /// The peer @p peer failed: the same for everything it was sending.
    void drop_peer(const core::PeerRef& peer, Status why);

    /// Free the incomplete messages a matched probe took out of the matcher (the matcher's
    /// own descs are the worker's to free) and forget every reassembly. The worker calls it
    /// when it is destroyed, before it frees the matcher's descs.
    void free_probed();

    /// Acknowledge a synchronous send (@p status: kOk, or why its receive failed).
    void send_sync_ack(tl::AmSource src, uint64_t sender_request, Status status = Status::kOk);

private:
    /// on_only() for everything but its fast path: synchronous sends, a receive that needs
    /// a memory-type copy or unpack, or more at completion than two stores.
    [[gnu::noinline]] void on_only_general(tl::AmSource src, const uint8_t* data, size_t length,
                                           bool sync);
    /// on_only() for a matched receive its fast path does not complete: deliver, complete.
    [[gnu::noinline]] void deliver_and_complete(core::Request* r, uint64_t tag,
                                                const uint8_t* payload, size_t size);
    /// on_only() for a message no posted receive matched: kept as an unexpected message. Out
    /// of line, so that the matched path (every message of a latency loop) saves few
    /// registers.
    [[gnu::noinline]] void on_only_unexpected(tl::AmSource src, uint64_t tag,
                                              uint64_t sender_request, bool sync,
                                              const uint8_t* payload, size_t size);
    static uint64_t reassembly_key(tl::AmSource src, uint32_t message_id) {
        return (uint64_t{src.iface} << 48) | (uint64_t{src.sender} << 32) | message_id;
    }
    void deliver(core::Request* r, uint64_t tag, size_t total, const uint8_t* payload,
                 size_t length);
    /// Remove the entries @p which selects; their receives fail with @p why.
    void drop(const std::function<bool(uint64_t, const Reassembly&)>& which, Status why);

    core::Worker* worker_;
    std::unordered_map<uint64_t, Reassembly> reassembly_;
};

}  // namespace swy::proto::eager
