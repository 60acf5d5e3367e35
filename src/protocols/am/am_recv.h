// Receive half of user active messages (switchyard/am.h), owned by the worker: the handler
// table (any 16-bit id, looked up by index), delivery of eager messages (the data in place,
// or copied out for handlers that may keep it), rendezvous descriptors (an RTS that is never
// matched: the handler gets it, swy_am_recv_data_nb binds a receive to it as a matched tag
// receive is bound to an unexpected RTS, or it is dropped and the sender told so with an
// ATS), and the reply endpoint of each message (this worker's endpoint to the lane's peer).
// Nothing here touches the tag matcher.
#pragma once

#include <switchyard/am.h>
#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "transports/transport.h"

namespace swy::core {
class Endpoint;
class Worker;
struct Request;
struct UnexpectedDesc;
}  // namespace swy::core

namespace swy::proto::am {

class ActiveMessages {
public:
    explicit ActiveMessages(core::Worker* worker) : worker_(worker) {}
    ActiveMessages(const ActiveMessages&) = delete;
    ActiveMessages& operator=(const ActiveMessages&) = delete;
    /// Frees what handlers kept and never released (no message goes out: the worker is
    /// going away, and its peers learn that from their transports).
    ~ActiveMessages();

    /// swy_worker_set_am_handler: @p cb null removes the handler. kInvalidParam for unknown
    /// flags.
    Status set_handler(uint16_t id, swy_am_recv_cb_t cb, void* arg, uint32_t flags);

    // ---- from Worker::on_am (every length checked against the packet) ----
    void on_eager(tl::AmSource src, const uint8_t* data, size_t length);
    void on_rts(tl::AmSource src, const uint8_t* data, size_t length);

    /// swy_am_recv_data_nb: bind a receive of @p count bytes at @p buffer to descriptor
    /// @p desc (consumed, also on failure). kOk / error (completed at once: *out null),
    /// kInProgress (*out set). kInvalidParam for a pointer that is no live descriptor,
    /// kUnsupported for a non-contiguous datatype or memory the CPU must not touch.
    Status recv_data(void* desc, void* buffer, size_t count, const swy_request_params_t* params,
                     core::Request** out);
    /// swy_am_data_release: eager data a handler kept, or a descriptor (dropped: its sender
    /// completes). false if @p data is neither (logged).
    bool release(void* data);

    // ---- reply endpoints (kept by the worker as endpoints are wired and closed) ----
    void endpoint_wired(core::Endpoint* ep);
    /// @p ep is closing; @p others: the worker's endpoint list, searched for another endpoint
    /// to the same peer to reply on.
    void endpoint_closed(core::Endpoint* ep, core::Endpoint* others);
    /// A sender index may now name another peer: forget what was remembered about it.
    void sender_released() { cached_valid_ = false; }

    /// Messages dropped because no handler was set for their id (tests).
    uint64_t unknown_dropped() const { return unknown_dropped_; }
    /// Rendezvous descriptors the application holds (tests).
    size_t descriptors_held() const { return descs_.size(); }

private:
    struct Handler {
        swy_am_recv_cb_t cb = nullptr;
        void* arg = nullptr;
        uint32_t flags = 0;
    };
    /// The handler of @p id, or null (logged and counted as dropped).
    const Handler* handler(uint16_t id);
    /// This worker's endpoint to the peer behind @p src, or null.
    swy_ep_h reply_ep(tl::AmSource src);
    /// Drop descriptor @p d (owned, deleted): its sender completes (ATS with kOk) if the
    /// lane it came on still belongs to it.
    void drop(core::UnexpectedDesc* d);

    struct PeerHash {
        size_t operator()(const std::pair<uint16_t, uint64_t>& p) const {
            return std::hash<uint64_t>()(p.second * 0x9e3779b97f4a7c15ull ^ p.first);
        }
    };

    core::Worker* worker_;
    std::vector<Handler> handlers_;  // index: AM id (grown to the largest id set)
    std::unordered_map<const void*, std::unique_ptr<uint8_t[]>> kept_;  // eager data kept
    std::unordered_set<core::UnexpectedDesc*> descs_;  // rendezvous descriptors held
    std::unordered_map<std::pair<uint16_t, uint64_t>, core::Endpoint*, PeerHash> reply_eps_;
    // The last source's reply endpoint: messages come in runs from one sender, and this
    // spares the transport's sender_key call and the map lookup.
    tl::AmSource cached_src_{};
    swy_ep_h cached_ep_ = nullptr;
    bool cached_valid_ = false;
    uint64_t unknown_dropped_ = 0;
};

}  // namespace swy::proto::am
