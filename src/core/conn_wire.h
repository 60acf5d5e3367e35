// Wire format of the connection handshake that runs on a listener's socket (sockaddr
// connection establishment). The socket is used for nothing else and is closed once the
// verdict is through. Version 2 reveals nothing of the server before it must: the server's
// worker address (pid, shared-memory fds, interface addresses) travels only in the accept,
// that is after the client proved the key (if the listener has one) and the application
// accepted the request.
//
//   client → server  kHello      client nonce (16 bytes)
//   server → client  kChallenge  server nonce (16) | uid commitment (32) | [server proof (32)]
//   client → server  kAddress    [client proof (32)] | client worker address
//   server → client  kAccept     server worker address          (application accepted)
//                or  kReject     empty                          (application rejected)
//
// The proofs are present exactly when the listener has a key (the challenge's length says
// which): server proof = proof(key, "server", nonces, "swy-listener" | commitment), client
// proof = proof(key, "client", nonces, "swy-listener" | client address) (common/auth.h), so a
// client checks the server before it sends its address, and the server checks the client
// (and that its address was not swapped) before the application hears of it. A keyed
// listener that gets no valid proof closes the connection without a verdict.
//
// The uid commitment = HMAC(client nonce | server nonce, "uid", nonces, server worker uid)
// lets a worker that receives a request while connecting elsewhere tell whether that request
// comes from the worker its own connection reached (the one-endpoint-per-pair rule,
// listener.h) without the server's uid itself going out before the accept: the uid is 64
// random bits and the nonces make the commitment different on every connection. The accept's
// address must then match the commitment.
//
// Everything a peer sends is untrusted: decode_conn_frame() looks only at the bytes it is
// given and checks magic, version, type and the body length each type allows before anything
// is used; the body decoders below check the rest (addresses through decode_address).
// Header layout, little-endian, 12 bytes:
//   uint32 magic "SWYH" | uint8 version | uint8 type | uint16 reserved (0) | uint32 body length
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/status.h"
#include "core/address.h"

namespace swy::core {

inline constexpr size_t kConnFrameHeaderSize = 12;
inline constexpr uint32_t kConnMagic = 0x48595753;  // "SWYH" read as little-endian
/// 2: challenge-response, the server's address only in the accept (1 sent it in a hello).
inline constexpr uint8_t kConnVersion = 2;
/// Largest body accepted. A worker address is a few hundred bytes; the cap keeps a hostile
/// peer from making the listener buffer more than this per connection.
inline constexpr uint32_t kConnMaxBody = 16 * 1024;

inline constexpr size_t kConnNonceSize = common::kAuthNonceSize;
inline constexpr size_t kConnProofSize = common::kAuthProofSize;
inline constexpr size_t kConnChallengeSize = kConnNonceSize + kConnProofSize;  ///< without key
inline constexpr size_t kConnKeyedChallengeSize = kConnChallengeSize + kConnProofSize;
static_assert(kConnNonceSize == 16 && kConnProofSize == 32, "the frame sizes above assume these");

enum class ConnFrameType : uint8_t {
    kHello = 1,      ///< client → server: the client's nonce
    kAccept = 2,     ///< server → client: the server's worker address
    kReject = 3,     ///< server → client, empty body: the application rejected the request
    kChallenge = 4,  ///< server → client: nonce, uid commitment, proof if keyed
    kAddress = 5,    ///< client → server: proof if keyed, then the client's worker address
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
/// @p why (not null) on kBad. Never reads beyond @p avail. Body lengths allowed: hello
/// exactly kConnNonceSize; challenge kConnChallengeSize or kConnKeyedChallengeSize; address
/// and accept 1..kConnMaxBody; reject 0.
ConnFrameCheck decode_conn_frame(const uint8_t* data, size_t avail, ConnFrameHeader* out,
                                 std::string* why);

/// The challenge's body, decoded.
struct ConnChallenge {
    uint8_t nonce[kConnNonceSize] = {};
    uint8_t commitment[kConnProofSize] = {};
    bool keyed = false;  ///< the server holds a key and sent its proof
    uint8_t proof[kConnProofSize] = {};
};

/// A kChallenge frame (header included); the proof goes out only if @p c.keyed.
std::vector<uint8_t> encode_challenge(const ConnChallenge& c);
/// kMalformed (with @p why) unless @p length is one of the two challenge sizes.
Status decode_challenge(const uint8_t* body, size_t length, ConnChallenge* out, std::string* why);

/// A kAddress frame: @p proof (kConnProofSize bytes, or null without key), then @p address.
std::vector<uint8_t> encode_client_address(const uint8_t* proof,
                                           const std::vector<uint8_t>& address);
/// Split a kAddress body: with @p keyed the first kConnProofSize bytes are the proof (copied
/// to @p proof), the rest the worker address (copied to @p address and validated into
/// @p decoded). kMalformed with @p why for a body too short or an invalid address.
Status decode_client_address(const uint8_t* body, size_t length, bool keyed, uint8_t* proof,
                             std::vector<uint8_t>* address, WorkerAddress* decoded,
                             std::string* why);

/// The accept's body is the server's worker address; kMalformed unless it validates.
Status decode_accept(const uint8_t* body, size_t length, WorkerAddress* decoded, std::string* why);

// ---- the handshake's proofs (over common/auth.h) ----
/// Commitment to @p uid bound to this connection's nonces (kConnProofSize bytes to @p out).
void conn_uid_commitment(const uint8_t* client_nonce, const uint8_t* server_nonce, uint64_t uid,
                         uint8_t* out);
void conn_server_proof(const common::AuthKey& key, const uint8_t* client_nonce,
                       const uint8_t* server_nonce, const uint8_t* commitment, uint8_t* out);
void conn_client_proof(const common::AuthKey& key, const uint8_t* client_nonce,
                       const uint8_t* server_nonce, const std::vector<uint8_t>& address,
                       uint8_t* out);

}  // namespace swy::core
