// Shared-key authentication of a connection: both sides prove that they hold the same key
// without sending it, each over the other's fresh random nonce (so a recorded proof is
// worthless on a later connection). HMAC-SHA256 from OpenSSL's libcrypto: cryptography is
// never hand-written here.
//
// Protocol (both handshakes that use it, the listener's and the tcp transport's):
//   client → server   hello:  client nonce
//   server → client   hello:  server nonce, proof("server", client nonce, server nonce)
//   client → server   proof:  proof("client", client nonce, server nonce)
// Each side acts on nothing the other sends before the other's proof checked out. The label
// keeps a server's proof from being replayed as a client's, and the context bytes bind the
// proof to the handshake it belongs to (which transport, which uids were claimed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace swy::common {

inline constexpr size_t kAuthNonceSize = 16;
inline constexpr size_t kAuthProofSize = 32;  ///< HMAC-SHA256
inline constexpr size_t kAuthKeyMin = 16;     ///< shorter keys are refused (guessable)
inline constexpr size_t kAuthKeyMax = 256;

/// A shared secret; empty means "no authentication". Copies are cheap (a few bytes).
class AuthKey {
public:
    AuthKey() = default;
    /// From raw bytes. kInvalidParam (with @p why) outside [kAuthKeyMin, kAuthKeyMax] bytes.
    static Status from_bytes(const void* data, size_t length, AuthKey* out, std::string* why);
    /// From hexadecimal text (the form configuration variables take). kInvalidParam if the
    /// text is not an even number of hex digits or the key has a bad length.
    static Status from_hex(std::string_view text, AuthKey* out, std::string* why);
    /// A fresh random key of @p length bytes (getrandom). kIoError if the kernel refused.
    static Status random(size_t length, AuthKey* out, std::string* why);

    bool empty() const { return bytes_.empty(); }
    const std::vector<uint8_t>& bytes() const { return bytes_; }
    std::string to_hex() const;

private:
    std::vector<uint8_t> bytes_;
};

/// Fill @p out with kAuthNonceSize random bytes. kIoError if getrandom failed.
Status auth_nonce(uint8_t* out);

/// HMAC-SHA256(key, label | 0 | client_nonce | server_nonce | context) into @p out
/// (kAuthProofSize bytes). @p key must not be empty.
void auth_proof(const AuthKey& key, std::string_view label, const uint8_t* client_nonce,
                const uint8_t* server_nonce, const void* context, size_t context_length,
                uint8_t* out);

/// Constant-time comparison of two kAuthProofSize-byte proofs.
bool auth_proof_equal(const uint8_t* a, const uint8_t* b);

/// Whether @p proof is auth_proof() of the same arguments (constant time): what each side of
/// a handshake asks of the other's proof.
bool auth_proof_matches(const AuthKey& key, std::string_view label, const uint8_t* client_nonce,
                        const uint8_t* server_nonce, const void* context, size_t context_length,
                        const uint8_t* proof);

}  // namespace swy::common
