// Wire formats of the tcp transport: the frame header every message on a connection starts
// with, the hello that opens a connection, and the tcp section of a worker address.
//
// Everything a peer sends is untrusted: the decoders below look only at the bytes they are
// given, validate every length before using it, and are written to be fuzzed
// (test/unit/tcp_frame_test.cpp runs them against every truncation and random bytes).
// Multi-byte fields are little-endian on the wire (encoded byte by byte, so the layout does not
// depend on the host), except ports, which stay in network order as in a sockaddr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transports/transport.h"

namespace swy::tl::tcp {

// ---- Frames ---------------------------------------------------------------------------------

/// Frame header: {uint16 magic, uint8 version, uint8 am_id, uint32 length, uint64 read},
/// 16 bytes, followed by `length` bytes (the active message's header and payload).
/// `read` (version 2) is how many data bytes of the other direction the sender had taken out
/// of its socket when it wrote the frame: data bytes are those of every frame except the
/// handshake's (hello, hello-ack, proof, proceed, redirect), in order. A reply thus tells
/// the other side that its messages arrived, which completes sends waiting for delivery
/// without asking the kernel (SIOCOUTQ) for the acknowledgement (tcp_liveness.cpp).
inline constexpr size_t kFrameHeaderSize = 16;
inline constexpr uint16_t kFrameMagic = 0x5759;  // "YW" on the wire: 'Y' 'W' little-endian
inline constexpr uint8_t kFrameVersion = 2;
/// Largest frame body (LaneAttr::max_message). The receiver refuses anything longer before
/// reserving memory for it, so a peer cannot make us allocate more than this per connection.
inline constexpr uint32_t kMaxFrameBody = 256 * 1024;

/// Internal control frames (never delivered to the sink). The worker's AM ids are small
/// (protocols/wire.h), so the top id is free, as in the shm transport.
///
/// Handshake (hello version 3), three control frames before anything else on a connection:
///   connector -> acceptor   kHello     {kind, version, uint64 uid, client nonce}
///   acceptor  -> connector  kHelloAck  {kind, version, flags, uint64 uid, server nonce,
///                                       [server proof: flags & kHelloAckProof]}
///   connector -> acceptor   kProof     {kind, version, client proof}   (keyed only)
///   acceptor  -> connector  kProceed or kRedirect             (only if flags & kHelloAckHold)
/// Proofs are common::auth_proof over both nonces with the context hello_context(client uid,
/// server uid, hold flag) and the labels kClientLabel / kServerLabel. With a key (SWY_AUTH_KEY
/// or a bootstrap's per-job key) neither side delivers a frame or sends a data frame before
/// the other's proof checked out; without one the nonces are still exchanged (one format), the
/// acceptor answers without a proof and the connector sends no kProof. docs/security-tcp.md.
///
/// Crossed connects (one connection per pair, tcp_pairing.cpp): an acceptor that is itself
/// connecting to the connector, and has the lower uid, answers with kHelloAckHold ("wait for
/// my verdict") instead of deciding anything on the strength of an unproven hello. Only once
/// the connector's proof checked out does it send the verdict: kRedirect (use my connection to
/// you; this one closes) or kProceed. A verdict on a connection that was not held, or before
/// the acceptor's proof checked out, is refused: no pairing decision ever rests on an
/// unauthenticated peer.
inline constexpr AmId kTcpControlAm = 0xFF;
enum class TcpControl : uint8_t {
    kHello = 1,     ///< connector's opening frame
    kGoodbye = 2,   ///< the connecting side's endpoint is going away: the close that follows
                    ///< is orderly, not a failure
    kHelloAck = 3,  ///< acceptor's answer to a hello
    kProof = 4,     ///< connector's proof (keyed handshakes only)
    /// After the handshake: the sender's own endpoint to this peer uses this connection too
    /// (one connection per pair of workers), so the connection stays open until both sides
    /// said goodbye.
    kAttach = 5,
    /// Acceptor's verdict on a held connection (kHelloAckHold), sent once the connector
    /// proved the key, from the worker with the lower uid when both connected to each other
    /// at once: "use the connection I made to you"; the acceptor then closes this one.
    kRedirect = 6,
    /// Acceptor's verdict on a held connection when it keeps it after all (its own connection
    /// to the connector is gone by then): data may flow.
    kProceed = 7,
};
inline constexpr uint8_t kHelloVersion = 4;  ///< 4: frame headers carry `read` (version 2)
/// A control frame of the handshake (sent ahead of the data, outside FrameHeader::read's
/// count)? @p body / @p length: the frame's body.
inline bool is_handshake_control(const uint8_t* body, size_t length) {
    if (length < 1) return false;
    switch (static_cast<TcpControl>(body[0])) {
        case TcpControl::kHello:
        case TcpControl::kHelloAck:
        case TcpControl::kProof:
        case TcpControl::kRedirect:
        case TcpControl::kProceed: return true;
        case TcpControl::kGoodbye:
        case TcpControl::kAttach: return false;
    }
    return false;
}
inline constexpr size_t kNonceSize = 16;  ///< common::kAuthNonceSize
inline constexpr size_t kProofSize = 32;  ///< common::kAuthProofSize
inline constexpr size_t kHelloSize = 1 + 1 + 8 + kNonceSize;
inline constexpr uint8_t kHelloAckProof = 1;  ///< flags bit: a server proof follows
/// flags bit: send no data frame before the acceptor's verdict (kProceed or kRedirect)
inline constexpr uint8_t kHelloAckHold = 2;
inline constexpr size_t kHelloAckSize = 1 + 1 + 1 + 8 + kNonceSize;  ///< without the proof
inline constexpr size_t kHelloAckMaxSize = kHelloAckSize + kProofSize;
inline constexpr size_t kProofFrameSize = 1 + 1 + kProofSize;
inline constexpr const char* kClientLabel = "swy-tcp-client";
inline constexpr const char* kServerLabel = "swy-tcp-server";
inline constexpr size_t kHelloContextSize = 17;

struct FrameHeader {
    uint16_t magic;
    uint8_t version;
    uint8_t am_id;
    uint32_t length;
    uint64_t read;  ///< data bytes of ours the peer had read when it wrote this frame
};

enum class FrameCheck : uint8_t {
    kOk,        ///< a valid header; `length` bytes of body follow
    kNeedMore,  ///< fewer than kFrameHeaderSize bytes available
    kBadMagic,
    kBadVersion,
    kTooLong,  ///< length > kMaxFrameBody
};

/// @p read: data bytes of the other direction taken out of the socket so far (FrameHeader).
inline void encode_frame_header(uint8_t* out, AmId am_id, uint32_t length, uint64_t read = 0) {
    out[0] = static_cast<uint8_t>(kFrameMagic & 0xFF);
    out[1] = static_cast<uint8_t>(kFrameMagic >> 8);
    out[2] = kFrameVersion;
    out[3] = am_id;
    out[4] = static_cast<uint8_t>(length);
    out[5] = static_cast<uint8_t>(length >> 8);
    out[6] = static_cast<uint8_t>(length >> 16);
    out[7] = static_cast<uint8_t>(length >> 24);
    for (int i = 0; i < 8; ++i)
        out[8 + i] = static_cast<uint8_t>(read >> (8 * i));
}

/// Validates magic, version and length of the header at @p data (@p avail bytes readable) and
/// fills @p out only on kOk. Reads at most kFrameHeaderSize bytes, never beyond @p avail; a
/// bad magic or version is reported as soon as its bytes are there (else kNeedMore).
inline FrameCheck decode_frame_header(const uint8_t* data, size_t avail, FrameHeader* out) {
    if (data == nullptr || avail == 0) return FrameCheck::kNeedMore;
    // Magic and version are judged as soon as they are there: garbage (or a version 1
    // peer's 8-byte header) shorter than a whole header is refused at once, not waited on.
    if (data[0] != (kFrameMagic & 0xFF)) return FrameCheck::kBadMagic;
    if (avail < 2) return FrameCheck::kNeedMore;
    const uint16_t magic = static_cast<uint16_t>(data[0] | (data[1] << 8));
    if (magic != kFrameMagic) return FrameCheck::kBadMagic;
    if (avail < 3) return FrameCheck::kNeedMore;
    if (data[2] != kFrameVersion) return FrameCheck::kBadVersion;
    if (avail < kFrameHeaderSize) return FrameCheck::kNeedMore;
    const uint32_t length = uint32_t{data[4]} | (uint32_t{data[5]} << 8) |
                            (uint32_t{data[6]} << 16) | (uint32_t{data[7]} << 24);
    if (length > kMaxFrameBody) return FrameCheck::kTooLong;
    out->magic = magic;
    out->version = data[2];
    out->am_id = data[3];
    out->length = length;
    uint64_t read = 0;
    for (int i = 0; i < 8; ++i)
        read |= uint64_t{data[8 + i]} << (8 * i);
    out->read = read;
    return FrameCheck::kOk;
}

namespace wire_detail {
inline void put_u64(uint8_t* out, uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t get_u64(const uint8_t* in) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= uint64_t{in[i]} << (8 * i);
    return v;
}
}  // namespace wire_detail

/// Body of a hello frame (kHelloSize bytes): control kind, version, connector's uid, nonce.
inline void encode_hello(uint8_t* out, uint64_t uid, const uint8_t* nonce) {
    out[0] = static_cast<uint8_t>(TcpControl::kHello);
    out[1] = kHelloVersion;
    wire_detail::put_u64(out + 2, uid);
    std::memcpy(out + 10, nonce, kNonceSize);
}

/// False unless @p data is exactly a hello body of our version with a non-zero uid; fills
/// @p uid and @p nonce (kNonceSize bytes) only then.
inline bool decode_hello(const uint8_t* data, size_t length, uint64_t* uid, uint8_t* nonce) {
    if (data == nullptr || length != kHelloSize ||
        data[0] != static_cast<uint8_t>(TcpControl::kHello) || data[1] != kHelloVersion) {
        return false;
    }
    const uint64_t v = wire_detail::get_u64(data + 2);
    if (v == 0) return false;
    *uid = v;
    std::memcpy(nonce, data + 10, kNonceSize);
    return true;
}

/// The acceptor's answer, decoded.
struct HelloAck {
    uint64_t uid = 0;
    uint8_t nonce[kNonceSize] = {};
    bool has_proof = false;
    bool hold = false;  ///< kHelloAckHold: wait for the acceptor's verdict
    uint8_t proof[kProofSize] = {};
};

/// Body of a hello answer: kHelloAckSize bytes, or kHelloAckMaxSize with @p proof (non-null);
/// @p hold sets kHelloAckHold. Returns the length written.
inline size_t encode_hello_ack(uint8_t* out, uint64_t uid, const uint8_t* nonce,
                               const uint8_t* proof, bool hold = false) {
    out[0] = static_cast<uint8_t>(TcpControl::kHelloAck);
    out[1] = kHelloVersion;
    out[2] =
        static_cast<uint8_t>((proof != nullptr ? kHelloAckProof : 0) | (hold ? kHelloAckHold : 0));
    wire_detail::put_u64(out + 3, uid);
    std::memcpy(out + 11, nonce, kNonceSize);
    if (proof == nullptr) return kHelloAckSize;
    std::memcpy(out + kHelloAckSize, proof, kProofSize);
    return kHelloAckMaxSize;
}

/// False unless @p data is exactly a hello answer of our version: known flags only, a length
/// that matches them, a non-zero uid. Fills @p out only on success.
inline bool decode_hello_ack(const uint8_t* data, size_t length, HelloAck* out) {
    if (data == nullptr || length < kHelloAckSize ||
        data[0] != static_cast<uint8_t>(TcpControl::kHelloAck) || data[1] != kHelloVersion ||
        (data[2] & ~(kHelloAckProof | kHelloAckHold)) != 0) {
        return false;
    }
    const bool has_proof = (data[2] & kHelloAckProof) != 0;
    if (length != (has_proof ? kHelloAckMaxSize : kHelloAckSize)) return false;
    const uint64_t v = wire_detail::get_u64(data + 3);
    if (v == 0) return false;
    out->uid = v;
    std::memcpy(out->nonce, data + 11, kNonceSize);
    out->has_proof = has_proof;
    out->hold = (data[2] & kHelloAckHold) != 0;
    if (has_proof) std::memcpy(out->proof, data + kHelloAckSize, kProofSize);
    return true;
}

/// Body of the connector's proof frame (kProofFrameSize bytes).
inline void encode_proof(uint8_t* out, const uint8_t* proof) {
    out[0] = static_cast<uint8_t>(TcpControl::kProof);
    out[1] = kHelloVersion;
    std::memcpy(out + 2, proof, kProofSize);
}

/// False unless @p data is exactly a proof body of our version; fills @p proof then.
inline bool decode_proof(const uint8_t* data, size_t length, uint8_t* proof) {
    if (data == nullptr || length != kProofFrameSize ||
        data[0] != static_cast<uint8_t>(TcpControl::kProof) || data[1] != kHelloVersion) {
        return false;
    }
    std::memcpy(proof, data + 2, kProofSize);
    return true;
}

/// The context both proofs are bound to: {uint64 client uid, uint64 server uid, uint8 hold},
/// so a proof made for one pair of workers is worthless for any other, and the acceptor's
/// "wait for my verdict" (kHelloAckHold) cannot be added or stripped by anyone without the key.
inline void hello_context(uint64_t client_uid, uint64_t server_uid, uint8_t* out,
                          bool hold = false) {
    wire_detail::put_u64(out, client_uid);
    wire_detail::put_u64(out + 8, server_uid);
    out[16] = hold ? 1 : 0;
}

// ---- Address section ------------------------------------------------------------------------

/// One listening address of a worker.
struct TcpAddressEntry {
    uint8_t family = 0;   ///< 4 or 6
    uint16_t port = 0;    ///< host byte order
    uint8_t ip[16] = {};  ///< IPv4: the first 4 bytes; network byte order
};

/// Section layout: {uint8 version, uint8 count, count × entry}; entry: {uint8 family (4|6),
/// uint16 port (big-endian), 4 or 16 address bytes}.
inline constexpr uint8_t kTcpAddressVersion = 1;
inline constexpr size_t kMaxTcpAddresses = 32;

/// Encodes at most kMaxTcpAddresses entries (the rest are dropped).
std::vector<uint8_t> encode_tcp_address(const std::vector<TcpAddressEntry>& entries);

/// Validates version, count (1..kMaxTcpAddresses), every family, port (non-zero) and the exact
/// total length; false on anything unexpected, and @p out is then left empty.
bool decode_tcp_address(const uint8_t* data, size_t length, std::vector<TcpAddressEntry>* out);

/// True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool is_loopback(const TcpAddressEntry& e);

}  // namespace swy::tl::tcp
