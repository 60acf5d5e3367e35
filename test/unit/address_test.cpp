// Specification of the worker address format (swy::core::encode_address / decode_address) and
// of the shm address section (swy::tl::shm::encode_shm_address / decode_shm_address).
// A decoder sees bytes from another process: anything malformed must be rejected, never read
// past the end (run these under ASan to check that).
#include "core/address.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "transports/self/self_transport.h"
#include "transports/shm/shm_address.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/verbs/verbs_transport.h"

namespace swy::core {
namespace {

// Offsets in the version-1 wire format (address.cpp).
constexpr size_t kHeaderSize = 40;
constexpr size_t kVersionOffset = 4;
constexpr size_t kSectionCountOffset = 5;
constexpr size_t kUidOffset = 8;
constexpr size_t kSectionHeaderSize = 4;
constexpr size_t kSectionLengthOffset = 2;  // within a section header

WorkerAddress sample_address() {
    WorkerAddress a;
    a.worker_uid = 0x0123456789abcdefull;
    for (size_t i = 0; i < a.host.boot_id.size(); ++i)
        a.host.boot_id[i] = static_cast<uint8_t>(i * 7 + 1);
    a.host.netns_inode = 4026531840ull;
    a.sections.push_back({tl::self::kAddressSection, {}});
    a.sections.push_back(
        {tl::shm::kAddressSection, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}});
    a.sections.push_back({tl::tcp::kAddressSection, {0xaa, 0xbb}});
    return a;
}

void expect_same(const WorkerAddress& a, const WorkerAddress& b) {
    EXPECT_EQ(a.worker_uid, b.worker_uid);
    EXPECT_EQ(a.host, b.host);
    ASSERT_EQ(a.sections.size(), b.sections.size());
    for (size_t i = 0; i < a.sections.size(); ++i) {
        EXPECT_EQ(a.sections[i].transport, b.sections[i].transport) << "section " << i;
        EXPECT_EQ(a.sections[i].bytes, b.sections[i].bytes) << "section " << i;
    }
}

Status decode(const std::vector<uint8_t>& bytes, WorkerAddress* out, std::string* why) {
    return decode_address(bytes.data(), bytes.size(), out, why);
}

/// Decode a buffer that must be rejected; checks the reason is given.
void expect_malformed(const std::vector<uint8_t>& bytes, const char* what) {
    WorkerAddress out;
    std::string why;
    EXPECT_EQ(decode(bytes, &out, &why), Status::kMalformed) << what;
    EXPECT_FALSE(why.empty()) << what << ": a rejection must say why";
}

void put_u16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

TEST(WorkerAddress, RoundTripsThroughEncodeAndDecode) {
    const WorkerAddress a = sample_address();
    const std::vector<uint8_t> bytes = encode_address(a);
    EXPECT_EQ(bytes.size(), kHeaderSize + 3 * kSectionHeaderSize + 0 + 17 + 2);
    WorkerAddress b;
    std::string why;
    ASSERT_EQ(decode(bytes, &b, &why), Status::kOk) << why;
    expect_same(a, b);
    ASSERT_NE(b.find(tl::shm::kAddressSection), nullptr);
    EXPECT_EQ(b.find(tl::shm::kAddressSection)->bytes.size(), 17u);
    EXPECT_EQ(b.find(tl::verbs::kAddressSection), nullptr);
}

TEST(WorkerAddress, RoundTripsWithoutSections) {
    WorkerAddress a = sample_address();
    a.sections.clear();
    const auto bytes = encode_address(a);
    EXPECT_EQ(bytes.size(), kHeaderSize);
    WorkerAddress b;
    std::string why;
    ASSERT_EQ(decode(bytes, &b, &why), Status::kOk) << why;
    expect_same(a, b);
}

TEST(WorkerAddress, RoundTripsMaximumSectionCountAndLength) {
    WorkerAddress a = sample_address();
    a.sections.clear();
    for (int i = 0; i < 16; ++i)
        a.sections.push_back({tl::tcp::kAddressSection, std::vector<uint8_t>(i * 3, uint8_t(i))});
    a.sections.back().bytes.assign(UINT16_MAX, 0x5a);  // longest section the format can carry
    const auto bytes = encode_address(a);
    WorkerAddress b;
    std::string why;
    ASSERT_EQ(decode(bytes, &b, &why), Status::kOk) << why;
    expect_same(a, b);
}

TEST(WorkerAddress, EveryTruncationIsRejected) {
    const auto bytes = encode_address(sample_address());
    for (size_t n = 0; n < bytes.size(); ++n) {
        // A fresh allocation of exactly n bytes so that ASan catches any read past the end.
        std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
        prefix.shrink_to_fit();
        expect_malformed(prefix, ("prefix of " + std::to_string(n) + " bytes").c_str());
    }
}

TEST(WorkerAddress, NullDataIsRejected) {
    WorkerAddress out;
    std::string why;
    EXPECT_EQ(decode_address(nullptr, 0, &out, &why), Status::kMalformed);
    EXPECT_EQ(decode_address(nullptr, 1000, &out, &why), Status::kMalformed);
}

TEST(WorkerAddress, BadMagicIsRejected) {
    auto bytes = encode_address(sample_address());
    for (size_t i = 0; i < 4; ++i) {
        auto bad = bytes;
        bad[i] ^= 0x20;
        expect_malformed(bad, "bad magic");
    }
}

TEST(WorkerAddress, UnknownVersionIsRejected) {
    for (uint8_t v : {0, 2, 255}) {
        auto bytes = encode_address(sample_address());
        bytes[kVersionOffset] = v;
        WorkerAddress out;
        std::string why;
        EXPECT_EQ(decode(bytes, &out, &why), Status::kMalformed) << "version " << int(v);
        EXPECT_NE(why.find("version"), std::string::npos) << why;
    }
}

TEST(WorkerAddress, ZeroWorkerUidIsRejected) {
    auto bytes = encode_address(sample_address());
    put_u64(bytes, kUidOffset, 0);
    expect_malformed(bytes, "worker uid 0");
}

TEST(WorkerAddress, TooManySectionsIsRejected) {
    WorkerAddress a = sample_address();
    a.sections.assign(17, AddressSection{tl::self::kAddressSection, {}});
    expect_malformed(encode_address(a), "17 well-formed sections");

    // A count far beyond the bytes present must be rejected, not trusted.
    auto bytes = encode_address(sample_address());
    bytes[kSectionCountOffset] = 255;
    expect_malformed(bytes, "section count 255");
}

TEST(WorkerAddress, SectionCountBeyondTheDataIsRejected) {
    auto bytes = encode_address(sample_address());
    bytes[kSectionCountOffset] = 4;  // three present
    expect_malformed(bytes, "one section header missing");
}

TEST(WorkerAddress, SectionLengthBeyondTheEndIsRejected) {
    const auto good = encode_address(sample_address());
    // The last section (2 bytes) starts at header + (4 + 0) + (4 + 17).
    const size_t last = kHeaderSize + kSectionHeaderSize + kSectionHeaderSize + 17;
    for (uint16_t len : {uint16_t{3}, uint16_t{100}, uint16_t{UINT16_MAX}}) {
        auto bad = good;
        put_u16(bad, last + kSectionLengthOffset, len);
        expect_malformed(bad, "last section too long");
    }
    // The first section claims the whole rest of the address and more.
    auto bad = good;
    put_u16(bad, kHeaderSize + kSectionLengthOffset, static_cast<uint16_t>(good.size()));
    expect_malformed(bad, "first section too long");
}

TEST(WorkerAddress, TrailingBytesAreRejected) {
    auto bytes = encode_address(sample_address());
    bytes.push_back(0);
    expect_malformed(bytes, "one trailing byte");
    bytes.resize(bytes.size() + 100, 0xff);
    expect_malformed(bytes, "many trailing bytes");

    // A shorter last section leaves the rest as trailing bytes.
    auto shorter = encode_address(sample_address());
    const size_t last = kHeaderSize + kSectionHeaderSize + kSectionHeaderSize + 17;
    put_u16(shorter, last + kSectionLengthOffset, 1);
    expect_malformed(shorter, "section shorter than the data");
}

TEST(WorkerAddress, FailedDecodeLeavesOutputUntouched) {
    WorkerAddress out = sample_address();
    out.worker_uid = 77;
    auto bytes = encode_address(sample_address());
    bytes.pop_back();
    std::string why;
    ASSERT_EQ(decode(bytes, &out, &why), Status::kMalformed);
    EXPECT_EQ(out.worker_uid, 77u);
    EXPECT_EQ(out.sections.size(), 3u);
}

// Random corruption of valid addresses: whatever the decoder accepts must be self-consistent
// (re-encodes to the same length and decodes again to the same value); nothing may crash.
TEST(WorkerAddress, RandomCorruptionNeverCrashes) {
    std::mt19937_64 rng(20240611);
    std::vector<std::vector<uint8_t>> seeds;
    seeds.push_back(encode_address(sample_address()));
    WorkerAddress empty = sample_address();
    empty.sections.clear();
    seeds.push_back(encode_address(empty));
    WorkerAddress many = sample_address();
    many.sections.assign(16, AddressSection{tl::shm::kAddressSection, {9, 8, 7}});
    seeds.push_back(encode_address(many));

    int accepted = 0;
    int rejected = 0;
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<uint8_t> bytes = seeds[rng() % seeds.size()];
        switch (rng() % 4) {
            case 0: {  // flip a few bytes
                const int flips = 1 + static_cast<int>(rng() % 4);
                for (int f = 0; f < flips; ++f)
                    bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
                break;
            }
            case 1:  // truncate
                bytes.resize(rng() % bytes.size());
                break;
            case 2:  // extend with garbage
                for (int n = 1 + static_cast<int>(rng() % 8); n > 0; --n)
                    bytes.push_back(static_cast<uint8_t>(rng()));
                break;
            case 3: {  // hit the length / count fields, the ones a decoder must not trust
                const size_t at = bytes.size() > kHeaderSize + 4
                                      ? kHeaderSize + kSectionLengthOffset
                                      : kSectionCountOffset;
                bytes[at] = static_cast<uint8_t>(rng());
                if (rng() % 2 != 0) bytes[kSectionCountOffset] = static_cast<uint8_t>(rng() % 20);
                break;
            }
        }
        bytes.shrink_to_fit();
        WorkerAddress out;
        std::string why;
        const Status s = decode(bytes, &out, &why);
        if (s == Status::kOk) {
            ++accepted;
            const auto again = encode_address(out);
            ASSERT_EQ(again.size(), bytes.size()) << "iteration " << iter;
            WorkerAddress twice;
            ASSERT_EQ(decode(again, &twice, &why), Status::kOk) << why;
            expect_same(out, twice);
        } else {
            ++rejected;
            ASSERT_EQ(s, Status::kMalformed) << "iteration " << iter;
            ASSERT_FALSE(why.empty());
        }
    }
    // Both branches must have been exercised for the test to mean anything.
    EXPECT_GT(accepted, 100);
    EXPECT_GT(rejected, 1000);
}

TEST(WorkerAddress, RandomBuffersAreRejectedWithoutCrashing) {
    std::mt19937_64 rng(7);
    for (int iter = 0; iter < 3000; ++iter) {
        std::vector<uint8_t> bytes(rng() % 200);
        for (auto& b : bytes)
            b = static_cast<uint8_t>(rng());
        if (bytes.size() >= 4 && rng() % 2 == 0) {
            const uint32_t magic = 0x41595753;  // get past the magic check half the time
            std::memcpy(bytes.data(), &magic, 4);
        }
        bytes.shrink_to_fit();
        WorkerAddress out;
        std::string why;
        const Status s = decode(bytes, &out, &why);
        ASSERT_TRUE(s == Status::kOk || s == Status::kMalformed);
    }
}

TEST(HostIdentity, LocalIdentityIsStable) {
    EXPECT_EQ(HostIdentity::local(), HostIdentity::local());
}

}  // namespace
}  // namespace swy::core

namespace swy::tl::shm {
namespace {

ShmAddress sample_shm() {
    ShmAddress a{};
    a.pid = 4242;
    a.memfd = 17;
    a.segment_size = uint64_t{1} << 24;
    return a;
}

bool decode_bytes(const std::vector<uint8_t>& bytes, ShmAddress* out) {
    return decode_shm_address(bytes.data(), bytes.size(), out);
}

std::vector<uint8_t> encoded_with(ShmAddress a) { return encode_shm_address(a); }

TEST(ShmAddressSection, RoundTripsThroughEncodeAndDecode) {
    ShmAddress a = sample_shm();
    std::memset(&a, 0x3c, sizeof(a));  // every byte set, padding included
    a.pid = 4242;
    a.memfd = 17;
    a.segment_size = uint64_t{1} << 24;
    a.wake_fd = 18;
    a.reserved = 0;
    const auto bytes = encode_shm_address(a);
    EXPECT_EQ(bytes.size(), 1 + sizeof(ShmAddress));
    ShmAddress b{};
    ASSERT_TRUE(decode_bytes(bytes, &b));
    EXPECT_EQ(b.pid, a.pid);
    EXPECT_EQ(b.memfd, a.memfd);
    EXPECT_EQ(b.segment_size, a.segment_size);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0) << "every field survives";
}

TEST(ShmAddressSection, EveryWrongLengthIsRejected) {
    const auto good = encode_shm_address(sample_shm());
    for (size_t n = 0; n < good.size() + 16; ++n) {
        if (n == good.size()) continue;
        std::vector<uint8_t> bytes(n, 0);
        std::copy_n(good.begin(), std::min(n, good.size()), bytes.begin());
        bytes.shrink_to_fit();
        ShmAddress out{};
        EXPECT_FALSE(decode_bytes(bytes, &out)) << "length " << n;
    }
    ShmAddress out{};
    EXPECT_FALSE(decode_shm_address(nullptr, good.size(), &out));
}

TEST(ShmAddressSection, WrongVersionIsRejected) {
    for (unsigned v = 0; v < 256; ++v) {
        if (v == kShmAddressVersion) continue;
        auto bytes = encode_shm_address(sample_shm());
        bytes[0] = static_cast<uint8_t>(v);
        ShmAddress out{};
        EXPECT_FALSE(decode_bytes(bytes, &out)) << "version " << int(v);
    }
}

TEST(ShmAddressSection, NonPositivePidIsRejected) {
    for (int32_t pid : {0, -1, INT32_MIN}) {
        ShmAddress a = sample_shm();
        a.pid = pid;
        ShmAddress out{};
        EXPECT_FALSE(decode_bytes(encoded_with(a), &out)) << "pid " << pid;
    }
}

TEST(ShmAddressSection, NegativeMemfdIsRejected) {
    ShmAddress a = sample_shm();
    a.memfd = -1;
    ShmAddress out{};
    EXPECT_FALSE(decode_bytes(encoded_with(a), &out));
    a.memfd = 0;
    EXPECT_TRUE(decode_bytes(encoded_with(a), &out));
}

TEST(ShmAddressSection, SegmentSizeMustBeAtLeastOnePageAndBelowOneTiB) {
    ShmAddress out{};
    for (uint64_t size :
         {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{1} << 40, UINT64_MAX}) {
        ShmAddress a = sample_shm();
        a.segment_size = size;
        EXPECT_FALSE(decode_bytes(encoded_with(a), &out)) << "size " << size;
    }
    for (uint64_t size : {uint64_t{4096}, (uint64_t{1} << 40) - 1}) {
        ShmAddress a = sample_shm();
        a.segment_size = size;
        EXPECT_TRUE(decode_bytes(encoded_with(a), &out)) << "size " << size;
    }
}

TEST(ShmAddressSection, RandomCorruptionNeverCrashes) {
    std::mt19937_64 rng(99);
    const auto good = encode_shm_address(sample_shm());
    int accepted = 0;
    for (int iter = 0; iter < 5000; ++iter) {
        auto bytes = good;
        if (rng() % 8 == 0) bytes.resize(rng() % (good.size() + 8));
        for (int f = 1 + static_cast<int>(rng() % 3); f > 0 && !bytes.empty(); --f) {
            bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
        }
        bytes.shrink_to_fit();
        ShmAddress out{};
        if (decode_bytes(bytes, &out)) {
            ++accepted;
            // Whatever is accepted satisfies the documented ranges.
            ASSERT_EQ(bytes.size(), good.size());
            ASSERT_GT(out.pid, 0);
            ASSERT_GE(out.memfd, 0);
            ASSERT_GE(out.segment_size, 4096u);
            ASSERT_LT(out.segment_size, uint64_t{1} << 40);
        }
    }
    EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace swy::tl::shm
