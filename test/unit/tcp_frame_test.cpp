// Specification of the tcp transport's wire decoders: they look only at the bytes they are
// given, accept exactly what the encoders write, and refuse every truncation and random input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {
namespace {

std::vector<TcpAddressEntry> sample_entries() {
    TcpAddressEntry v4;
    v4.family = 4;
    v4.port = 40001;
    v4.ip[0] = 127;
    v4.ip[3] = 1;
    TcpAddressEntry v6;
    v6.family = 6;
    v6.port = 1;
    v6.ip[15] = 1;
    TcpAddressEntry other;
    other.family = 4;
    other.port = 65535;
    other.ip[0] = 10;
    other.ip[1] = 1;
    return {other, v6, v4};
}

bool same(const TcpAddressEntry& a, const TcpAddressEntry& b) {
    return a.family == b.family && a.port == b.port &&
           std::equal(a.ip, a.ip + (a.family == 4 ? 4 : 16), b.ip);
}

// ---- Frame header ---------------------------------------------------------------------------

TEST(TcpFrame, HeaderRoundTrips) {
    uint8_t buf[kFrameHeaderSize];
    for (uint32_t length : {0u, 1u, 255u, 65536u, kMaxFrameBody}) {
        for (uint64_t read : {uint64_t{0}, uint64_t{1}, uint64_t{0xFFFFFFFF} + 1, ~uint64_t{0}}) {
            encode_frame_header(buf, 42, length, read);
            FrameHeader h{};
            ASSERT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kOk);
            EXPECT_EQ(h.magic, kFrameMagic);
            EXPECT_EQ(h.version, kFrameVersion);
            EXPECT_EQ(h.am_id, 42);
            EXPECT_EQ(h.length, length);
            EXPECT_EQ(h.read, read);
        }
    }
}

TEST(TcpFrame, HeaderLayoutIsLittleEndianAndSixteenBytes) {
    static_assert(kFrameHeaderSize == 16);
    static_assert(kFrameVersion == 2);
    uint8_t buf[kFrameHeaderSize];
    encode_frame_header(buf, 7, 0x01020304, 0x1112131415161718ull);
    EXPECT_EQ(buf[0], kFrameMagic & 0xFF);
    EXPECT_EQ(buf[1], kFrameMagic >> 8);
    EXPECT_EQ(buf[2], kFrameVersion);
    EXPECT_EQ(buf[3], 7);
    EXPECT_EQ(buf[4], 0x04);
    EXPECT_EQ(buf[7], 0x01);
    EXPECT_EQ(buf[8], 0x18);
    EXPECT_EQ(buf[15], 0x11);
}

TEST(TcpFrame, VersionOneHeadersAreRefused) {
    // An 8-byte version 1 header (a peer from before `read`): refused on its version, never
    // read as a version 2 header.
    uint8_t buf[kFrameHeaderSize] = {kFrameMagic & 0xFF, kFrameMagic >> 8, 1, 3, 8, 0, 0, 0};
    FrameHeader h{};
    EXPECT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kBadVersion);
    // ... and as soon as its version byte is there: an 8-byte frame from an old peer is
    // refused, not waited on for 8 more bytes.
    for (size_t n = 3; n <= 8; ++n) {
        EXPECT_EQ(decode_frame_header(buf, n, &h), FrameCheck::kBadVersion) << n;
    }
}

TEST(TcpFrame, GarbageShorterThanAHeaderIsRefusedAtOnce) {
    const uint8_t garbage[] = {0xDE, 0xAD, 0xBE, 0xEF, 1, 0, 0, 0, 0xAA};
    FrameHeader h{};
    for (size_t n = 1; n <= sizeof(garbage); ++n) {
        EXPECT_EQ(decode_frame_header(garbage, n, &h), FrameCheck::kBadMagic) << n;
    }
    const uint8_t half_magic[] = {kFrameMagic & 0xFF, 0x00};
    EXPECT_EQ(decode_frame_header(half_magic, 1, &h), FrameCheck::kNeedMore);
    EXPECT_EQ(decode_frame_header(half_magic, 2, &h), FrameCheck::kBadMagic);
}

TEST(TcpFrame, EveryTruncatedHeaderNeedsMore) {
    uint8_t buf[kFrameHeaderSize];
    encode_frame_header(buf, 1, 10);
    for (size_t n = 0; n < kFrameHeaderSize; ++n) {
        FrameHeader h{};
        EXPECT_EQ(decode_frame_header(buf, n, &h), FrameCheck::kNeedMore) << n;
    }
    FrameHeader h{};
    EXPECT_EQ(decode_frame_header(nullptr, 8, &h), FrameCheck::kNeedMore);
}

TEST(TcpFrame, RejectsBadMagicVersionAndLength) {
    uint8_t buf[kFrameHeaderSize];
    FrameHeader h{};
    encode_frame_header(buf, 1, 10);
    buf[0] ^= 0x01;
    EXPECT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kBadMagic);
    encode_frame_header(buf, 1, 10);
    buf[2] = kFrameVersion + 1;
    EXPECT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kBadVersion);
    encode_frame_header(buf, 1, kMaxFrameBody + 1);
    EXPECT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kTooLong);
    encode_frame_header(buf, 1, 0xFFFFFFFFu);
    EXPECT_EQ(decode_frame_header(buf, sizeof(buf), &h), FrameCheck::kTooLong);
}

TEST(TcpFrame, RandomHeadersNeverPassWithAnOversizedLength) {
    std::mt19937_64 rng(12345);
    unsigned accepted = 0;
    for (int i = 0; i < 200000; ++i) {
        uint8_t buf[kFrameHeaderSize];
        for (size_t k = 0; k < sizeof(buf); k += sizeof(uint64_t)) {
            const uint64_t r = rng();
            std::memcpy(buf + k, &r, sizeof(r));
        }
        if (i % 2 == 0) {  // half with a valid magic and version, so the length check is hit
            buf[0] = kFrameMagic & 0xFF;
            buf[1] = kFrameMagic >> 8;
            buf[2] = kFrameVersion;
        }
        FrameHeader h{};
        const size_t avail = static_cast<size_t>(rng() % (kFrameHeaderSize + 1));
        if (decode_frame_header(buf, avail, &h) == FrameCheck::kOk) {
            ++accepted;
            EXPECT_EQ(avail, kFrameHeaderSize);
            EXPECT_LE(h.length, kMaxFrameBody);
        }
    }
    EXPECT_GT(accepted, 0u);
}

// ---- Hello ----------------------------------------------------------------------------------

TEST(TcpFrame, HelloRoundTripsAndRejectsEveryTruncation) {
    uint8_t nonce[kNonceSize];
    for (size_t i = 0; i < kNonceSize; ++i)
        nonce[i] = static_cast<uint8_t>(0xA0 + i);
    uint8_t buf[kHelloSize];
    encode_hello(buf, 0x1122334455667788ull, nonce);
    uint64_t uid = 0;
    uint8_t got[kNonceSize] = {};
    ASSERT_TRUE(decode_hello(buf, sizeof(buf), &uid, got));
    EXPECT_EQ(uid, 0x1122334455667788ull);
    EXPECT_EQ(std::memcmp(got, nonce, kNonceSize), 0);
    for (size_t n = 0; n < kHelloSize; ++n)
        EXPECT_FALSE(decode_hello(buf, n, &uid, got)) << n;
    EXPECT_FALSE(decode_hello(nullptr, kHelloSize, &uid, got));
    uint8_t longer[kHelloSize + 1] = {};
    std::memcpy(longer, buf, kHelloSize);
    EXPECT_FALSE(decode_hello(longer, sizeof(longer), &uid, got));
    buf[1] = kHelloVersion + 1;
    EXPECT_FALSE(decode_hello(buf, sizeof(buf), &uid, got));
    buf[1] = 1;
    EXPECT_FALSE(decode_hello(buf, sizeof(buf), &uid, got)) << "hello version 1 is gone";
    encode_hello(buf, 0x55, nonce);
    buf[0] = static_cast<uint8_t>(TcpControl::kHelloAck);
    EXPECT_FALSE(decode_hello(buf, sizeof(buf), &uid, got)) << "wrong kind";
    encode_hello(buf, 0, nonce);
    EXPECT_FALSE(decode_hello(buf, sizeof(buf), &uid, got)) << "uid 0 means unknown";
}

TEST(TcpFrame, HelloAckRoundTripsWithAndWithoutProofAndRejectsEveryTruncation) {
    uint8_t nonce[kNonceSize], proof[kProofSize];
    for (size_t i = 0; i < kNonceSize; ++i)
        nonce[i] = static_cast<uint8_t>(i * 3 + 1);
    for (size_t i = 0; i < kProofSize; ++i)
        proof[i] = static_cast<uint8_t>(0xF0 - i);
    for (bool with_proof : {false, true}) {
        SCOPED_TRACE(with_proof);
        uint8_t buf[kHelloAckMaxSize + 1] = {};
        const size_t n = encode_hello_ack(buf, 0xABCDEF, nonce, with_proof ? proof : nullptr);
        ASSERT_EQ(n, with_proof ? kHelloAckMaxSize : kHelloAckSize);
        HelloAck ack;
        ASSERT_TRUE(decode_hello_ack(buf, n, &ack));
        EXPECT_EQ(ack.uid, 0xABCDEFu);
        EXPECT_EQ(ack.has_proof, with_proof);
        EXPECT_EQ(std::memcmp(ack.nonce, nonce, kNonceSize), 0);
        if (with_proof) {
            EXPECT_EQ(std::memcmp(ack.proof, proof, kProofSize), 0);
        }
        for (size_t k = 0; k < n; ++k)
            EXPECT_FALSE(decode_hello_ack(buf, k, &ack)) << k;
        EXPECT_FALSE(decode_hello_ack(buf, n + 1, &ack)) << "trailing byte";
        EXPECT_FALSE(decode_hello_ack(nullptr, n, &ack));
        uint8_t bad[kHelloAckMaxSize + 1];
        std::memcpy(bad, buf, sizeof(bad));
        bad[1] = kHelloVersion + 1;
        EXPECT_FALSE(decode_hello_ack(bad, n, &ack)) << "version";
        std::memcpy(bad, buf, sizeof(bad));
        bad[2] |= 0x80;
        EXPECT_FALSE(decode_hello_ack(bad, n, &ack)) << "unknown flag";
        std::memcpy(bad, buf, sizeof(bad));
        bad[2] ^= kHelloAckProof;
        EXPECT_FALSE(decode_hello_ack(bad, n, &ack)) << "flag and length disagree";
        std::memcpy(bad, buf, sizeof(bad));
        bad[0] = static_cast<uint8_t>(TcpControl::kHello);
        EXPECT_FALSE(decode_hello_ack(bad, n, &ack)) << "wrong kind";
    }
    // The hold flag (crossed connects: wait for the verdict) round-trips with and without a
    // proof, and is part of the proof's context.
    for (bool with_proof : {false, true}) {
        uint8_t buf[kHelloAckMaxSize] = {};
        const size_t n = encode_hello_ack(buf, 7, nonce, with_proof ? proof : nullptr, true);
        HelloAck ack;
        ASSERT_TRUE(decode_hello_ack(buf, n, &ack));
        EXPECT_TRUE(ack.hold);
        EXPECT_EQ(ack.has_proof, with_proof);
        encode_hello_ack(buf, 7, nonce, with_proof ? proof : nullptr, false);
        ASSERT_TRUE(decode_hello_ack(buf, n, &ack));
        EXPECT_FALSE(ack.hold);
    }
    uint8_t held[kHelloContextSize], plain[kHelloContextSize];
    hello_context(1, 2, held, true);
    hello_context(1, 2, plain, false);
    EXPECT_NE(std::memcmp(held, plain, kHelloContextSize), 0);
    uint8_t zero[kHelloAckSize];
    encode_hello_ack(zero, 0, nonce, nullptr);
    HelloAck ack;
    EXPECT_FALSE(decode_hello_ack(zero, sizeof(zero), &ack)) << "uid 0 means unknown";
}

TEST(TcpFrame, ProofRoundTripsAndRejectsEveryTruncation) {
    uint8_t proof[kProofSize];
    for (size_t i = 0; i < kProofSize; ++i)
        proof[i] = static_cast<uint8_t>(i);
    uint8_t buf[kProofFrameSize + 1] = {};
    encode_proof(buf, proof);
    uint8_t got[kProofSize] = {};
    ASSERT_TRUE(decode_proof(buf, kProofFrameSize, got));
    EXPECT_EQ(std::memcmp(got, proof, kProofSize), 0);
    for (size_t k = 0; k < kProofFrameSize; ++k)
        EXPECT_FALSE(decode_proof(buf, k, got)) << k;
    EXPECT_FALSE(decode_proof(buf, kProofFrameSize + 1, got));
    EXPECT_FALSE(decode_proof(nullptr, kProofFrameSize, got));
    buf[1] = kHelloVersion + 1;
    EXPECT_FALSE(decode_proof(buf, kProofFrameSize, got));
    buf[1] = kHelloVersion;
    buf[0] = static_cast<uint8_t>(TcpControl::kGoodbye);
    EXPECT_FALSE(decode_proof(buf, kProofFrameSize, got));
}

TEST(TcpFrame, RandomHandshakeBodiesNeverDecodeWithBadLengths) {
    uint32_t x = 12345;
    uint8_t buf[kHelloAckMaxSize + 8];
    for (int round = 0; round < 20000; ++round) {
        const size_t n = x % sizeof(buf);
        for (auto& b : buf) {
            x = x * 1664525u + 1013904223u;
            b = static_cast<uint8_t>(x >> 24);
        }
        buf[0] = static_cast<uint8_t>(1 + round % 4);
        buf[1] = kHelloVersion;
        uint64_t uid;
        uint8_t nonce[kNonceSize], proof[kProofSize];
        HelloAck ack;
        if (decode_hello(buf, n, &uid, nonce)) {
            EXPECT_EQ(n, kHelloSize);
        }
        if (decode_hello_ack(buf, n, &ack)) {
            EXPECT_EQ(n, ack.has_proof ? kHelloAckMaxSize : kHelloAckSize);
        }
        if (decode_proof(buf, n, proof)) {
            EXPECT_EQ(n, kProofFrameSize);
        }
    }
}

// ---- Address section ------------------------------------------------------------------------

TEST(TcpAddress, RoundTrips) {
    auto entries = sample_entries();
    std::vector<uint8_t> bytes = encode_tcp_address(entries);
    EXPECT_EQ(bytes.size(), 2u + 3 * 3 + 4 + 16 + 4);
    std::vector<TcpAddressEntry> out;
    ASSERT_TRUE(decode_tcp_address(bytes.data(), bytes.size(), &out));
    ASSERT_EQ(out.size(), entries.size());
    for (size_t i = 0; i < out.size(); ++i)
        EXPECT_TRUE(same(out[i], entries[i])) << i;
}

TEST(TcpAddress, RejectsEveryTruncationAndTrailingBytes) {
    std::vector<uint8_t> bytes = encode_tcp_address(sample_entries());
    std::vector<TcpAddressEntry> out;
    for (size_t n = 0; n < bytes.size(); ++n) {
        // A copy of exactly n bytes, so a read past it is caught by ASan.
        std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
        EXPECT_FALSE(decode_tcp_address(prefix.empty() ? nullptr : prefix.data(), n, &out)) << n;
        EXPECT_TRUE(out.empty());
    }
    bytes.push_back(0);
    EXPECT_FALSE(decode_tcp_address(bytes.data(), bytes.size(), &out));
}

TEST(TcpAddress, RejectsBadVersionCountFamilyAndPort) {
    const std::vector<uint8_t> good = encode_tcp_address(sample_entries());
    std::vector<TcpAddressEntry> out;
    auto bad = good;
    bad[0] = kTcpAddressVersion + 1;
    EXPECT_FALSE(decode_tcp_address(bad.data(), bad.size(), &out));
    bad = good;
    bad[1] = 0;
    EXPECT_FALSE(decode_tcp_address(bad.data(), 2, &out));
    bad[1] = static_cast<uint8_t>(kMaxTcpAddresses + 1);
    EXPECT_FALSE(decode_tcp_address(bad.data(), bad.size(), &out));
    bad = good;
    bad[2] = 5;  // family of the first entry
    EXPECT_FALSE(decode_tcp_address(bad.data(), bad.size(), &out));
    bad = good;
    bad[3] = 0;  // port of the first entry: 0
    bad[4] = 0;
    EXPECT_FALSE(decode_tcp_address(bad.data(), bad.size(), &out));
}

TEST(TcpAddress, EncodesAtMostTheMaximumEntries) {
    std::vector<TcpAddressEntry> many(kMaxTcpAddresses + 5, sample_entries()[0]);
    std::vector<uint8_t> bytes = encode_tcp_address(many);
    std::vector<TcpAddressEntry> out;
    ASSERT_TRUE(decode_tcp_address(bytes.data(), bytes.size(), &out));
    EXPECT_EQ(out.size(), kMaxTcpAddresses);
}

TEST(TcpAddress, RandomBytesNeverCrashAndDecodeOnlyCanonicalSections) {
    std::mt19937_64 rng(777);
    const std::vector<uint8_t> good = encode_tcp_address(sample_entries());
    unsigned decoded = 0;
    for (int i = 0; i < 100000; ++i) {
        std::vector<uint8_t> bytes;
        if (i % 2 == 0) {
            bytes = good;  // mutate a valid section: reaches the deeper checks
            const int flips = 1 + static_cast<int>(rng() % 3);
            for (int f = 0; f < flips; ++f)
                bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
            bytes.resize(rng() % (bytes.size() + 4));
        } else {
            bytes.resize(rng() % 64);
            for (auto& b : bytes)
                b = static_cast<uint8_t>(rng());
            if (!bytes.empty()) bytes[0] = kTcpAddressVersion;
            if (bytes.size() > 1) bytes[1] = static_cast<uint8_t>(rng() % 4);
        }
        std::vector<TcpAddressEntry> out;
        if (decode_tcp_address(bytes.empty() ? nullptr : bytes.data(), bytes.size(), &out)) {
            ++decoded;
            ASSERT_FALSE(out.empty());
            EXPECT_EQ(encode_tcp_address(out), bytes);  // canonical: nothing ignored
        }
    }
    EXPECT_GT(decoded, 0u);
}

TEST(TcpAddress, LoopbackDetection) {
    auto e = sample_entries();
    EXPECT_FALSE(is_loopback(e[0]));  // 10.1.0.0
    EXPECT_TRUE(is_loopback(e[1]));   // ::1
    EXPECT_TRUE(is_loopback(e[2]));   // 127.0.0.1
    TcpAddressEntry mapped;
    mapped.family = 6;
    mapped.ip[10] = 0xFF;
    mapped.ip[11] = 0xFF;
    mapped.ip[12] = 127;
    EXPECT_TRUE(is_loopback(mapped));
}

}  // namespace
}  // namespace swy::tl::tcp
