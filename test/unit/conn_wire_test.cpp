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

#include "common/auth.h"
#include "core/address.h"
#include "core/conn_socket.h"
#include "core/conn_wire.h"
#include "transports/self/self_transport.h"
#include "transports/shm/shm_transport.h"

namespace swy::core {
namespace {

std::vector<uint8_t> sample_address() {
    WorkerAddress a;
    a.worker_uid = 0x1122334455667788ull;
    a.host.netns_inode = 42;
    a.sections.push_back({tl::self::kAddressSection, {}});
    a.sections.push_back({tl::shm::kAddressSection, {1, 2, 3, 4, 5}});
    return encode_address(a);
}

common::AuthKey test_key(uint8_t fill) {
    std::vector<uint8_t> bytes(32, fill);
    common::AuthKey k;
    std::string why;
    EXPECT_EQ(common::AuthKey::from_bytes(bytes.data(), bytes.size(), &k, &why), Status::kOk);
    return k;
}

TEST(ConnWire, HelloCarriesOnlyTheClientNonce) {
    const uint8_t nonce[kConnNonceSize] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    std::vector<uint8_t> f = encode_conn_frame(ConnFrameType::kHello, nonce, sizeof(nonce));
    ASSERT_EQ(f.size(), kConnFrameHeaderSize + kConnNonceSize);
    ConnFrameHeader h;
    std::string why;
    ASSERT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk) << why;
    EXPECT_EQ(h.type, ConnFrameType::kHello);
    EXPECT_EQ(h.length, kConnNonceSize);
    EXPECT_EQ(f[4], 2);  // version 2: the hello no longer carries an address
}

TEST(ConnWire, AcceptCarriesTheServerAddress) {
    const std::vector<uint8_t> addr = sample_address();
    std::vector<uint8_t> f = encode_conn_frame(ConnFrameType::kAccept, addr.data(), addr.size());
    ConnFrameHeader h;
    std::string why;
    ASSERT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk) << why;
    EXPECT_EQ(h.type, ConnFrameType::kAccept);
    WorkerAddress a;
    ASSERT_EQ(decode_accept(f.data() + kConnFrameHeaderSize, h.length, &a, &why), Status::kOk)
        << why;
    EXPECT_EQ(a.worker_uid, 0x1122334455667788ull);
}

TEST(ConnWire, ChallengeRoundTripsWithAndWithoutProof) {
    for (bool keyed : {false, true}) {
        ConnChallenge c;
        for (size_t i = 0; i < kConnNonceSize; ++i)
            c.nonce[i] = static_cast<uint8_t>(i + 1);
        for (size_t i = 0; i < kConnProofSize; ++i)
            c.commitment[i] = static_cast<uint8_t>(0x40 + i);
        c.keyed = keyed;
        for (size_t i = 0; i < kConnProofSize; ++i)
            c.proof[i] = static_cast<uint8_t>(0x80 + i);
        std::vector<uint8_t> f = encode_challenge(c);
        ASSERT_EQ(f.size(),
                  kConnFrameHeaderSize + (keyed ? kConnKeyedChallengeSize : kConnChallengeSize));
        ConnFrameHeader h;
        std::string why;
        ASSERT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk) << why;
        EXPECT_EQ(h.type, ConnFrameType::kChallenge);
        ConnChallenge d;
        ASSERT_EQ(decode_challenge(f.data() + kConnFrameHeaderSize, h.length, &d, &why),
                  Status::kOk);
        EXPECT_EQ(d.keyed, keyed);
        EXPECT_EQ(0, std::memcmp(d.nonce, c.nonce, kConnNonceSize));
        EXPECT_EQ(0, std::memcmp(d.commitment, c.commitment, kConnProofSize));
        if (keyed) {
            EXPECT_EQ(0, std::memcmp(d.proof, c.proof, kConnProofSize));
        }
    }
}

TEST(ConnWire, ClientAddressRoundTripsWithAndWithoutProof) {
    const std::vector<uint8_t> addr = sample_address();
    uint8_t proof[kConnProofSize];
    for (size_t i = 0; i < kConnProofSize; ++i)
        proof[i] = static_cast<uint8_t>(7 * i);
    for (bool keyed : {false, true}) {
        std::vector<uint8_t> f = encode_client_address(keyed ? proof : nullptr, addr);
        ConnFrameHeader h;
        std::string why;
        ASSERT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk) << why;
        EXPECT_EQ(h.type, ConnFrameType::kAddress);
        uint8_t got[kConnProofSize] = {};
        std::vector<uint8_t> address;
        WorkerAddress a;
        ASSERT_EQ(decode_client_address(f.data() + kConnFrameHeaderSize, h.length, keyed, got,
                                        &address, &a, &why),
                  Status::kOk)
            << why;
        EXPECT_EQ(address, addr);
        EXPECT_EQ(a.worker_uid, 0x1122334455667788ull);
        if (keyed) {
            EXPECT_EQ(0, std::memcmp(got, proof, kConnProofSize));
        }
        // Read with the other expectation, the bytes do not make an address.
        EXPECT_EQ(decode_client_address(f.data() + kConnFrameHeaderSize, h.length, !keyed, got,
                                        &address, &a, &why),
                  Status::kMalformed);
    }
}

/// Decode @p body cut to @p n bytes as a frame of @p type whose header says n: the whole
/// pipeline (header, then the body decoder) must refuse it.
bool truncation_accepted(ConnFrameType type, const std::vector<uint8_t>& body, size_t n,
                         bool keyed) {
    std::vector<uint8_t> f = encode_conn_frame(type, body.data(), n);
    ConnFrameHeader h;
    std::string why;
    if (decode_conn_frame(f.data(), f.size(), &h, &why) != ConnFrameCheck::kOk) return false;
    const uint8_t* b = f.data() + kConnFrameHeaderSize;
    WorkerAddress a;
    switch (type) {
        case ConnFrameType::kHello: return true;  // any 16 bytes are a nonce
        case ConnFrameType::kChallenge: {
            ConnChallenge c;
            return decode_challenge(b, h.length, &c, &why) == Status::kOk && c.keyed == keyed;
        }
        case ConnFrameType::kAddress: {
            uint8_t proof[kConnProofSize];
            std::vector<uint8_t> address;
            return decode_client_address(b, h.length, keyed, proof, &address, &a, &why) ==
                   Status::kOk;
        }
        case ConnFrameType::kAccept: return decode_accept(b, h.length, &a, &why) == Status::kOk;
        case ConnFrameType::kReject: return true;
    }
    return false;
}

TEST(ConnWire, EveryTruncationOfEveryFrameIsRejected) {
    const std::vector<uint8_t> addr = sample_address();
    ConnChallenge c;
    c.keyed = true;
    std::vector<uint8_t> keyed_challenge = encode_challenge(c);
    keyed_challenge.erase(keyed_challenge.begin(), keyed_challenge.begin() + kConnFrameHeaderSize);
    uint8_t proof[kConnProofSize] = {};
    auto body_of = [](std::vector<uint8_t> f) {
        f.erase(f.begin(), f.begin() + kConnFrameHeaderSize);
        return f;
    };
    struct Case {
        ConnFrameType type;
        std::vector<uint8_t> body;
        bool keyed;
    };
    const std::vector<Case> cases = {
        {ConnFrameType::kHello, std::vector<uint8_t>(kConnNonceSize, 9), false},
        {ConnFrameType::kChallenge, std::vector<uint8_t>(kConnChallengeSize, 9), false},
        {ConnFrameType::kChallenge, keyed_challenge, true},
        {ConnFrameType::kAddress, body_of(encode_client_address(nullptr, addr)), false},
        {ConnFrameType::kAddress, body_of(encode_client_address(proof, addr)), true},
        {ConnFrameType::kAccept, addr, false},
    };
    for (const Case& k : cases) {
        const int type = static_cast<int>(k.type);
        EXPECT_TRUE(truncation_accepted(k.type, k.body, k.body.size(), k.keyed)) << type;
        for (size_t n = 0; n < k.body.size(); ++n) {
            EXPECT_FALSE(truncation_accepted(k.type, k.body, n, k.keyed))
                << "type " << type << (k.keyed ? " keyed" : "") << " cut to " << n;
        }
        // Cut inside the stream instead (the header still promises the whole body): the
        // socket asks for more and never hands out a partial body.
        const std::vector<uint8_t> f = encode_conn_frame(k.type, k.body.data(), k.body.size());
        for (size_t n = 0; n < f.size(); ++n) {
            int sv[2];
            ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
            ConnSocket reader(common::UniqueFd(sv[0]), "test");
            if (n != 0) {
                ASSERT_EQ(write(sv[1], f.data(), n), static_cast<ssize_t>(n));
            }
            close(sv[1]);
            EXPECT_EQ(reader.receive(), Status::kEndpointClosed);
            ConnFrameHeader h;
            std::vector<uint8_t> body;
            std::string why;
            EXPECT_EQ(reader.next_frame(&h, &body, &why), Status::kInProgress) << type << " " << n;
        }
    }
}

TEST(ConnWire, ProofsDependOnKeyNoncesAndAddress) {
    const uint8_t cn[kConnNonceSize] = {1};
    const uint8_t sn[kConnNonceSize] = {2};
    const uint8_t other[kConnNonceSize] = {3};
    const uint8_t commitment[kConnProofSize] = {4};
    const common::AuthKey k1 = test_key(0x11), k2 = test_key(0x22);
    uint8_t a[kConnProofSize], b[kConnProofSize];
    conn_server_proof(k1, cn, sn, commitment, a);
    conn_server_proof(k1, cn, sn, commitment, b);
    EXPECT_TRUE(common::auth_proof_equal(a, b));
    conn_server_proof(k2, cn, sn, commitment, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));  // another key
    conn_server_proof(k1, other, sn, commitment, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));  // another connection
    std::vector<uint8_t> addr = sample_address();
    conn_client_proof(k1, cn, sn, addr, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));  // a server proof is no client proof
    conn_client_proof(k1, cn, sn, addr, a);
    addr.back() ^= 1;
    conn_client_proof(k1, cn, sn, addr, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));  // the proof binds the address
    // The uid commitment names one uid, differently on every connection.
    conn_uid_commitment(cn, sn, 42, a);
    conn_uid_commitment(cn, sn, 42, b);
    EXPECT_TRUE(common::auth_proof_equal(a, b));
    conn_uid_commitment(cn, sn, 43, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));
    conn_uid_commitment(other, sn, 42, b);
    EXPECT_FALSE(common::auth_proof_equal(a, b));
}

TEST(ConnWire, EveryTruncatedHeaderAsksForMore) {
    std::vector<uint8_t> f = encode_conn_frame(ConnFrameType::kReject, nullptr, 0);
    ConnFrameHeader h;
    std::string why;
    for (size_t n = 0; n < kConnFrameHeaderSize; ++n) {
        EXPECT_EQ(decode_conn_frame(f.data(), n, &h, &why), ConnFrameCheck::kNeedMore) << n;
    }
    EXPECT_EQ(decode_conn_frame(nullptr, 100, &h, &why), ConnFrameCheck::kNeedMore);
    EXPECT_EQ(decode_conn_frame(f.data(), f.size(), &h, &why), ConnFrameCheck::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kReject);
}

TEST(ConnWire, RejectsBadMagicVersionReservedTypeAndLengths) {
    const std::vector<uint8_t> addr = sample_address();
    const std::vector<uint8_t> good =
        encode_conn_frame(ConnFrameType::kAccept, addr.data(), addr.size());
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
    EXPECT_TRUE(bad(with(0, 'X')));  // magic
    EXPECT_TRUE(bad(with(4, 1)));    // version 1 (its hello revealed the address)
    EXPECT_TRUE(bad(with(4, 3)));    // a later version
    EXPECT_TRUE(bad(with(6, 1)));    // reserved
    EXPECT_TRUE(bad(with(5, 0)));    // type 0
    EXPECT_TRUE(bad(with(5, 6)));    // unknown type
    EXPECT_TRUE(bad(with(5, 9)));
    EXPECT_TRUE(bad(with(11, 0x80)));  // length beyond kConnMaxBody
    EXPECT_TRUE(bad(encode_conn_frame(ConnFrameType::kHello, nullptr, 0)));  // hello, no nonce
    EXPECT_TRUE(
        bad(encode_conn_frame(ConnFrameType::kHello, addr.data(), addr.size())));  // v1 hello
    EXPECT_TRUE(bad(encode_conn_frame(ConnFrameType::kAccept, nullptr, 0)));  // accept, no address
    EXPECT_TRUE(bad(encode_conn_frame(ConnFrameType::kAddress, nullptr, 0)));
    EXPECT_TRUE(
        bad(encode_conn_frame(ConnFrameType::kChallenge, addr.data(), kConnChallengeSize + 1)));
    const uint8_t junk[3] = {1, 2, 3};
    EXPECT_TRUE(
        bad(encode_conn_frame(ConnFrameType::kReject, junk, sizeof(junk))));  // verdict body
}

TEST(ConnWire, RandomBytesNeverDecodeIntoAnOversizedFrame) {
    std::mt19937_64 rng(7);
    ConnFrameHeader h;
    std::string why;
    for (int i = 0; i < 100000; ++i) {
        uint8_t buf[kConnFrameHeaderSize];
        for (auto& b : buf)
            b = static_cast<uint8_t>(rng());
        if (i % 2 == 0) std::memcpy(buf, "SWYH\x02", 5);  // past the magic and version checks
        if (decode_conn_frame(buf, sizeof(buf), &h, &why) == ConnFrameCheck::kOk) {
            EXPECT_LE(h.length, kConnMaxBody);
        }
    }
}

// ConnSocket over a socketpair: frames that arrive in pieces, back to back, then EOF.
TEST(ConnSocket, ReassemblesFramesSplitAcrossReadsAndReportsEof) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ConnSocket reader(common::UniqueFd(sv[0]), "test");
    const std::vector<uint8_t> addr = sample_address();
    std::vector<uint8_t> bytes =
        encode_conn_frame(ConnFrameType::kAccept, addr.data(), addr.size());
    const std::vector<uint8_t> verdict = encode_conn_frame(ConnFrameType::kReject, nullptr, 0);
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
    ASSERT_EQ(write(sv[1], &bytes[done], bytes.size() - done),
              static_cast<ssize_t>(bytes.size() - done));
    close(sv[1]);
    EXPECT_EQ(reader.receive(), Status::kEndpointClosed);
    ASSERT_EQ(reader.next_frame(&h, &body, &why), Status::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kAccept);
    EXPECT_EQ(body, addr);
    ASSERT_EQ(reader.next_frame(&h, &body, &why), Status::kOk);
    EXPECT_EQ(h.type, ConnFrameType::kReject);
    EXPECT_TRUE(body.empty());
    EXPECT_EQ(reader.next_frame(&h, &body, &why), Status::kInProgress);
    EXPECT_EQ(reader.buffered(), 0u);
}

TEST(ConnSocket, GarbageIsMalformedAndQueuedBytesAreWritten) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    ConnSocket a(common::UniqueFd(sv[0]), "a");
    ConnSocket b(common::UniqueFd(sv[1]), "b");
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
