// Fuzz target "conn_wire": the listener handshake's decoders (core/conn_wire.cpp), fed a byte
// stream as either side would read it. The first input byte picks the reader: 0 a client
// (challenge, then accept or reject), 1 an unkeyed listener (hello, then address), 2 a keyed
// listener (hello, then proof and address). The rest is cut into frames as ConnSocket does.
// Whatever decodes must re-encode to the very same bytes, and no accepted header may promise
// more than kConnMaxBody.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/conn_wire.h"
#include "targets.h"

namespace {

using namespace swy::core;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_conn_wire: %s\n", what);
    std::abort();
}

void same_bytes(const std::vector<uint8_t>& again, const uint8_t* frame, size_t size,
                const char* what) {
    if (again.size() != size || std::memcmp(again.data(), frame, size) != 0) fail(what);
}

/// One frame's body, as the reader picked by @p mode would decode it.
void check_body(uint8_t mode, const ConnFrameHeader& h, const uint8_t* frame) {
    const uint8_t* body = frame + kConnFrameHeaderSize;
    const size_t size = kConnFrameHeaderSize + h.length;
    std::string why;
    WorkerAddress a;
    switch (h.type) {
        case ConnFrameType::kHello:
            if (h.length != kConnNonceSize) fail("hello of the wrong size accepted");
            same_bytes(encode_conn_frame(h.type, body, h.length), frame, size, "hello re-encodes");
            break;
        case ConnFrameType::kChallenge: {
            ConnChallenge c;
            if (decode_challenge(body, h.length, &c, &why) != swy::Status::kOk) {
                fail("a challenge header accepted, its body refused");
            }
            same_bytes(encode_challenge(c), frame, size, "challenge does not re-encode");
            break;
        }
        case ConnFrameType::kAddress: {
            uint8_t proof[kConnProofSize];
            std::vector<uint8_t> address;
            const bool keyed = mode == 2;
            if (decode_client_address(body, h.length, keyed, proof, &address, &a, &why) !=
                swy::Status::kOk) {
                if (why.empty()) fail("address frame refused without a reason");
                break;
            }
            same_bytes(encode_client_address(keyed ? proof : nullptr, address), frame, size,
                       "address frame does not re-encode");
            break;
        }
        case ConnFrameType::kAccept:
            if (decode_accept(body, h.length, &a, &why) != swy::Status::kOk && why.empty()) {
                fail("accept refused without a reason");
            }
            break;
        case ConnFrameType::kReject:
            if (h.length != 0) fail("reject with a body accepted");
            break;
    }
}

}  // namespace

namespace swy::fuzz {

int fuzz_conn_wire(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0] % 3;
    const uint8_t* p = data + 1;
    size_t left = size - 1;
    while (left != 0) {
        ConnFrameHeader h;
        std::string why;
        ConnFrameCheck c = decode_conn_frame(p, left, &h, &why);
        if (c == ConnFrameCheck::kNeedMore) break;
        if (c == ConnFrameCheck::kBad) {
            if (why.empty()) fail("bad header without a reason");
            break;
        }
        if (h.length > kConnMaxBody) fail("header promises more than kConnMaxBody");
        if (left - kConnFrameHeaderSize < h.length) break;  // truncated: the socket waits
        check_body(mode, h, p);
        p += kConnFrameHeaderSize + h.length;
        left -= kConnFrameHeaderSize + h.length;
    }
    return 0;
}

}  // namespace swy::fuzz
