// Wire formats of the verbs transport: the connection handshake carried over a small TCP side
// channel, and the 32-bit immediate that every SEND carries instead of a header.
//
// Why a TCP side channel for wire-up: an RC QP needs the peer's QPN, PSN and GID before it can
// move to RTR, so each side must learn the other's numbers for every endpoint pair. The
// worker address cannot carry them (a QP per possible peer would be created in advance), and
// a UD QP for connection management would need its own retransmission. A TCP connection to
// the peer's verbs listener gives an ordered, reliable exchange, and kept open for the life of
// the connection it reports a dead peer (EOF without a goodbye) long before RC's retry
// timeouts would. See docs/verbs.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace swy::tl::verbs {

inline constexpr uint32_t kCmMagic = 0x56595753;  // "SWYV"
/// 2: a nonce and a proof follow the connection fields (authentication with a shared key).
/// 3: join fields (one RC connection serves both directions of a pair), credits that grow.
/// 4: the redirect answer (crossing connects end on one connection).
inline constexpr uint8_t kCmVersion = 4;

/// kRedirect answers a request instead of kReply when the two workers connected to each other
/// at once and the answering one wins the tie-break (the lower uid): no QP was made for the
/// request; qpn names the winner's QP of the connection it made to the requester, which the
/// requester's endpoint is to use instead (verbs_crossing.cpp).
enum class CmType : uint8_t { kRequest = 1, kReply = 2, kBye = 3, kRedirect = 4 };

/// One side's half of an RC connection: where its QP is and how the peer may send to it.
struct CmMessage {
    uint32_t magic;
    uint8_t version;
    uint8_t type;       ///< CmType
    uint8_t mtu;        ///< enum ibv_mtu of the sender's port (1..5)
    uint8_t is_global;  ///< 1: route with the GID (RoCE), 0: with the LID (InfiniBand)
    uint64_t uid;       ///< sender's worker uid
    uint32_t qpn;       ///< 24 bits
    uint32_t psn;       ///< 24 bits: first packet sequence number the sender will send
    uint8_t gid[16];
    uint16_t lid;
    uint16_t reserved;
    uint32_t rx_credits;   ///< receive buffers the sender posted for this connection
    uint64_t credit_addr;  ///< where the peer RDMA-writes its freed-buffer counter
    uint32_t credit_rkey;
    uint32_t max_message;  ///< size of each receive buffer
    /// Request: nonzero asks to share the connection the two workers already have, whose QP on
    /// the receiver's side has this number (the receiver connected it, the sender accepted it)
    /// instead of making a new one. Reply: nonzero agrees (the number of that QP); zero: a new
    /// connection was made from the request as usual.
    uint32_t join_qpn;
    /// With join_qpn: the QP number of the sender's side of that connection (the receiver
    /// checks that its QP join_qpn talks to exactly this QP).
    uint32_t join_peer_qpn;
    /// Fresh random bytes of the side that sent this message (the request's bind the
    /// reply's proof to this handshake).
    uint8_t nonce[16];
    /// With a shared key (SWY_AUTH_KEY or the PMIx job key): HMAC-SHA256 over the fields above
    /// (kCmSignedBytes), see verbs_conn.cpp; all zero without a key.
    uint8_t proof[32];
};
static_assert(sizeof(CmMessage) == 120);
/// The bytes of a CmMessage a proof covers: every connection field, up to the nonce.
inline constexpr size_t kCmSignedBytes = 72;
static_assert(offsetof(CmMessage, nonce) == kCmSignedBytes);

/// Validate a received handshake message; @return null if valid, else the reason.
inline const char* validate(const CmMessage& m, CmType expected) {
    if (m.magic != kCmMagic) return "not a Switchyard verbs handshake (bad magic)";
    if (m.version != kCmVersion) return "unsupported verbs handshake version";
    if (m.type != static_cast<uint8_t>(expected)) return "unexpected handshake message type";
    if (m.uid == 0) return "handshake without a worker id";
    if (m.qpn == 0 || m.qpn > 0xFFFFFF || m.psn > 0xFFFFFF) return "QPN or PSN out of range";
    if (m.mtu < 1 || m.mtu > 5) return "invalid path MTU";
    if (m.rx_credits == 0 || m.rx_credits > 0x7FFF) return "receive credits out of range";
    if (m.max_message < 64) return "receive buffer size too small";
    if (m.join_qpn > 0xFFFFFF || m.join_peer_qpn > 0xFFFFFF) return "join QPN out of range";
    if ((m.join_qpn == 0) != (m.join_peer_qpn == 0)) return "join QPNs must come in pairs";
    return nullptr;
}

/// Validate the answer to our request: a reply, or a redirect (which carries no join fields:
/// it names the connection to use in qpn). @return null if valid, else the reason.
inline const char* validate_answer(const CmMessage& m) {
    const bool redirect = m.type == static_cast<uint8_t>(CmType::kRedirect);
    const char* bad = validate(m, redirect ? CmType::kRedirect : CmType::kReply);
    if (bad == nullptr && redirect && m.join_qpn != 0) return "a redirect with join fields";
    return bad;
}

/// The credit word a receiver RDMA-writes into its sender: the cumulative count of consumed
/// messages (low 16 bits) and, above bit 32, how many credits it grants now (grants only
/// grow: a receiver lends a busy sender more buffers, up to SWY_VERBS_RX_CREDITS).
inline constexpr uint64_t encode_credit_word(uint16_t freed, uint16_t credits) {
    return (uint64_t{credits} << 32) | freed;
}
inline constexpr uint16_t credit_word_freed(uint64_t w) { return static_cast<uint16_t>(w); }
inline constexpr uint16_t credit_word_credits(uint64_t w) { return static_cast<uint16_t>(w >> 32); }

/// The immediate of every SEND: the active-message id and the sender's cumulative count of
/// our messages it has consumed and re-posted (mod 2^16), so credits come back for free on
/// any reverse traffic.
inline constexpr uint32_t encode_imm(uint8_t am_id, uint16_t freed) {
    return (uint32_t{am_id} << 24) | freed;
}
inline constexpr uint8_t imm_am_id(uint32_t imm) { return static_cast<uint8_t>(imm >> 24); }
inline constexpr uint16_t imm_freed(uint32_t imm) { return static_cast<uint16_t>(imm); }

/// Transport-internal active message: orderly goodbye, sent through the QP so that it arrives
/// after everything sent before it, when the sender's endpoint on the connection goes away
/// (at most once per side and connection). It uses the one receive buffer per connection that
/// is never granted as a credit. (Credits return in immediates or by RDMA WRITE, never by a
/// message, so returning credits never needs a credit.)
inline constexpr uint8_t kAmBye = 0xF2;

/// The verbs section of a worker address: how to reach the peer's handshake listener and
/// which device it uses (so a tool can tell), nothing per connection.
struct AddressSection {
    uint8_t version;
    uint8_t family;        ///< 4 or 6
    uint16_t port;         ///< handshake listener port (host order)
    uint8_t ip[16];        ///< listener address (IPv4 in the first 4 bytes)
    uint8_t gid[16];       ///< the port's GID (diagnostics)
    char device[16];       ///< device name, NUL padded (diagnostics)
    uint32_t max_message;  ///< size of each receive buffer: the largest SEND it accepts
    uint32_t rx_credits;   ///< receive buffers it posts per connection
};
static_assert(sizeof(AddressSection) == 60);

}  // namespace swy::tl::verbs
