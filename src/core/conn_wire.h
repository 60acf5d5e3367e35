// Wire format of the connection handshake that runs on a listener's socket (sockaddr
// connection establishment): each side sends one hello frame carrying its worker address, then
// the server sends a verdict frame (accept or reject). The socket is used for nothing else and
// is closed once the verdict is through.
//
// Everything a peer sends is untrusted: decode_conn_frame() looks only at the bytes it is
// given and checks magic, version, type and length before anything is used; the hello body is
// then validated as a worker address (decode_address). Layout, little-endian, 12 bytes:
//   uint32 magic "SWYH" | uint8 version | uint8 type | uint16 reserved (0) | uint32 body length
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swy::core {

inline constexpr size_t kConnFrameHeaderSize = 12;
inline constexpr uint32_t kConnMagic = 0x48595753;  // "SWYH" read as little-endian
inline constexpr uint8_t kConnVersion = 1;
/// Largest body accepted. A worker address is a few hundred bytes; the cap keeps a hostile
/// peer from making the listener buffer more than this per connection.
inline constexpr uint32_t kConnMaxBody = 16 * 1024;

enum class ConnFrameType : uint8_t {
    kHello = 1,   ///< body: the sender's worker address (swy_worker_get_address format)
    kAccept = 2,  ///< server → client, empty body: the server created its endpoint
    kReject = 3,  ///< server → client, empty body: the application rejected the request
};

struct ConnFrameHeader {
    ConnFrameType type = ConnFrameType::kHello;
    uint32_t length = 0;  ///< body bytes that follow the header
};

enum class ConnFrameCheck : uint8_t {
    kOk,        ///< a valid header; `length` bytes of body follow
    kNeedMore,  ///< fewer than kConnFrameHeaderSize bytes available
    kBad,       ///< not a handshake frame of ours; @p why says what is wrong
};

/// Header followed by @p length body bytes, ready to write.
std::vector<uint8_t> encode_conn_frame(ConnFrameType type, const void* body, size_t length);

/// Validate the header at @p data (@p avail bytes readable); fills @p out only on kOk, and
/// @p why (not null) on kBad. Never reads beyond @p avail. Verdict frames must have an empty
/// body, hellos a non-empty one of at most kConnMaxBody bytes.
ConnFrameCheck decode_conn_frame(const uint8_t* data, size_t avail, ConnFrameHeader* out,
                                 std::string* why);

}  // namespace swy::core
