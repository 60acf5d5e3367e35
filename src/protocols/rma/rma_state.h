// State of the one-sided message path, shared by the initiator (rma_engine.cpp) and target
// (rma_target.cpp) halves of rma::Engine. Internal to src/protocols/rma/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/request.h"
#include "datatype/data_view.h"
#include "protocols/rma/rma_engine.h"

namespace swy::rma {

/// What an initiator op is.
enum class OpKind : uint8_t { kPut, kGet, kAtomic, kFlush, kWorkerFlush };

/// One operation started at the initiator, from start to its completion.
struct Engine::Op {
    OpKind kind = OpKind::kPut;
    core::Request* request = nullptr;  ///< null: internal (a fence's flush, a worker flush's part)
    EpState* ep = nullptr;             ///< null for a worker flush
    uint64_t seq = 0;                  ///< start order on its endpoint
    KeyIdentity key;
    uint64_t address = 0;
    dt::DataView view;  ///< put: source; get: destination
    size_t done = 0;    ///< put: bytes handed to the lane; get: bytes arrived
    bool request_sent = false;
    // atomic
    uint8_t atomic_op = 0;
    uint8_t size = 0;
    uint64_t operand = 0;
    uint64_t compare = 0;
    void* result = nullptr;
    // flush
    uint64_t flush_id = 0;
    bool acked = false;
    Status status = Status::kOk;  ///< flush: first error so far
    Op* parent = nullptr;         ///< a worker flush this ep flush is part of
    size_t parts_left = 0;        ///< worker flush: ep flushes still running
    bool queued = false;          ///< on its endpoint's to_send queue
    // the endpoint's list of live ops, in start order
    Op* prev = nullptr;
    Op* next = nullptr;
};

/// Initiator state of one endpoint.
struct Engine::EpState {
    core::Endpoint* ep = nullptr;
    Op* head = nullptr;  ///< live ops, oldest first
    Op* tail = nullptr;
    std::deque<Op*> to_send;  ///< ops with something not yet on the lane, in start order
    uint64_t next_seq = 1;
    /// Every message-path op with seq <= this is known complete at the target (a flush).
    uint64_t remote_done_seq = 0;
    /// The last op started before the most recent fence: direct operations wait for it.
    uint64_t fence_seq = 0;
    /// First error learnt outside a user flush (a fence's flush, record_error), for the next.
    Status pending_error = Status::kOk;
    bool sending = false;  ///< counted in Engine::sending_eps_
};

/// A reply-producing item at the target, queued while the peer's lane has no credit (or
/// others wait before it), so that everything a peer asked is answered in arrival order.
struct Engine::Reply {
    enum class Kind : uint8_t { kGetData, kAtomic, kFlushAck, kPut } kind = Kind::kGetData;
    uint64_t request = 0;      ///< initiator's id (get, fetching atomic) or flush id
    uint8_t* local = nullptr;  ///< get: validated source (re-validated before every packet)
    GetHeader get{};           ///< get: as asked (re-validated per packet)
    size_t offset = 0;         ///< get: bytes sent so far
    Status status = Status::kOk;
    bool executed = false;  ///< atomic: run (value, status set); flush: error taken
    uint64_t value = 0;     ///< atomic: the word before
    AtomicHeader atomic{};
    PutHeader put{};
    std::vector<uint8_t> bytes;  ///< put that arrived behind queued replies: its payload
};

/// Target state of one sender (AmSource) of requests.
struct Engine::PeerState {
    uint64_t peer_key = 0;  ///< Worker::peer_of at creation: a reused sender index is not it
    /// First error of a put or posted atomic since the last flush (told in the flush ack).
    Status first_error = Status::kOk;
    std::deque<Reply> backlog;
    bool counted = false;  ///< in Engine::backlog_peers_
    tl::AmSource src{};
};

}  // namespace swy::rma
