// Specification of swy::proto::read_header: a received packet shorter than the header its
// active-message id promises is rejected without reading it; a long enough one yields exactly
// its first sizeof(Header) bytes. (Layouts are static_asserted in wire.h.)
#include "protocols/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace swy::proto {
namespace {

constexpr uint8_t kSentinel = 0xa5;

/// Bytes 1, 2, 3, ... so that every header field gets a distinctive value.
std::vector<uint8_t> counting_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i + 1);
    return v;
}

template <typename Header>
class ReadHeader : public ::testing::Test {};

using AllHeaders =
    ::testing::Types<EagerOnlyHeader, EagerSyncHeader, EagerFirstHeader, EagerMiddleHeader,
                     AckHeader, RtsHeader, RtrHeader, RndvDataHeader>;
TYPED_TEST_SUITE(ReadHeader, AllHeaders);

TYPED_TEST(ReadHeader, RejectsEveryShortPacketAndLeavesOutputUntouched) {
    const auto full = counting_bytes(sizeof(TypeParam));
    for (size_t n = 0; n < sizeof(TypeParam); ++n) {
        // Exactly n bytes on the heap so that ASan would flag a read past the packet.
        std::vector<uint8_t> packet(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
        packet.shrink_to_fit();
        TypeParam out;
        std::memset(&out, kSentinel, sizeof(out));
        EXPECT_FALSE(read_header(packet.data(), packet.size(), &out)) << "length " << n;
        const auto* raw = reinterpret_cast<const uint8_t*>(&out);
        for (size_t i = 0; i < sizeof(out); ++i) {
            ASSERT_EQ(raw[i], kSentinel) << "length " << n << ": byte " << i << " was written";
        }
    }
}

TYPED_TEST(ReadHeader, RejectsEmptyPacketWithoutDereferencing) {
    TypeParam out{};
    EXPECT_FALSE(read_header<TypeParam>(nullptr, 0, &out));
}

TYPED_TEST(ReadHeader, AcceptsExactLengthAndCopiesTheHeader) {
    const auto packet = counting_bytes(sizeof(TypeParam));
    TypeParam out;
    std::memset(&out, 0, sizeof(out));
    ASSERT_TRUE(read_header(packet.data(), packet.size(), &out));
    EXPECT_EQ(std::memcmp(&out, packet.data(), sizeof(out)), 0);
}

TYPED_TEST(ReadHeader, AcceptsLongerPacketAndCopiesOnlyTheHeader) {
    // Header followed by payload: only the leading sizeof(Header) bytes are the header.
    const auto packet = counting_bytes(sizeof(TypeParam) + 100);
    TypeParam out;
    std::memset(&out, 0, sizeof(out));
    ASSERT_TRUE(read_header(packet.data(), packet.size(), &out));
    EXPECT_EQ(std::memcmp(&out, packet.data(), sizeof(out)), 0);
}

TYPED_TEST(ReadHeader, ReadsFromAnUnalignedPacket) {
    // Headers follow other bytes in transport cells; the packet need not be aligned.
    std::vector<uint8_t> buffer(sizeof(TypeParam) + 1);
    const auto body = counting_bytes(sizeof(TypeParam));
    std::memcpy(buffer.data() + 1, body.data(), body.size());
    TypeParam out;
    ASSERT_TRUE(read_header(buffer.data() + 1, sizeof(TypeParam), &out));
    EXPECT_EQ(std::memcmp(&out, body.data(), sizeof(out)), 0);
}

TEST(ReadHeader, DecodesFieldsOfAnRtsHeader) {
    RtsHeader in{};
    in.tag = 0x1122334455667788ull;
    in.sender_request = 42;
    in.total_length = 1 << 20;
    in.address = 0x7fff00001000ull;
    in.reserved0 = 1234;
    in.scheme = static_cast<uint32_t>(RndvScheme::kPipeline);
    std::vector<uint8_t> packet(sizeof(in) + 8, 0);
    std::memcpy(packet.data(), &in, sizeof(in));
    RtsHeader out{};
    ASSERT_TRUE(read_header(packet.data(), packet.size(), &out));
    EXPECT_EQ(out.tag, in.tag);
    EXPECT_EQ(out.sender_request, in.sender_request);
    EXPECT_EQ(out.total_length, in.total_length);
    EXPECT_EQ(out.address, in.address);
    EXPECT_EQ(out.reserved0, in.reserved0);
    EXPECT_EQ(out.scheme, in.scheme);
}

TEST(AmIds, AreDistinctAndBelowTransportReservedRange) {
    const tl::AmId ids[] = {kAmEagerOnly, kAmEagerSyncOnly, kAmEagerFirst, kAmEagerMiddle,
                            kAmSyncAck,   kAmRndvRts,       kAmRndvAts,    kAmRndvRtr,
                            kAmRndvFin,   kAmRndvData};
    for (size_t i = 0; i < std::size(ids); ++i) {
        EXPECT_LT(ids[i], kAmMax);
        EXPECT_LT(ids[i], 0xF0) << "transports reserve 0xF0 and above";
        for (size_t j = i + 1; j < std::size(ids); ++j)
            EXPECT_NE(ids[i], ids[j]);
    }
}

}  // namespace
}  // namespace swy::proto
