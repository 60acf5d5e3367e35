// Transport interface: what the protocol layer may ask of a transport, and what a transport
// reports about itself. Transports never call protocols except through AmSink, the handler
// the worker registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/zcopy.h"

namespace swy::tl {

/// Active-message identifiers (the protocol layer defines their meaning in protocols/wire.h).
using AmId = uint8_t;

/// Cost of one operation on n bytes: fixed_s + n × per_byte_s (seconds).
struct OpCost {
    double fixed_s = 0;
    double per_byte_s = 0;
    double at(size_t n) const { return fixed_s + per_byte_s * static_cast<double>(n); }
};

/// What a lane's operations cost, in the terms the protocol selector models them with
/// (src/protocols/select.cpp; docs/protocols.md, "Where a cost comes from"). Each transport
/// fills these from the context's cost figures with its own cost function
/// (<transport>/<transport>_costs.h), so a lane's table is computed from that lane's figures
/// and nothing else. Fields of operations a lane does not offer stay 0 and are never read.
struct LaneCosts {
    /// One-way latency of a message: from the sender's call to the receiver's handler.
    double latency_s = 0;
    /// CPU time every message costs beyond its bytes, whichever way it is sent (shm: claiming,
    /// publishing and dispatching a cell; tcp: a system call on each side; verbs: posting and
    /// completing a work request). Control messages of a rendezvous cost this plus latency_s.
    double message_s = 0;
    /// An eager_short (PIO) message: fixed cost beyond message_s, and per byte everything
    /// from the sender's copy to the receiver's (both copies and the wire).
    OpCost am_short;
    /// One fragment of eager_bcopy or of the rendezvous pipeline: fixed cost beyond message_s
    /// (paid per fragment), and per byte from the sender's buffer to the receiver's.
    OpCost am_bcopy;
    /// The receiver's copy of a byte out of an unexpected-message buffer (eager messages that
    /// arrive before their receive is posted pay it; the selector weighs it by how often).
    double unexpected_copy_per_byte_s = 0;
    /// A zero-copy GET of n bytes, until the data is in the initiator's buffer (CMA: one
    /// process_vm_readv per chunk; RDMA: READ request and response).
    OpCost get_zcopy;
    /// A zero-copy PUT of n bytes, until the target may learn that it is done (CMA: the write
    /// and the flight of the FIN; RDMA: WRITE and its acknowledgement).
    OpCost put_zcopy;
    /// Registering (and later deregistering) n bytes for zero-copy, per side; 0 where the
    /// lane needs no registration (CMA).
    OpCost reg;
};

/// What one lane (transport endpoint) can do. Filled at connect time; never changes.
struct LaneAttr {
    const char* transport = "";
    uint32_t caps = 0;            ///< cap:: bits (transports/zcopy.h): what the lane can do
    bool pio = false;             ///< holds a dedicated PIO window (mapped cells it owns)
    uint32_t credits = 0;         ///< cells it may have in flight
    bool credits_shared = false;  ///< credits are shared with other senders
    size_t max_message = 0;       ///< largest header+payload of one am_send
    LaneCosts costs;              ///< what its operations cost (the selector reads only these)
    /// Why the lane has no zero-copy get/put (cap::kGetZcopy clear), in words for
    /// swy_ep_query, logs and swy-info ("" when it has).
    std::string zcopy_reason;
    bool rndv = false;  ///< rendezvous makes sense on this lane
    /// Largest header+payload of one PIO send when smaller than max_message (verbs: the QP's
    /// inline limit); 0: max_message.
    size_t pio_max_message = 0;
    /// Lanes with two tiers of PIO say what each endpoint got (verbs: inline in the work
    /// request, then cells of device memory; others leave these alone).
    size_t pio_inline_max = 0;  ///< largest header+payload sent inline (0: not such a lane)
    uint32_t pio_credits = 0;   ///< PIO sends in flight at once (device-memory cells); 0: credits
    size_t pio_dm_bytes = 0;    ///< device memory this endpoint holds (0: none)
    std::string pio_window;     ///< what it got and why, in words ("" for other lanes)
    /// A send the lane accepted can still be lost if the connection fails (a byte stream: the
    /// bytes sit in the kernel until the peer acknowledges them). The worker then completes
    /// a send only once Endpoint::acknowledged_bytes() passed its accepted_bytes() mark, and
    /// a failure fails what was not acknowledged (tcp; issue #18).
    bool confirms_delivery = false;
};

/// Where a received message came from: the interface and its per-interface sender index.
struct AmSource {
    uint16_t iface;
    uint16_t sender;
};

/// Interface::sender_key of a connection-oriented transport (tcp, verbs): the connection's
/// slot and generation. Never 0, and never equal for two uses of one slot.
inline uint64_t connection_key(uint16_t index, uint32_t generation) {
    return (uint64_t{generation} << 16 | index) + 1;
}

/// Callbacks from transports up to the worker.
class AmSink {
public:
    virtual ~AmSink() = default;
    /// One active message. @p data is valid only during the call.
    virtual void on_am(AmId id, AmSource src, const uint8_t* data, size_t length) = 0;
    /// The peer behind @p peer_key (see Interface::sender_key) on interface @p iface died or
    /// its connection was lost (called once per peer key). Only what that peer key carried
    /// fails: a network peer that claimed another worker's uid takes down nothing but its
    /// own connection.
    virtual void on_remote_failure(uint16_t iface, uint64_t peer_key, Status why) = 0;
    /// A sender closed its lane to us: anything it left half-sent can never complete, and its
    /// sender index may be reused by a new lane.
    virtual void on_sender_released(AmSource /*src*/) {}
    /// Make a wait blocked on the worker's event fd return: for a transport whose senders
    /// have no fd of their own to signal (self, sending from another thread of a
    /// multi-threaded worker while it sleeps). A system call: only for an armed receiver.
    virtual void wake() {}

    // Zero-copy receive, for transports that read a byte stream (tcp): the payload of a
    // message goes straight from the socket into memory the sink names, instead of through
    // the transport's receive buffer and on_am().
    /// Bytes of message header the transport must have before it may ask place_payload()
    /// about a message with this id; 0: such messages always go through on_am(). Asked once
    /// per id when the transport opens.
    virtual size_t placement_header(AmId /*id*/) const { return 0; }
    /// Where payload bytes [done, length) of a message from @p src go (@p hdr: its first
    /// placement_header(id) bytes; @p length: payload bytes after them). Asked before every
    /// read into the destination, so one that went away mid-message is never written.
    /// Null: done == 0: deliver the message through on_am() as usual; done > 0: the
    /// destination is gone and the transport drops the rest of the payload.
    virtual uint8_t* place_payload(AmId /*id*/, AmSource /*src*/, const uint8_t* /*hdr*/,
                                   size_t /*done*/, size_t /*length*/) {
        return nullptr;
    }
    /// All @p length payload bytes of a placed message are in place.
    virtual void on_am_placed(AmId /*id*/, AmSource /*src*/, const uint8_t* /*hdr*/,
                              size_t /*length*/) {}
};

/// A connection to one remote worker.
class Endpoint {
public:
    virtual ~Endpoint() = default;
    virtual const LaneAttr& attr() const = 0;
    /// Copy header + payload into one message slot of the peer. kNoResource when no credit
    /// is free now (retry after progress); kConnectionReset after the peer failed.
    /// Precondition: hdr_len + length <= attr().max_message.
    virtual Status am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                           size_t length) = 0;
    /// Writes exactly `length` payload bytes to `dst` (a mapped cell): how device memory is
    /// staged straight into the peer's cell with the memory type's copy routine.
    using PackFn = Status (*)(void* arg, uint8_t* dst, size_t length);

    /// Like am_send, with the payload produced by @p pack. If pack fails, nothing reaches the
    /// peer and its status is returned.
    virtual Status am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                                  size_t length) = 0;

    /// Unique id of the remote worker (as its address said; not a proof of identity).
    virtual uint64_t remote_uid() const = 0;
    /// The peer this lane sends to, in the form Interface::sender_key() gives for messages
    /// that peer sends us: a reply belongs to this lane only if the keys are equal.
    virtual uint64_t peer_key() const = 0;
    /// Tell the peer this endpoint is going away (releases its resources there). Best effort.
    virtual void disconnect() = 0;
    /// Lanes with attr().confirms_delivery: bytes accepted so far (a position in the lane's
    /// stream, read right after an am_send to mark where that message ends), and how far the
    /// peer acknowledged (never ahead of the truth). The caller waits for @p wanted (the
    /// highest mark it waits for): the lane asks its kernel (a system call) only when that may
    /// tell something new, and otherwise returns what it knew; until it knows @p wanted
    /// acknowledged (or the lane failed), its interface's arm() arranges for event_fd() to
    /// become readable when asking again is worth it, so a worker waiting for delivery may
    /// block instead of polling. Others: 0.
    virtual uint64_t accepted_bytes() const { return 0; }
    virtual uint64_t acknowledged_bytes(uint64_t /*wanted*/) { return 0; }
    /// The lane's zero-copy operations (transports/zcopy.h), or null if it has none. Lives as
    /// long as this endpoint.
    virtual ZcopyLane* zcopy() { return nullptr; }
    /// Process id of the peer as the transport verified it (shm: the peer's segment, opened
    /// through /proc/PID/fd, names that pid; self: this process); 0 when it cannot prove one
    /// (network transports). The only pid one-sided operations ever open /proc/PID/fd of.
    virtual int verified_pid() const { return 0; }
};

/// One transport instance inside a worker.
class Interface {
public:
    virtual ~Interface() = default;
    virtual const char* name() const = 0;
    /// Poll for incoming messages and deliver them to the sink; @return events processed.
    virtual unsigned progress() = 0;
    /// Bytes to put in the worker address so peers can connect (may be empty).
    virtual std::vector<uint8_t> address() const = 0;
    /// Connect to a remote worker described by its section of the address.
    /// @param want_pio    try to obtain a dedicated PIO lane
    virtual Status connect(uint64_t remote_uid, const uint8_t* section, size_t length,
                           bool want_pio, std::unique_ptr<Endpoint>* out, std::string* why) = 0;
    /// Lane to answer the sender of a received message (sync acks, rendezvous control).
    virtual Endpoint* reply_endpoint(uint16_t sender) = 0;
    /// Remote worker uid of a sender index, as the peer claimed it (0 if unknown). For logs
    /// and tools only: identity checks use sender_key().
    virtual uint64_t sender_uid(uint16_t sender) const = 0;
    /// Who stands behind a sender index, as far as this transport can vouch for it; 0 if
    /// unknown. Messages with equal keys (on one interface) come from one peer, and equal to
    /// Endpoint::peer_key() of a lane means "from the peer that lane sends to". shm and self:
    /// the peer worker's uid (only a process allowed to map our segment can send, and it
    /// could ptrace us anyway); tcp and verbs: the connection (slot and generation), so that
    /// what a network peer claims about itself never reaches beyond its own connection.
    virtual uint64_t sender_key(uint16_t sender) const = 0;
    /// Process id of a sender that the transport verified to be the process on the other end
    /// (shm: its segment was opened through /proc/PID/fd and names that pid and uid; self:
    /// this process). 0 when the transport cannot prove it (network transports): then no
    /// process_vm_readv/writev may be aimed at that sender. May map the sender's segment on
    /// first use (set-up cost, once per peer).
    virtual int sender_pid(uint16_t /*sender*/) { return 0; }
    /// File descriptor that becomes readable on incoming traffic once armed (-1: none). It
    /// must stop being readable once disarm() and progress() consumed what made it so: the
    /// worker's event fd is level-triggered, and an fd left readable makes every blocking
    /// loop spin.
    virtual int event_fd() const { return -1; }
    /// Arm for blocking; false if messages are already waiting. Armed means: a sender that
    /// delivers to us from now on makes event_fd() readable (at most once per arm is enough).
    /// Called again after false, or after a wake-up, only once disarm() ran.
    virtual bool arm() { return true; }
    /// End the armed state (after a wake-up, before the next progress, or after an arm()
    /// that returned false): senders stop signalling, and the wake-ups already signalled
    /// are consumed. Harmless when not armed.
    virtual void disarm() {}

    /// Whether the worker's poll loop must call progress() now. Not virtual, so an idle
    /// transport costs the loop a load and a branch instead of a call: a transport that knows
    /// when it has nothing to do (self: an empty queue) keeps it false meanwhile; one that
    /// must look to find out (shared memory, sockets, completion queues) leaves it true.
    bool wants_progress() const { return wants_progress_; }

protected:
    bool wants_progress_ = true;
};

}  // namespace swy::tl
