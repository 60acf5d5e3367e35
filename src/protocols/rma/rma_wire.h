// Wire formats of the one-sided message path (kAmRma* in protocols/wire.h): fixed-size
// headers, static_asserted, host byte order like every protocol header (protocols/wire.h).
//
// Requests name target memory by (slot, secret, address) exactly as the remote key said; the
// target checks all three against its key table (rma::validate_access) before a byte moves.
// Replies name the initiator's request by its wire id (Request::wire_id), which the
// initiator checks against its pool (generation) and the lane the reply came on.
//
// Decoders (decode_*) validate the length of what arrived before reading a field, and the
// version, op and size values before anyone acts on them.
#pragma once

#include <switchyard/rma.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "protocols/wire.h"

namespace swy::rma {

/// Version of these headers: a request with another version is refused (kMalformed).
inline constexpr uint8_t kRmaWireVersion = 1;

/// A put: the payload follows the header and goes to [address, address + payload length).
/// Each packet of a large put is a put of its own (address advances): packets are
/// independent, so nothing at the target waits for the rest of a message.
struct PutHeader {
    uint64_t secret;
    uint64_t address;
    uint32_t slot;
    uint8_t version;
    uint8_t reserved[3];
};
static_assert(sizeof(PutHeader) == 24);

/// A get: the target answers with GetReplyHeader packets (offset into the read) that carry
/// every byte of [address, address + length), or one packet with an error status.
struct GetHeader {
    uint64_t secret;
    uint64_t address;
    uint64_t length;
    uint64_t request;  ///< initiator's request wire id, echoed in the replies
    uint32_t slot;
    uint8_t version;
    uint8_t reserved[3];
};
static_assert(sizeof(GetHeader) == 40);

struct GetReplyHeader {
    uint64_t request;
    uint64_t offset;  ///< where the payload goes in the read
    int32_t status;   ///< kOk (payload follows) or the error (no payload; the get fails)
    uint32_t reserved;
};
static_assert(sizeof(GetReplyHeader) == 24);

/// An atomic on the size-byte word at address. request 0: posted (no reply; an error is
/// reported by the next flush), else fetching (AtomicReplyHeader with the old value).
struct AtomicHeader {
    uint64_t secret;
    uint64_t address;
    uint64_t operand;
    uint64_t compare;  ///< CSWAP only
    uint64_t request;
    uint32_t slot;
    uint8_t version;
    uint8_t op;    ///< swy_atomic_op_t, validated
    uint8_t size;  ///< 4 or 8, validated
    uint8_t reserved;
};
static_assert(sizeof(AtomicHeader) == 48);

struct AtomicReplyHeader {
    uint64_t request;
    uint64_t value;  ///< the word before the operation (low size bytes)
    int32_t status;
    uint32_t reserved;
};
static_assert(sizeof(AtomicReplyHeader) == 24);

/// Answered (FlushAckHeader, same id) after every request the target received before it.
struct FlushHeader {
    uint64_t id;
    uint8_t version;
    uint8_t reserved[7];
};
static_assert(sizeof(FlushHeader) == 16);

struct FlushAckHeader {
    uint64_t id;
    /// The first error a put or posted atomic from this peer met since the previous flush.
    int32_t status;
    uint32_t reserved;
};
static_assert(sizeof(FlushAckHeader) == 16);

/// True when @p op and @p size name an operation this version knows.
constexpr bool valid_atomic(uint8_t op, uint8_t size) {
    return op <= SWY_ATOMIC_OP_CSWAP && (size == 4 || size == 8);
}

/// Header of a request of this version: copied out of @p data when @p length holds it and
/// the version matches; false otherwise (the packet is malformed).
template <typename Header>
inline bool decode_request(const uint8_t* data, size_t length, Header* out) {
    if (!proto::read_header(data, length, out)) return false;
    return out->version == kRmaWireVersion;
}

}  // namespace swy::rma
