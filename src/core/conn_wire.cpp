// Encoding and validating handshake frames, and the handshake's proofs (see conn_wire.h).
#include "core/conn_wire.h"

#include <cstring>
#include <string_view>

namespace swy::core {

namespace {
void put32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

bool length_allowed(uint8_t type, uint32_t length) {
    switch (static_cast<ConnFrameType>(type)) {
        case ConnFrameType::kHello: return length == kConnNonceSize;
        case ConnFrameType::kChallenge:
            return length == kConnChallengeSize || length == kConnKeyedChallengeSize;
        case ConnFrameType::kAddress:
        case ConnFrameType::kAccept: return length != 0 && length <= kConnMaxBody;
        case ConnFrameType::kReject: return length == 0;
    }
    return false;
}

constexpr std::string_view kProofContext = "swy-listener";

std::vector<uint8_t> with_context(const uint8_t* data, size_t length) {
    std::vector<uint8_t> c(kProofContext.size() + length);
    std::memcpy(c.data(), kProofContext.data(), kProofContext.size());
    if (length != 0) std::memcpy(c.data() + kProofContext.size(), data, length);
    return c;
}
}  // namespace

std::vector<uint8_t> encode_conn_frame(ConnFrameType type, const void* body, size_t length) {
    std::vector<uint8_t> out(kConnFrameHeaderSize + length);
    put32(out.data(), kConnMagic);
    out[4] = kConnVersion;
    out[5] = static_cast<uint8_t>(type);
    out[6] = out[7] = 0;
    put32(out.data() + 8, static_cast<uint32_t>(length));
    if (length != 0) std::memcpy(out.data() + kConnFrameHeaderSize, body, length);
    return out;
}

ConnFrameCheck decode_conn_frame(const uint8_t* data, size_t avail, ConnFrameHeader* out,
                                 std::string* why) {
    if (data == nullptr || avail < kConnFrameHeaderSize) return ConnFrameCheck::kNeedMore;
    if (get32(data) != kConnMagic) {
        *why = "bad magic (not a Switchyard handshake)";
        return ConnFrameCheck::kBad;
    }
    if (data[4] != kConnVersion) {
        *why = "unsupported handshake version " + std::to_string(data[4]);
        return ConnFrameCheck::kBad;
    }
    if (data[6] != 0 || data[7] != 0) {
        *why = "reserved bytes are not zero";
        return ConnFrameCheck::kBad;
    }
    const uint32_t length = get32(data + 8);
    const uint8_t type = data[5];
    if (type < static_cast<uint8_t>(ConnFrameType::kHello) ||
        type > static_cast<uint8_t>(ConnFrameType::kAddress)) {
        *why = "unknown frame type " + std::to_string(type);
        return ConnFrameCheck::kBad;
    }
    if (!length_allowed(type, length)) {
        *why = "frame type " + std::to_string(type) + " with a body of " + std::to_string(length) +
               " bytes";
        return ConnFrameCheck::kBad;
    }
    out->type = static_cast<ConnFrameType>(type);
    out->length = length;
    return ConnFrameCheck::kOk;
}

std::vector<uint8_t> encode_challenge(const ConnChallenge& c) {
    uint8_t body[kConnKeyedChallengeSize];
    std::memcpy(body, c.nonce, kConnNonceSize);
    std::memcpy(body + kConnNonceSize, c.commitment, kConnProofSize);
    if (c.keyed) std::memcpy(body + kConnChallengeSize, c.proof, kConnProofSize);
    return encode_conn_frame(ConnFrameType::kChallenge, body,
                             c.keyed ? kConnKeyedChallengeSize : kConnChallengeSize);
}

Status decode_challenge(const uint8_t* body, size_t length, ConnChallenge* out, std::string* why) {
    if (body == nullptr || (length != kConnChallengeSize && length != kConnKeyedChallengeSize)) {
        *why = "challenge of " + std::to_string(length) + " bytes";
        return Status::kMalformed;
    }
    std::memcpy(out->nonce, body, kConnNonceSize);
    std::memcpy(out->commitment, body + kConnNonceSize, kConnProofSize);
    out->keyed = length == kConnKeyedChallengeSize;
    if (out->keyed) std::memcpy(out->proof, body + kConnChallengeSize, kConnProofSize);
    return Status::kOk;
}

std::vector<uint8_t> encode_client_address(const uint8_t* proof,
                                           const std::vector<uint8_t>& address) {
    const size_t skip = proof != nullptr ? kConnProofSize : 0;
    std::vector<uint8_t> body(skip + address.size());
    if (skip != 0) std::memcpy(body.data(), proof, skip);
    if (!address.empty()) std::memcpy(body.data() + skip, address.data(), address.size());
    return encode_conn_frame(ConnFrameType::kAddress, body.data(), body.size());
}

Status decode_client_address(const uint8_t* body, size_t length, bool keyed, uint8_t* proof,
                             std::vector<uint8_t>* address, WorkerAddress* decoded,
                             std::string* why) {
    const size_t skip = keyed ? kConnProofSize : 0;
    if (body == nullptr || length <= skip) {
        *why = "address frame of " + std::to_string(length) + " bytes";
        return Status::kMalformed;
    }
    Status s = decode_address(body + skip, length - skip, decoded, why);
    if (s != Status::kOk) return Status::kMalformed;
    if (keyed) std::memcpy(proof, body, kConnProofSize);
    address->assign(body + skip, body + length);
    return Status::kOk;
}

Status decode_accept(const uint8_t* body, size_t length, WorkerAddress* decoded, std::string* why) {
    if (body == nullptr || length == 0) {
        *why = "accept without an address";
        return Status::kMalformed;
    }
    return decode_address(body, length, decoded, why) == Status::kOk ? Status::kOk
                                                                     : Status::kMalformed;
}

void conn_uid_commitment(const uint8_t* client_nonce, const uint8_t* server_nonce, uint64_t uid,
                         uint8_t* out) {
    // HMAC keyed with the nonces: a hash of the uid that is different on every connection.
    uint8_t nonces[2 * kConnNonceSize];
    std::memcpy(nonces, client_nonce, kConnNonceSize);
    std::memcpy(nonces + kConnNonceSize, server_nonce, kConnNonceSize);
    common::AuthKey key;
    std::string unused;
    common::AuthKey::from_bytes(nonces, sizeof(nonces), &key, &unused);
    uint8_t uid_bytes[8];
    for (int i = 0; i < 8; ++i)
        uid_bytes[i] = static_cast<uint8_t>(uid >> (8 * i));
    common::auth_proof(key, "uid", client_nonce, server_nonce, uid_bytes, sizeof(uid_bytes), out);
}

void conn_server_proof(const common::AuthKey& key, const uint8_t* client_nonce,
                       const uint8_t* server_nonce, const uint8_t* commitment, uint8_t* out) {
    const std::vector<uint8_t> context = with_context(commitment, kConnProofSize);
    common::auth_proof(key, "server", client_nonce, server_nonce, context.data(), context.size(),
                       out);
}

void conn_client_proof(const common::AuthKey& key, const uint8_t* client_nonce,
                       const uint8_t* server_nonce, const std::vector<uint8_t>& address,
                       uint8_t* out) {
    const std::vector<uint8_t> context = with_context(address.data(), address.size());
    common::auth_proof(key, "client", client_nonce, server_nonce, context.data(), context.size(),
                       out);
}

}  // namespace swy::core
