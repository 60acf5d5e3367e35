#include "common/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace swy::common {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool fill_random(uint8_t* out, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = getrandom(out + done, length - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

Status AuthKey::from_bytes(const void* data, size_t length, AuthKey* out, std::string* why) {
    if (data == nullptr || length < kAuthKeyMin || length > kAuthKeyMax) {
        *why = "an authentication key must have " + std::to_string(kAuthKeyMin) + " to " +
               std::to_string(kAuthKeyMax) + " bytes (got " + std::to_string(length) + ")";
        return Status::kInvalidParam;
    }
    const auto* p = static_cast<const uint8_t*>(data);
    out->bytes_.assign(p, p + length);
    return Status::kOk;
}

Status AuthKey::from_hex(std::string_view text, AuthKey* out, std::string* why) {
    if (text.size() % 2 != 0) {
        *why = "an authentication key in hex needs an even number of digits";
        return Status::kInvalidParam;
    }
    std::vector<uint8_t> bytes(text.size() / 2);
    for (size_t i = 0; i < bytes.size(); ++i) {
        const int hi = hex_value(text[2 * i]);
        const int lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            *why = "an authentication key must be hexadecimal digits only";
            return Status::kInvalidParam;
        }
        bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return from_bytes(bytes.data(), bytes.size(), out, why);
}

Status AuthKey::random(size_t length, AuthKey* out, std::string* why) {
    std::vector<uint8_t> bytes(length);
    if (!fill_random(bytes.data(), length)) {
        *why = std::string("getrandom: ") + std::strerror(errno);
        return Status::kIoError;
    }
    return from_bytes(bytes.data(), bytes.size(), out, why);
}

std::string AuthKey::to_hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(bytes_.size() * 2);
    for (uint8_t b : bytes_) {
        s.push_back(kDigits[b >> 4]);
        s.push_back(kDigits[b & 15]);
    }
    return s;
}

Status auth_nonce(uint8_t* out) {
    return fill_random(out, kAuthNonceSize) ? Status::kOk : Status::kIoError;
}

void auth_proof(const AuthKey& key, std::string_view label, const uint8_t* client_nonce,
                const uint8_t* server_nonce, const void* context, size_t context_length,
                uint8_t* out) {
    std::vector<uint8_t> message;
    message.reserve(label.size() + 1 + 2 * kAuthNonceSize + context_length);
    message.insert(message.end(), label.begin(), label.end());
    message.push_back(0);  // the label cannot run into the nonces
    message.insert(message.end(), client_nonce, client_nonce + kAuthNonceSize);
    message.insert(message.end(), server_nonce, server_nonce + kAuthNonceSize);
    const auto* c = static_cast<const uint8_t*>(context);
    if (context_length != 0) message.insert(message.end(), c, c + context_length);
    unsigned int length = kAuthProofSize;
    HMAC(EVP_sha256(), key.bytes().data(), static_cast<int>(key.bytes().size()), message.data(),
         message.size(), out, &length);
}

bool auth_proof_equal(const uint8_t* a, const uint8_t* b) {
    return CRYPTO_memcmp(a, b, kAuthProofSize) == 0;
}

bool auth_proof_matches(const AuthKey& key, std::string_view label, const uint8_t* client_nonce,
                        const uint8_t* server_nonce, const void* context, size_t context_length,
                        const uint8_t* proof) {
    uint8_t expect[kAuthProofSize];
    auth_proof(key, label, client_nonce, server_nonce, context, context_length, expect);
    return auth_proof_equal(expect, proof);
}

}  // namespace swy::common
