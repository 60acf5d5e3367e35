// Encoding and validating handshake frames (see conn_wire.h).
#include "core/conn_wire.h"

#include <cstring>

namespace swy::core {

namespace {
void put32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
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
    if (type == static_cast<uint8_t>(ConnFrameType::kHello)) {
        if (length == 0 || length > kConnMaxBody) {
            *why = "hello body length " + std::to_string(length) + " out of range";
            return ConnFrameCheck::kBad;
        }
    } else if (type == static_cast<uint8_t>(ConnFrameType::kAccept) ||
               type == static_cast<uint8_t>(ConnFrameType::kReject)) {
        if (length != 0) {
            *why = "verdict frame with a body";
            return ConnFrameCheck::kBad;
        }
    } else {
        *why = "unknown frame type " + std::to_string(type);
        return ConnFrameCheck::kBad;
    }
    out->type = static_cast<ConnFrameType>(type);
    out->length = length;
    return ConnFrameCheck::kOk;
}

}  // namespace swy::core
