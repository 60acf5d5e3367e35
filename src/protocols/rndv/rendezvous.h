// Rendezvous: RTS → (GET: the receiver pulls with get_zcopy → ATS) | (RTR → PUT: the sender
// writes with put_zcopy → FIN) | (RTR → pipelined fragments through the lane). The RTS
// travels on the endpoint's lane like any eager message, so it takes part in tag matching and
// probes in send order; the data moves only once a receive matched.
//
// Rendezvous is the worker's rendezvous state (which requests progress drives, which wait for
// the peer, the registrations they hold) plus the control messages every rendezvous protocol
// shares (rendezvous.cpp). The protocols themselves, each written once over tl::ZcopyLane so
// CMA and RDMA run the same code, are get.cpp, put.cpp and pipeline.cpp; their stages are in
// stages.h. The worker keeps the plumbing: matching, identity checks, control sending,
// completion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "protocols/protocol.h"
#include "protocols/wire.h"
#include "transports/transport.h"
#include "transports/zcopy.h"

namespace swy::core {
class Worker;
struct Request;
class RequestPool;
struct PeerRef;
struct UnexpectedDesc;
}  // namespace swy::core

namespace swy::proto::rndv {

/// The code of rendezvous protocol @p id (start: send the RTS; progress: one budget of data
/// movement; abort: drop what it holds and complete).
const Protocol& protocol(ProtoId id);

class Rendezvous {
public:
    explicit Rendezvous(core::Worker* worker) : worker_(worker) {}
    Rendezvous(const Rendezvous&) = delete;
    Rendezvous& operator=(const Rendezvous&) = delete;

    /// GETs of at least @p split_min bytes are split between both processes (SWY_RNDV_SPLIT_MIN).
    void set_split_min(size_t split_min) { split_min_ = split_min; }
    size_t split_min() const { return split_min_; }
    /// A GET that the CPU copies (CMA) pulls at most @p chunk bytes per call
    /// (SWY_RNDV_FRAG_SIZE); a lane that completes later (RDMA) takes the whole range.
    void set_get_chunk(size_t chunk) { get_chunk_ = chunk; }
    size_t get_chunk() const { return get_chunk_; }

    // ---- sender ----
    /// Send the RTS of @p r (its protocol's start). A GET on a lane with remote keys registers
    /// the buffer first (a retried RTS reuses it) and falls back to the pipeline if that fails.
    /// kOk: sent; kNoResource: the lane is full (retried); other: failed.
    Status send_rts(core::Request* r);

    // ---- receiver ----
    /// An RTS arrived: start the receive it matches, or keep it as an unexpected message.
    void on_rts(tl::AmSource src, const uint8_t* data, size_t length);
    /// A posted receive matched the unexpected RTS @p d (owned by the caller, deleted after).
    void bind_unexpected(core::Request* r, const core::UnexpectedDesc& d);
    /// Follow an RTS held outside the tag matcher (an active-message descriptor,
    /// protocols/am/) like an unmatched tag RTS: its sender's failure marks it sender_failed,
    /// and bind_unexpected() stops following it.
    void track_unexpected(core::UnexpectedDesc* d) { unexpected_rts_.push_back(d); }
    /// Stop following @p d (dropped without a receive).
    void forget_unexpected(const core::UnexpectedDesc* d) { std::erase(unexpected_rts_, d); }

    // ---- control messages (both sides) ----
    void on_ats(tl::AmSource src, const uint8_t* data, size_t length);
    void on_rtr(tl::AmSource src, const uint8_t* data, size_t length);
    void on_fin(tl::AmSource src, const uint8_t* data, size_t length);
    /// A pipeline fragment (RndvDataHeader + payload) through on_am.
    void on_data(tl::AmSource src, const uint8_t* data, size_t length);
    /// Zero-copy placement of pipeline fragments by stream transports (tcp): where payload
    /// bytes [done, length) go, null when the fragment fits no receive.
    uint8_t* place_data(tl::AmSource src, const uint8_t* hdr, size_t done, size_t length);
    void on_data_placed(tl::AmSource src, const uint8_t* hdr, size_t length);

    // ---- progress and failures ----
    /// True when progress() has work (inline: asked on every worker progress call).
    bool busy() const { return !driven_.empty(); }
    /// Move every driven rendezvous by at most one budget; @return events.
    unsigned progress();
    /// The peer behind @p peer failed: its unexpected RTSs and the receives it feeds fail.
    void fail_peer(const core::PeerRef& peer, Status why);
    /// A sender index was released: an unmatched RTS from it can never be served.
    void sender_released(tl::AmSource src);
    /// Drop every registration (before the interfaces that made them go away).
    void release_all() { regs_.clear(); }

    // ---- for the protocols (get.cpp, put.cpp, pipeline.cpp) ----
    core::Worker* worker() const { return worker_; }
    /// Let progress() drive @p r (a sender pushing, a receiver pulling).
    void drive(core::Request* r);
    /// Remember that @p r waits for the peer (FIN, fragments, a read in flight): failed with
    /// its peer, and the only state in which FINs and fragments are taken.
    void wait_for_peer(core::Request* r);
    bool waits_for_peer(const core::Request* r) const;
    void stop_waiting(core::Request* r);
    /// The zero-copy lane to the peer that sent @p r's RTS (receiver), or null when there is
    /// none or the sender index no longer belongs to that peer.
    tl::ZcopyLane* reply_zcopy(const core::Request* r) const;
    /// The zero-copy lane of @p r's endpoint (sender), or null.
    static tl::ZcopyLane* send_zcopy(const core::Request* r);
    /// Register @p length bytes at @p buffer of @p r on @p lane with @p access and keep the
    /// registration until @p r ends (released by release(), completion or failure).
    Status register_buffer(tl::ZcopyLane* lane, core::Request* r, const void* buffer, size_t length,
                           unsigned access, std::string* why);
    /// The registration @p r holds, or null.
    const tl::MemoryRegistration* registration(const core::Request* r) const;
    /// Drop @p r's registrations, and those of requests that ended meanwhile.
    void release(core::Request* r);
    /// Send the RTR of @p r (@p scheme: what it asks for) and wait for the peer.
    void send_rtr(core::Request* r, RndvScheme scheme, uint32_t rkey = 0);
    /// Send an ATS with @p status for receive @p r.
    void send_ats(core::Request* r, Status status);
    /// End receive @p r with @p status (releases what it holds, completes it).
    void finish_receive(core::Request* r, Status status);
    /// End send @p r with @p status.
    void finish_send(core::Request* r, Status status);
    /// Send the FIN of @p r now: kOk (sent or the lane failed: *lane_error says which),
    /// kNoResource (no room: retry).
    Status send_fin(core::Request* r, Status* lane_error);

private:
    /// A request id captured with its pointer, so a reused request is never mistaken.
    struct Tracked {
        core::Request* request;
        uint64_t id;
        /// Through the pool, never through the pointer: a request in caller memory that
        /// ended may already be the caller's again (SWY_REQ_PARAM_FIELD_REQUEST).
        bool live(const core::RequestPool& pool) const;
    };
    struct Registration {
        core::Request* request;
        uint64_t id;
        std::unique_ptr<tl::MemoryRegistration> reg;
    };
    void start_receive(core::Request* r, const RtsHeader& rts, tl::AmSource src,
                       const core::PeerRef& peer);
    /// The receive a fragment of @p size bytes from @p src belongs to, or null.
    core::Request* data_target(tl::AmSource src, const RndvDataHeader& h, size_t size);
    void data_arrived(core::Request* r, size_t size);

    core::Worker* worker_;
    size_t split_min_ = 128 * 1024;
    size_t get_chunk_ = 512 * 1024;
    std::vector<core::UnexpectedDesc*> unexpected_rts_;  // for failure handling
    std::vector<Tracked> driven_;   // progress() moves their data (either side)
    std::vector<Tracked> waiting_;  // receivers waiting for the peer
    std::vector<Registration> regs_;
};

/// Bytes one progress call moves for one rendezvous (synchronous lanes) before other work
/// gets a turn.
inline constexpr size_t kProgressBudget = size_t{8} << 20;

// The protocols (get.cpp, put.cpp, pipeline.cpp).
/// GET, receiver: start pulling once the RTS matched (@p lane: the zero-copy lane to the
/// sender, null if none: then the pipeline).
void get_start_receive(Rendezvous& rv, core::Request* r, tl::ZcopyLane* lane);
/// GET, sender: the receiver sent a split RTR: put the tail.
void get_start_split_push(Rendezvous& rv, core::Request* r);
/// GET, receiver: the sender's FIN of a split came with @p status.
void get_on_split_fin(Rendezvous& rv, core::Request* r, Status status);
/// PUT, receiver: answer the RTS with an RTR carrying our buffer (and key).
void put_start_receive(Rendezvous& rv, core::Request* r, tl::ZcopyLane* lane);
/// PUT, sender: the RTR came: write into the receiver's buffer.
void put_start_push(Rendezvous& rv, core::Request* r);
/// PUT, sender: after the RTS went out, register the buffer (lanes with remote keys) while the
/// RTR is on its way.
void put_register_source(Rendezvous& rv, core::Request* r);
/// Pipeline, receiver: answer with an RTR for fragments.
void pipeline_start_receive(Rendezvous& rv, core::Request* r);
/// Pipeline, sender: the RTR came: send fragments.
void pipeline_start_push(Rendezvous& rv, core::Request* r);

bool get_progress(core::Request* r);
bool put_progress(core::Request* r);
bool pipeline_progress(core::Request* r);

/// Put @p r's range [rndv_done, rndv_length) with put_zcopy from its buffer at rndv_offset,
/// by at most one budget (synchronous lanes). Shared by PUT and a split GET's tail.
/// kOk: all moved; kNoResource: more to do next progress; kInProgress: an asynchronous put
/// was started (callbacks follow); other: failed.
Status put_range(Rendezvous& rv, core::Request* r);

}  // namespace swy::proto::rndv
