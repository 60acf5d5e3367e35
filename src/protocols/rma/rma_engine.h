// The message path of one-sided operations: put, get and atomics that the target executes
// from its progress, flush and fence. One Engine per worker (Worker::rma()). Works over every
// lane (self, shm, tcp, verbs): the requests are active messages (kAmRma* in protocols/wire.h),
// and the target validates each against its key table (rma::validate_access) before it touches
// memory.
//
// Completion of the calls below follows the C API: kOk (done at once, *out null),
// kInProgress (*out is a request of the endpoint's worker), or an error (nothing started).
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "core/endpoint.h"
#include "protocols/rma/rma.h"
#include "protocols/rma/rma_wire.h"
#include "transports/transport.h"

namespace swy::rma {

class Engine {
public:
    explicit Engine(core::Worker* worker);
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine();

    // ---- initiator ----
    /// Write @p count items of @p buffer (@p datatype) to @p address under @p key at the peer
    /// of @p ep. Local completion: the buffer may be reused.
    Status put(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, const void* buffer,
               size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
               core::Request** out);
    /// Read into @p buffer. Completes once the data is there.
    Status get(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, void* buffer,
               size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
               core::Request** out);
    /// Atomic @p op on the @p size-byte (4 or 8) word at @p address; operands in the low
    /// @p size bytes. @p result null: posted; else it receives the old value.
    Status atomic(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, swy_atomic_op_t op,
                  size_t size, uint64_t operand, uint64_t compare, void* result,
                  const swy_request_params_t* params, core::Request** out);
    /// Every operation started on @p ep before is complete at the target; the request ends
    /// with the first error the target reported since the last flush of @p ep.
    Status flush_ep(core::Endpoint* ep, const swy_request_params_t* params, core::Request** out);
    /// flush_ep for every endpoint of the worker. Also fails (with that endpoint's failure)
    /// when an endpoint failed since the last worker flush with operations no flush had
    /// covered: those may never have reached the target.
    Status flush_worker(const swy_request_params_t* params, core::Request** out);
    /// Operations started after this are executed after those started before (per target).
    void fence();
    /// Whether a direct operation (the initiator's CPU, protocols/rma/direct.h) may run now on
    /// @p ep: false after a fence while operations the target executes are still outstanding
    /// on it (later ones then take the message path and queue behind them on the lane).
    /// (Endpoint::rma_fence_pending, which fence() sets and the flush it sends clears.)
    static bool direct_allowed(const core::Endpoint* ep);
    /// A direct operation on @p ep failed with @p why after it had been started (reported by
    /// the next flush of @p ep).
    void record_error(core::Endpoint* ep, Status why);

    // ---- worker hooks ----
    /// A kAmRma* message (either side).
    void on_am(tl::AmId id, tl::AmSource src, const uint8_t* data, size_t length);
    /// True when progress() has work (asked on every worker progress call: keep it cheap).
    bool busy() const { return busy_; }
    /// Continue what waits for lane credits (get replies, queued requests); @return events.
    unsigned progress();
    /// @p ep is going away or failed: its operations end with @p why (called by
    /// Endpoint::fail before it fails the rest of its requests).
    void endpoint_failed(core::Endpoint* ep, Status why);
    /// Sender @p src closed its lane: what the target still owed it is dropped.
    void sender_released(tl::AmSource src);

    // ---- zero-copy receive on byte-stream lanes (tcp; Worker's AmSink hooks) ----
    /// Header bytes placement needs for @p id (puts and get replies), else 0.
    static size_t placement_header(tl::AmId id);
    /// Where payload bytes [done, length) of a put or get reply go, validated again on
    /// every call (a mapping unmapped mid-message is never written); null: not placed.
    uint8_t* place_payload(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t done,
                           size_t length);
    /// Every payload byte of a placed put or get reply is in place.
    void on_am_placed(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t length);

    /// Requests the target refused (bad key, range, rights, malformed): tests, tools.
    uint64_t refused() const { return refused_; }
    /// Payload bytes of puts and get replies placed straight from a byte stream (tests).
    uint64_t placed_bytes() const { return placed_bytes_; }

    struct Op;
    struct EpState;
    struct PeerState;
    struct Reply;

private:
    // ---- initiator (rma_engine.cpp) ----
    EpState* ep_state(core::Endpoint* ep);
    /// Ops are recycled (no allocation per operation once warm).
    Op* alloc_op();
    void release_op(Op* op);
    /// A new op of @p kind on @p ep with a request from @p params (masked by field_mask).
    Op* new_op(EpState* s, uint8_t kind, const swy_request_params_t* params);
    /// put and get: a new op of @p kind (OpKind::kPut or kGet) over @p count items of
    /// @p buffer, started (kInvalidParam for a bad datatype, nothing sent).
    Status transfer(core::Endpoint* ep, uint8_t kind, const KeyIdentity& key, uint64_t address,
                    const void* buffer, size_t count, swy_datatype_t datatype,
                    const swy_request_params_t* params, core::Request** out);
    /// Send it now if nothing waits before it, else queue; then report like the C API.
    Status start(Op* op, const swy_request_params_t* params, core::Request** out);
    /// Hand as much of @p op to the lane as credits allow: kOk all, kNoResource later.
    Status push(Op* op);
    /// Everything @p op had to send is on the lane.
    void sent(Op* op);
    /// @p op is over: its request (if any) completes with @p why.
    void finish(Op* op, Status why);
    /// Flushes of @p s whose ack came and whose earlier ops are done complete.
    void check_flushes(EpState* s);
    /// Send @p op now if nothing waits before it on its endpoint, else queue it.
    void launch(Op* op);
    /// A flush op on @p s: part of @p parent (a worker flush), or a user flush (with a
    /// request), or internal (a fence's) when neither.
    Op* new_flush(EpState* s, Op* parent, bool with_request, const swy_request_params_t* params);
    /// True when @p s has message-path ops no completed flush covers yet.
    static bool unflushed(const EpState* s);
    /// kOk/@p st at once, or a request completed from the next progress (NO_IMM_COMPLETE).
    Status immediate(Status st, const swy_request_params_t* params, core::Request** out);
    void drive_sends(EpState* s);
    void update_busy();
    /// The live op of @p kind that reply @p wire_id from @p src names, or null (rejected;
    /// logged unless @p what is null).
    Op* op_of_reply(tl::AmSource src, uint64_t wire_id, uint8_t kind, const char* what);
    void on_get_reply(tl::AmSource src, const uint8_t* data, size_t length);
    void on_atomic_reply(tl::AmSource src, const uint8_t* data, size_t length);
    void on_flush_ack(tl::AmSource src, const uint8_t* data, size_t length);

    // ---- target (rma_target.cpp) ----
    PeerState* peer_state(tl::AmSource src);
    void on_put(tl::AmSource src, const uint8_t* data, size_t length);
    void on_get(tl::AmSource src, const uint8_t* data, size_t length);
    void on_atomic(tl::AmSource src, const uint8_t* data, size_t length);
    void on_flush(tl::AmSource src, const uint8_t* data, size_t length);
    /// Execute or queue a reply-producing item for @p p, keeping arrival order.
    void enqueue(PeerState* p, Reply&& item);
    /// Send (and execute) what @p p has queued, in order, until credits run out.
    unsigned drain(PeerState* p);
    /// Execute / answer @p item; false when the reply lane has no credit (call again).
    bool run(PeerState* p, Reply& item);
    /// Write a validated put; an invalid one is remembered for the next flush ack.
    void execute_put(PeerState* p, const PutHeader& h, const uint8_t* payload, size_t length);
    void remember_error(PeerState* p, Status why);

    core::Worker* worker_;
    bool busy_ = false;
    uint64_t refused_ = 0;
    uint64_t placed_bytes_ = 0;
    uint64_t next_flush_id_ = 1;
    /// First failure of an endpoint that died with unflushed operations, for the next
    /// worker flush (endpoint_failed()).
    Status lost_error_ = Status::kOk;
    std::unordered_map<const core::Endpoint*, std::unique_ptr<EpState>> eps_;
    /// Live ops that hold a request, by request index (the pool is never shrunk).
    std::vector<Op*> op_of_request_;
    std::unordered_map<uint64_t, Op*> flushes_;                       // flush ops by id
    std::unordered_map<uint32_t, std::unique_ptr<PeerState>> peers_;  // target side, by source
    size_t sending_eps_ = 0;    // initiator: eps with ops waiting for credits
    size_t backlog_peers_ = 0;  // target: peers with queued replies
    /// Endpoint states that failed: kept until the next progress, since code that ran a
    /// callback (which may close the endpoint) may still hold a pointer to one.
    std::vector<std::unique_ptr<EpState>> dead_eps_;
    std::vector<EpState*> scratch_eps_;
    std::vector<Op*> free_ops_;
    std::vector<PeerState*> scratch_peers_;
};

inline bool Engine::direct_allowed(const core::Endpoint* ep) { return !ep->rma_fence_pending; }

}  // namespace swy::rma
