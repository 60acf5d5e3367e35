// Wire formats of the protocol layer: active-message ids and their headers.
//
// Every header is a plain struct with explicit sizes, static_asserted, little-endian as the
// host (shm and self never leave the machine; the tcp transport will add its own framing).
// Decoders validate every length against what was received before reading a field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transports/transport.h"

namespace swy::proto {

/// Active-message ids used by the worker (transports reserve 0xF0 and above).
enum AmIdValue : tl::AmId {
    kAmEagerOnly = 1,      ///< whole message in one packet: EagerOnlyHeader + payload
    kAmEagerSyncOnly = 2,  ///< same, synchronous: EagerSyncHeader + payload
    kAmEagerFirst = 3,     ///< first fragment: EagerFirstHeader + payload
    kAmEagerMiddle = 4,    ///< later fragment: EagerMiddleHeader + payload
    kAmSyncAck = 5,        ///< receiver matched a synchronous send: AckHeader
    kAmRndvRts = 6,        ///< rendezvous request to send: RtsHeader
    kAmRndvAts = 7,        ///< rendezvous done by the receiver: AckHeader (status)
    kAmRndvRtr = 8,        ///< receiver ready: RtrHeader (put or pipeline)
    kAmRndvFin = 9,        ///< sender finished a put: AckHeader (id = receive request)
    kAmRndvData = 10,      ///< pipeline fragment: RndvDataHeader + payload
    // One-sided operations executed by the target (src/rma/; headers in rma/rma_wire.h).
    kAmRmaPut = 11,          ///< write at the target
    kAmRmaGet = 12,          ///< read request
    kAmRmaGetReply = 13,     ///< read data back to the initiator
    kAmRmaAtomic = 14,       ///< atomic request
    kAmRmaAtomicReply = 15,  ///< atomic result back to the initiator
    kAmRmaFlush = 16,        ///< flush request: answered after every earlier operation
    kAmRmaFlushAck = 17,     ///< flush answer (carries the first error since the last flush)
    kAmRmaReserved = 18,     ///< 18-19 reserved for one-sided operations
    // Active messages (src/protocols/am/; headers in protocols/am/am_wire.h).
    kAmUserEager = 20,     ///< a whole active message: AmEagerHeader + user header + data
    kAmUserRts = 21,       ///< a rendezvous active message: RTS + user header
    kAmUserReserved = 22,  ///< 22-23 reserved for active messages
    kAmMax = 24,
};

struct EagerOnlyHeader {
    uint64_t tag;
};
static_assert(sizeof(EagerOnlyHeader) == 8);

struct EagerSyncHeader {
    uint64_t tag;
    uint64_t sender_request;  ///< id echoed in the ack
};
static_assert(sizeof(EagerSyncHeader) == 16);

struct EagerFirstHeader {
    uint64_t tag;
    uint64_t total_length;
    uint64_t sender_request;  ///< id echoed in the ack (0 if not synchronous)
    uint32_t message_id;      ///< per sending lane, increments per fragmented message
    uint32_t flags;           ///< kEagerFlagSync
};
static_assert(sizeof(EagerFirstHeader) == 32);
inline constexpr uint32_t kEagerFlagSync = 1;

struct EagerMiddleHeader {
    uint64_t offset;
    uint32_t message_id;
    uint32_t reserved;
};
static_assert(sizeof(EagerMiddleHeader) == 16);

struct AckHeader {
    uint64_t sender_request;
    int32_t status;
    uint32_t reserved;
};
static_assert(sizeof(AckHeader) == 16);

/// Rendezvous request: the sender's buffer, reachable with process_vm_readv (or RDMA READ
/// with rkey). No pid travels: CMA reaches only the process the lane verified
/// (tl::Interface::sender_pid), so an address can only ever name the sender's own memory.
struct RtsHeader {
    uint64_t tag;
    uint64_t sender_request;
    uint64_t total_length;
    uint64_t address;
    int32_t reserved0;  ///< 0 (was a pid, which a receiver must never take from the wire)
    uint32_t scheme;    ///< RndvScheme the sender's selector chose
    uint32_t rkey;      ///< kGetKeyed: remote key of the sender's registered buffer
    uint32_t reserved;
};
static_assert(sizeof(RtsHeader) == 48);

/// kGet/kPut move data by zero-copy without remote keys (the lane's verified peer is the key,
/// e.g. CMA), kGetKeyed/kPutKeyed by zero-copy with the rkey in the header (e.g. RDMA
/// READ/WRITE on verbs lanes). The values are on the wire: never renumber them.
enum class RndvScheme : uint32_t {
    kGet = 0,
    kPut = 1,
    kPipeline = 2,
    kGetKeyed = 3,
    kPutKeyed = 4
};
inline constexpr uint32_t kRndvSchemeMax = 4;

/// Receiver's answer for put and pipeline: where and how much (clamped to its buffer).
struct RtrHeader {
    uint64_t sender_request;
    uint64_t receive_request;
    uint64_t address;   ///< receive buffer (put)
    uint64_t length;    ///< bytes to move: min(message, receive buffer)
    int32_t reserved0;  ///< 0 (no pid on the wire: the sender's lane knows the receiver)
    uint32_t scheme;    ///< RndvScheme: kPut or kPipeline
    int32_t status;     ///< kOk or kMessageTruncated: the sender completes with it
    uint32_t split;     ///< 1: a split GET: the sender puts [offset, offset+length)
    uint64_t offset;    ///< where in the message the sender's part starts
    uint32_t rkey;      ///< kPutKeyed: remote key of the registered receive buffer
    uint32_t reserved;
};
static_assert(sizeof(RtrHeader) == 64);

struct RndvDataHeader {
    uint64_t receive_request;
    uint64_t offset;
};
static_assert(sizeof(RndvDataHeader) == 16);

/// Copy a header out of a received packet; false if the packet is too short.
template <typename Header>
inline bool read_header(const uint8_t* data, size_t length, Header* out) {
    if (length < sizeof(Header)) return false;
    std::memcpy(out, data, sizeof(Header));
    return true;
}

}  // namespace swy::proto
