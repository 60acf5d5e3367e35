// Specification of the connection handshake's wire format (core/conn_wire.h) and its socket
// framing: every field is validated, every truncation asks for more, nothing is read past
// the bytes given.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/address.h"
#include "core/conn_socket.h"
#include "core/conn_wire.h"

namespace swy::core {
namespace {

std::vector<uint8_t> sample_address() {
    WorkerAddress a;
    a.worker_uid = 0x1122334455667788ull;
    a.host.netns_inode = 42;
    a.sections.push_back({TransportId::kSelf, {}});
    a.sections.push_back({TransportId::kShm, {1, 2, 3, 4, 5}});
    return encode_address(a);
}

TEST(ConnWire, HelloRoundTrips) {
    const std::vector<uint8_t> addr = sample_address();
    std::vector<uint8_t> f = encode_conn_frame(ConnFrameType::kHello, addr.data(), addr.size());
    ASSERT_EQ(f.size(), kConnFrameHeaderSize + addr.size());
    ConnFrameHeader h;
    std::string why;
    ASSERT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk) << why;
    EXPECT_EQ(h.type, ConnFrameType::kHello);
    EXPECT_EQ(h.length, addr.size());
    EXPECT_EQ(0, std::memcmp(f.data() + kConnFrameHeaderSize, addr.data(), addr.size()));
}

TEST(ConnWire, EveryTruncatedHeaderAsksForMore) {
    std::vector<uint8_t> f = encode_conn_frame(ConnFrameType::kAccept, nullptr, 0);
    ConnFrameHeader h;
    std::string why;
    for (size_t n = 0; n < kConnFrameHeaderSize; ++n) {
        EXPECT_EQ(decode_conn_frame(f.data(), n, &h, &why), ConnFrameCheck::kNeedMore) << n;
    }
    EXPECT_EQ(decode_conn_frame(nullptr, 100, &h, &why), ConnFrameCheck::kNeedMore);
    EXPECT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kAccept);
}

TEST(ConnWire, RejectsBadMagicVersionReservedTypeAndLengths) {
    const std::vector<uint8_t> addr = sample_address();
    const std::vector<uint8_t> good = encode_conn_frame(ConnFrameType::kHello, addr.data(), addr.size());
    ConnFrameHeader h;
    auto bad = [&](std::vector<uint8_t> f) {
        std::string why;
        ConnFrameCheck c = decode_conn_frame(f.data(), f.size(), &h, &why);
        return c == ConnFrameCheck::kBad && !why.empty();
    };
    auto with = [&](size_t at, uint8_t v) {
        std::vector<uint8_t> f = good;
        f[at] = v;
        return f;
    };
    EXPECT_TRUE(bad(with(0, 'X')));   // magic
    EXPECT_TRUE(bad(with(4, 2)));     // version
    EXPECT_TRUE(bad(with(6, 1)));     // reserved
    EXPECT_TRUE(bad(with(5, 0)));     // type 0
    EXPECT_TRUE(bad(with(5, 9)));     // unknown type
    EXPECT_TRUE(bad(with(11, 0x80))); // length beyond kConnMaxBody
    EXPECT_TRUE(bad(encode_conn_frame(ConnFrameType::kHello, nullptr, 0)));  // hello, no address
    const uint8_t junk[3] = {1, 2, 3};
    EXPECT_TRUE(bad(encode_conn_frame(ConnFrameType::kReject, junk, sizeof(junk))));  // verdict body
}

TEST(ConnWire, RandomBytesNeverDecodeIntoAnOversizedFrame) {
    std::mt19937_64 rng(7);
    ConnFrameHeader h;
    std::string why;
    for (int i = 0; i < 100000; ++i) {
        uint8_t buf[kConnFrameHeaderSize];
        for (auto& b : buf) b = static_cast<uint8_t>(rng());
        if (i % 2 == 0) std::memcpy(buf, "SWYH\x01", 5);  // past the magic and version checks
        if (decode_conn_frame(buf, sizeof(buf), &h, &why) == ConnFrameCheck::kOk) {
            EXPECT_LE(h.length, kConnMaxBody);
        }
    }
}

// ConnSocket over a socketpair: frames that arrive in pieces, back to back, then EOF.
TEST(ConnSocket, ReassemblesFramesSplitAcrossReadsAndReportsEof) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ConnSocket reader(sv[0], "test");
    const std::vector<uint8_t> addr = sample_address();
    std::vector<uint8_t> bytes = encode_conn_frame(ConnFrameType::kHello, addr.data(), addr.size());
    const std::vector<uint8_t> verdict = encode_conn_frame(ConnFrameType::kAccept, nullptr, 0);
    bytes.insert(bytes.end(), verdict.begin(), verdict.end());
    ConnFrameHeader h;
    std::vector<uint8_t> body;
    std::string why;
    for (size_t i = 0; i + 1 < bytes.size() - verdict.size(); ++i) {  // one byte at a time
        ASSERT_EQ(write(sv[1], &bytes[i], 1), 1);
        ASSERT_EQ(reader.receive(), Status::kOk);
        ASSERT_EQ(reader.next_frame(&h, &body, &why), Status::kInProgress) << i;
    }
    const size_t done = bytes.size() - verdict.size() - 1;
    ASSERT_EQ(write(sv[1], &bytes[done], bytes.size() - done), static_cast<ssize_t>(bytes.size() - done));
    close(sv[1]);
    EXPECT_EQ(reader.receive(), Status::kEndpointClosed);
    ASSERT_EQ(reader.next_frame(&h, &body, &why), Status::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kHello);
    EXPECT_EQ(body, addr);
    ASSERT_EQ(reader.next_frame(&h, &body, &why), Status::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kAccept);
    EXPECT_TRUE(body.empty());
    EXPECT_EQ(reader.next_frame(&h, &body, &why), Status::kInProgress);
    EXPECT_EQ(reader.buffered(), 0u);
}

TEST(ConnSocket, GarbageIsMalformedAndQueuedBytesAreWritten) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ConnSocket a(sv[0], "a");
    ConnSocket b(sv[1], "b");
    a.queue({'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '0'});
    EXPECT_TRUE(a.send_pending());
    EXPECT_EQ(a.flush(), Status::kOk);
    EXPECT_FALSE(a.send_pending());
    EXPECT_EQ(b.receive(), Status::kOk);
    ConnFrameHeader h;
    std::vector<uint8_t> body;
    std::string why;
    EXPECT_EQ(b.next_frame(&h, &body, &why), Status::kMalformed);
    EXPECT_NE(why.find("magic"), std::string::npos) << why;
}

TEST(ConnSocket, SockaddrValidation) {
    std::string why;
    sockaddr_storage ss{};
    EXPECT_FALSE(valid_inet_sockaddr(nullptr, 16, &why));
    ss.ss_family = AF_INET;
    EXPECT_FALSE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), 1, &why));
    EXPECT_FALSE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), 8, &why));
    EXPECT_TRUE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), 16, &why));
    ss.ss_family = AF_INET6;
    EXPECT_FALSE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), 16, &why));
    EXPECT_TRUE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), 28, &why));
    ss.ss_family = AF_UNIX;
    EXPECT_FALSE(valid_inet_sockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof(ss), &why));
}

}  // namespace
}  // namespace swy::core
