// dt::DataView (datatype/data_view.h): packed length, pack and unpack of any packed range of
// iov data (in order, backwards, across empty entries), generic callbacks with finish once,
// refusals; and the non-contiguous protocol table derived from a host table.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "datatype/data_view.h"
#include "protocols/datatype_table.h"

namespace swy::dt {
namespace {

/// An iov over one backing buffer: entries of the given sizes, 2 guard bytes after each.
struct IovData {
    std::vector<uint8_t> backing;
    std::vector<swy_dt_iov_t> iov;
    explicit IovData(const std::vector<size_t>& sizes) {
        size_t span = 0;
        for (size_t n : sizes)
            span += n + 2;
        backing.assign(span, 0xEE);
        size_t at = 0;
        for (size_t n : sizes) {
            iov.push_back({n != 0 ? backing.data() + at : nullptr, n});
            at += n + 2;
        }
    }
    size_t length() const {
        size_t t = 0;
        for (const auto& e : iov)
            t += e.length;
        return t;
    }
};

std::vector<uint8_t> logical(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i * 131 + 7);
    return v;
}

const std::vector<size_t> kSizes{0, 3, 0, 0, 1, 17, 0, 64, 5, 0, 1000, 2, 0};

TEST(DataView, IovLengthIsTheSumOfEntriesAndEmptyEntriesAreSkipped) {
    IovData d(kSizes);
    DataView v;
    ASSERT_EQ(v.init(SWY_DATATYPE_IOV, d.iov.data(), d.iov.size(), true), Status::kOk);
    EXPECT_EQ(v.kind(), Kind::kIov);
    EXPECT_FALSE(v.contiguous());
    EXPECT_EQ(v.length(), d.length());
}

TEST(DataView, IovPacksEveryRangeAtEveryOffsetInAnyOrder) {
    IovData d(kSizes);
    const std::vector<uint8_t> want = logical(d.length());
    // Scatter the logical bytes through unpack in one go, then pack every range back.
    DataView v;
    ASSERT_EQ(v.init(SWY_DATATYPE_IOV, d.iov.data(), d.iov.size(), false), Status::kOk);
    ASSERT_EQ(v.unpack(0, want.data(), want.size()), Status::kOk);
    for (size_t off = 0; off <= want.size(); off += 1) {
        for (size_t len : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{63}, size_t{5000}}) {
            std::vector<uint8_t> out(len, 0);
            const size_t n = v.pack(off, out.data(), len);
            ASSERT_EQ(n, std::min(len, want.size() - off)) << off << "+" << len;
            ASSERT_TRUE(std::equal(out.begin(), out.begin() + static_cast<long>(n),
                                   want.begin() + static_cast<long>(off)))
                << "pack at " << off << " length " << len;
        }
    }
    // Guard bytes after every entry are untouched.
    for (const auto& e : d.iov) {
        if (e.length == 0) continue;
        const auto* after = static_cast<uint8_t*>(e.buffer) + e.length;
        EXPECT_EQ(after[0], 0xEE);
        EXPECT_EQ(after[1], 0xEE);
    }
}

TEST(DataView, IovUnpacksFragmentsOutOfOrderAndIgnoresBytesPastTheEnd) {
    IovData d(kSizes);
    const size_t total = d.length();
    const std::vector<uint8_t> want = logical(total);
    DataView v;
    ASSERT_EQ(v.init(SWY_DATATYPE_IOV, d.iov.data(), d.iov.size(), false), Status::kOk);
    // Fragments of 37 bytes, odd ones first, then even ones backwards.
    const size_t frag = 37;
    std::vector<size_t> offsets;
    const size_t count = (total + frag - 1) / frag;
    for (size_t k = 1; k < count; k += 2)
        offsets.push_back(k * frag);
    for (size_t k = (count - 1) / 2 * 2 + 2; k >= 2; k -= 2)
        offsets.push_back((k - 2) * frag);
    ASSERT_EQ(offsets.size(), count);
    for (size_t o : offsets) {
        const size_t n = std::min(frag, total - o);
        ASSERT_EQ(v.unpack(o, want.data() + o, n), Status::kOk);
    }
    // A fragment reaching past the end places only what fits.
    std::vector<uint8_t> extra(100, 0x55);
    ASSERT_EQ(v.unpack(total, extra.data(), extra.size()), Status::kOk);
    std::vector<uint8_t> got(total);
    ASSERT_EQ(v.pack(0, got.data(), total), total);
    EXPECT_EQ(got, want);
    size_t at = 0;
    for (const auto& e : d.iov)
        at += e.length + 2;
    EXPECT_EQ(d.backing[at - 1], 0xEE);
    EXPECT_EQ(d.backing[at - 2], 0xEE);
}

TEST(DataView, DirectOnlyWhereOneEntryHoldsTheWholeRange) {
    IovData d({0, 10, 0, 20, 5});
    DataView v;
    ASSERT_EQ(v.init(SWY_DATATYPE_IOV, d.iov.data(), d.iov.size(), false), Status::kOk);
    EXPECT_EQ(v.direct(0, 10), static_cast<uint8_t*>(d.iov[1].buffer));
    EXPECT_EQ(v.direct(3, 7), static_cast<uint8_t*>(d.iov[1].buffer) + 3);
    EXPECT_EQ(v.direct(3, 8), nullptr);  // straddles two entries
    EXPECT_EQ(v.direct(10, 20), static_cast<uint8_t*>(d.iov[3].buffer));
    EXPECT_EQ(v.direct(31, 4), static_cast<uint8_t*>(d.iov[4].buffer) + 1);
    EXPECT_EQ(v.direct(31, 5), nullptr);                                    // past the end
    EXPECT_EQ(v.direct(2, 1), static_cast<uint8_t*>(d.iov[1].buffer) + 2);  // backwards
}

TEST(DataView, IovRefusesANullArrayOrANullEntryWithALength) {
    DataView v;
    EXPECT_EQ(v.init(SWY_DATATYPE_IOV, nullptr, 2, true), Status::kInvalidParam);
    EXPECT_EQ(v.init(SWY_DATATYPE_IOV, nullptr, 0, true), Status::kOk);
    EXPECT_EQ(v.length(), 0u);
    swy_dt_iov_t bad[] = {{nullptr, 4}};
    EXPECT_EQ(v.init(SWY_DATATYPE_IOV, bad, 1, true), Status::kInvalidParam);
    swy_dt_iov_t overflow[] = {{bad, SIZE_MAX}, {bad, 2}};
    EXPECT_EQ(v.init(SWY_DATATYPE_IOV, overflow, 2, true), Status::kInvalidParam);
}

struct Calls {
    int starts = 0, finishes = 0;
    std::vector<uint8_t> bytes;
    swy_status_t unpack_status = SWY_OK;
};
void* g_start_pack(void* c, const void*, size_t) {
    ++static_cast<Calls*>(c)->starts;
    return c;
}
void* g_start_unpack(void* c, void*, size_t) {
    ++static_cast<Calls*>(c)->starts;
    return c;
}
size_t g_size(void* s) { return static_cast<Calls*>(s)->bytes.size(); }
size_t g_pack(void* s, size_t off, void* dst, size_t max) {
    auto* c = static_cast<Calls*>(s);
    const size_t n = std::min(max, c->bytes.size() - off);
    std::memcpy(dst, c->bytes.data() + off, n);
    return n;
}
swy_status_t g_unpack(void* s, size_t off, const void* src, size_t len) {
    auto* c = static_cast<Calls*>(s);
    std::memcpy(c->bytes.data() + off, src, len);
    return c->unpack_status;
}
void g_finish(void* s) { ++static_cast<Calls*>(s)->finishes; }

TEST(DataView, GenericCallsItsCallbacksAndFinishesOnce) {
    Calls calls;
    calls.bytes = logical(100);
    GenericType g{
        {g_start_pack, g_start_unpack, g_size, g_pack, g_unpack, g_finish}, &calls, kGenericMagic};
    const auto handle = static_cast<swy_datatype_t>(reinterpret_cast<uintptr_t>(&g));
    {
        DataView v;
        ASSERT_EQ(v.init(handle, nullptr, 0, true), Status::kOk);
        EXPECT_EQ(v.length(), 100u);
        uint8_t out[30];
        EXPECT_EQ(v.pack(90, out, sizeof(out)), 10u);  // clamped at the end
        EXPECT_EQ(out[0], calls.bytes[90]);
        v.finish();
        v.finish();  // idempotent
        EXPECT_EQ(calls.finishes, 1);
        EXPECT_EQ(v.length(), 0u);  // a late fragment reaches nothing
        EXPECT_EQ(v.unpack(0, out, 10), Status::kOk);
    }
    EXPECT_EQ(calls.starts, 1);
    EXPECT_EQ(calls.finishes, 1);  // the destructor did not finish again
    {
        DataView v;  // never finished by hand: the destructor does it
        ASSERT_EQ(v.init(handle, nullptr, 0, false), Status::kOk);
        calls.unpack_status = SWY_ERR_ACCESS_DENIED;
        uint8_t in[4] = {1, 2, 3, 4};
        EXPECT_EQ(v.unpack(10, in, 4), Status::kAccessDenied);
        EXPECT_EQ(v.error(), Status::kAccessDenied);
    }
    EXPECT_EQ(calls.starts, 2);
    EXPECT_EQ(calls.finishes, 2);
    g.magic = 0;  // destroyed
    DataView v;
    EXPECT_EQ(v.init(handle, nullptr, 0, true), Status::kInvalidParam);
    EXPECT_EQ(calls.starts, 2);
}

}  // namespace
}  // namespace swy::dt

namespace swy::proto {
namespace {

TEST(DatatypeTable, EagerSplitsAtOnePacketAndRendezvousIsAlwaysThePipeline) {
    ProtoTable host;
    host.add(200, ProtoId::kEagerShort, "pio");
    host.add(30000, ProtoId::kEagerBcopy, "bcopy");
    host.add(1u << 20, ProtoId::kRndvGetCma, "cma");
    host.add(SIZE_MAX, ProtoId::kRndvPutCma, "cma put");
    const ProtoTable t = datatype_table(host, 4000, 4048);
    const auto& r = t.ranges();
    ASSERT_EQ(r.size(), 4u) << t.print();
    EXPECT_EQ(r[0].max_size, 200u);
    EXPECT_EQ(r[0].proto, ProtoId::kEagerShort);
    EXPECT_EQ(r[1].max_size, 4000u);
    EXPECT_EQ(r[1].proto, ProtoId::kEagerBcopy);
    EXPECT_NE(r[1].reason.find("one packet"), std::string::npos);
    EXPECT_EQ(r[2].max_size, 30000u);
    EXPECT_EQ(r[2].proto, ProtoId::kEagerBcopy);
    EXPECT_NE(r[2].reason.find("fragments"), std::string::npos);
    EXPECT_EQ(r[3].max_size, SIZE_MAX);
    EXPECT_EQ(r[3].proto, ProtoId::kRndvPipeline);
}

}  // namespace
}  // namespace swy::proto
