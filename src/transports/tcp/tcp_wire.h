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
#include <vector>

#include "transports/transport.h"

namespace swy::tl::tcp {

// ---- Frames ---------------------------------------------------------------------------------

/// Frame header: {uint16 magic, uint8 version, uint8 am_id, uint32 length}, 8 bytes, followed
/// by `length` bytes (the active message's header and payload).
inline constexpr size_t kFrameHeaderSize = 8;
inline constexpr uint16_t kFrameMagic = 0x5759;  // "YW" on the wire: 'Y' 'W' little-endian
inline constexpr uint8_t kFrameVersion = 1;
/// Largest frame body (LaneAttr::max_message). The receiver refuses anything longer before
/// reserving memory for it, so a peer cannot make us allocate more than this per connection.
inline constexpr uint32_t kMaxFrameBody = 256 * 1024;

/// Internal control frames (never delivered to the sink). The worker's AM ids are small
/// (protocols/wire.h), so the top id is free, as in the shm transport.
inline constexpr AmId kTcpControlAm = 0xFF;
enum class TcpControl : uint8_t {
    kHello = 1,    ///< first frame in each direction: {kind, uint8 version, uint64 uid}
    kGoodbye = 2,  ///< the connecting side's endpoint is going away: the close that follows
                   ///< is orderly, not a failure
};
inline constexpr uint8_t kHelloVersion = 1;
inline constexpr size_t kHelloSize = 1 + 1 + 8;

struct FrameHeader {
    uint16_t magic;
    uint8_t version;
    uint8_t am_id;
    uint32_t length;
};

enum class FrameCheck : uint8_t {
    kOk,          ///< a valid header; `length` bytes of body follow
    kNeedMore,    ///< fewer than kFrameHeaderSize bytes available
    kBadMagic,
    kBadVersion,
    kTooLong,     ///< length > kMaxFrameBody
};

inline void encode_frame_header(uint8_t* out, AmId am_id, uint32_t length) {
    out[0] = static_cast<uint8_t>(kFrameMagic & 0xFF);
    out[1] = static_cast<uint8_t>(kFrameMagic >> 8);
    out[2] = kFrameVersion;
    out[3] = am_id;
    out[4] = static_cast<uint8_t>(length);
    out[5] = static_cast<uint8_t>(length >> 8);
    out[6] = static_cast<uint8_t>(length >> 16);
    out[7] = static_cast<uint8_t>(length >> 24);
}

/// Validates magic, version and length of the header at @p data (@p avail bytes readable) and
/// fills @p out only on kOk. Reads at most kFrameHeaderSize bytes, never beyond @p avail.
inline FrameCheck decode_frame_header(const uint8_t* data, size_t avail, FrameHeader* out) {
    if (data == nullptr || avail < kFrameHeaderSize) return FrameCheck::kNeedMore;
    const uint16_t magic = static_cast<uint16_t>(data[0] | (data[1] << 8));
    if (magic != kFrameMagic) return FrameCheck::kBadMagic;
    if (data[2] != kFrameVersion) return FrameCheck::kBadVersion;
    const uint32_t length = uint32_t{data[4]} | (uint32_t{data[5]} << 8) |
                            (uint32_t{data[6]} << 16) | (uint32_t{data[7]} << 24);
    if (length > kMaxFrameBody) return FrameCheck::kTooLong;
    out->magic = magic;
    out->version = data[2];
    out->am_id = data[3];
    out->length = length;
    return FrameCheck::kOk;
}

/// Body of a hello frame (control kind, version, worker uid).
inline void encode_hello(uint8_t* out, uint64_t uid) {
    out[0] = static_cast<uint8_t>(TcpControl::kHello);
    out[1] = kHelloVersion;
    for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<uint8_t>(uid >> (8 * i));
}

/// False unless @p data is exactly a hello body of our version with a non-zero uid.
inline bool decode_hello(const uint8_t* data, size_t length, uint64_t* uid) {
    if (data == nullptr || length != kHelloSize ||
        data[0] != static_cast<uint8_t>(TcpControl::kHello) || data[1] != kHelloVersion) {
        return false;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{data[2 + i]} << (8 * i);
    if (v == 0) return false;
    *uid = v;
    return true;
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
