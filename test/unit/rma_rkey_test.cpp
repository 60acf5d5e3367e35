// The packed remote key: round trip, and a peer's byte strings that are not keys (every
// byte is checked: truncated, extended, any single byte changed).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "protocols/rma/mem_table.h"
#include "protocols/rma/rkey.h"

namespace swy::rma {
namespace {

KeyFields sample(bool allocated) {
    KeyFields f;
    f.id.slot = 17;
    f.id.secret = 0x0123456789abcdefull;
    f.id.base = 0x7f0000001000ull;
    f.id.length = 65536;
    f.id.access = kAccessRead | kAccessAtomic;
    f.flags = allocated ? kKeyFlagAllocated : 0;
    f.table_fd = 9;
    f.segment_fd = allocated ? 12 : -1;
    f.table_id = 0xfeedfacecafebeefull;
    return f;
}

bool same(const KeyFields& a, const KeyFields& b) {
    return a.id.slot == b.id.slot && a.id.secret == b.id.secret && a.id.base == b.id.base &&
           a.id.length == b.id.length && a.id.access == b.id.access && a.flags == b.flags &&
           a.table_fd == b.table_fd && a.segment_fd == b.segment_fd && a.table_id == b.table_id;
}

TEST(RmaRkey, PackUnpackRoundTrip) {
    for (bool allocated : {false, true}) {
        uint8_t bytes[kPackedKeyBytes];
        encode_key(sample(allocated), bytes);
        KeyFields out;
        ASSERT_EQ(decode_key(bytes, sizeof(bytes), &out), Status::kOk);
        EXPECT_TRUE(same(out, sample(allocated)));
        EXPECT_EQ(out.allocated(), allocated);
    }
}

TEST(RmaRkey, LayoutIsLittleEndianAtFixedOffsets) {
    uint8_t bytes[kPackedKeyBytes];
    encode_key(sample(true), bytes);
    EXPECT_EQ(std::memcmp(bytes, "SWYK", 4), 0);
    EXPECT_EQ(bytes[4], kKeyVersion);
    EXPECT_EQ(bytes[5], kKeyFlagAllocated);
    EXPECT_EQ(bytes[8], 17);     // slot
    EXPECT_EQ(bytes[24], 0xef);  // secret, low byte first
    EXPECT_EQ(bytes[31], 0x01);
    EXPECT_EQ(bytes[48], 0xef);  // table id
}

TEST(RmaRkey, TruncatedOrExtendedStringsAreMalformed) {
    uint8_t bytes[kPackedKeyBytes + 1] = {};
    encode_key(sample(true), bytes);
    KeyFields out;
    for (size_t n = 0; n < kPackedKeyBytes; ++n) {
        EXPECT_EQ(decode_key(bytes, n, &out), Status::kMalformed) << n;
    }
    EXPECT_EQ(decode_key(bytes, kPackedKeyBytes + 1, &out), Status::kMalformed);
    EXPECT_EQ(decode_key(nullptr, kPackedKeyBytes, &out), Status::kMalformed);
}

TEST(RmaRkey, EverySingleByteChangeIsMalformedOrAnotherValidKey) {
    // A changed byte either fails the decoder or yields a key whose identity differs (a
    // different slot, secret, range, rights or fds): the owner's table then refuses it.
    size_t malformed = 0, other = 0;
    for (bool allocated : {false, true}) {
        uint8_t good[kPackedKeyBytes];
        encode_key(sample(allocated), good);
        for (size_t i = 0; i < kPackedKeyBytes; ++i) {
            for (unsigned bit = 0; bit < 8; ++bit) {
                uint8_t bytes[kPackedKeyBytes];
                std::memcpy(bytes, good, sizeof(bytes));
                bytes[i] ^= static_cast<uint8_t>(1u << bit);
                KeyFields out;
                const Status s = decode_key(bytes, sizeof(bytes), &out);
                if (s == Status::kOk) {
                    EXPECT_FALSE(same(out, sample(allocated))) << "byte " << i << " bit " << bit;
                    ++other;
                } else {
                    EXPECT_EQ(s, Status::kMalformed);
                    ++malformed;
                }
            }
        }
    }
    // Magic, version, reserved bytes and the high bytes of slot and fds can only be malformed.
    EXPECT_GT(malformed, 2u * 8 * 16);
    EXPECT_GT(other, 0u);
}

TEST(RmaRkey, FieldRulesAreEnforced) {
    auto check = [](KeyFields f) {
        uint8_t bytes[kPackedKeyBytes];
        encode_key(f, bytes);
        KeyFields out;
        return decode_key(bytes, sizeof(bytes), &out);
    };
    KeyFields f = sample(false);
    EXPECT_EQ(check(f), Status::kOk);
    f.id.length = 0;
    EXPECT_EQ(check(f), Status::kMalformed) << "empty range";
    f = sample(false);
    f.id.base = ~uint64_t{0} - 10;
    f.id.length = 11;
    EXPECT_EQ(check(f), Status::kMalformed) << "range wraps";
    f.id.length = 10;
    EXPECT_EQ(check(f), Status::kOk) << "range ends at the top";
    f = sample(false);
    f.id.access = 1u << 3;
    EXPECT_EQ(check(f), Status::kMalformed) << "unknown access bit";
    f = sample(false);
    f.id.secret = 0;
    EXPECT_EQ(check(f), Status::kMalformed) << "secret 0 is a free slot";
    f = sample(false);
    f.id.slot = kKeyTableSlots;
    EXPECT_EQ(check(f), Status::kMalformed) << "slot outside the table";
    f = sample(false);
    f.segment_fd = 3;
    EXPECT_EQ(check(f), Status::kMalformed) << "segment fd without the allocated flag";
    f = sample(true);
    f.segment_fd = -1;
    EXPECT_EQ(check(f), Status::kMalformed) << "allocated without a segment fd";
    f = sample(false);
    f.flags = 0x80;
    EXPECT_EQ(check(f), Status::kMalformed) << "unknown flag";
    f = sample(false);
    f.table_fd = -1;
    EXPECT_EQ(check(f), Status::kMalformed);
    f = sample(false);
    f.table_id = 0;
    EXPECT_EQ(check(f), Status::kMalformed);
}

}  // namespace
}  // namespace swy::rma
