// An 8 KiB MPI message crosses shm in one piece (issue 17): one shared-FIFO cell on an
// endpoint without a PIO ring, one eager_short record on an endpoint with one; and around the
// new edges (the largest one-packet message, the fragment size) every payload arrives byte
// for byte on both endpoint shapes. With 8 KiB cells that reserved room for a header that
// lives elsewhere, an 8192-byte message plus its 8-byte tag header took two fragments.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "protocols/wire.h"
#include "worker_pair.h"

namespace swy::test {
namespace {

constexpr size_t kMpiEightKiB = 8192;  ///< the message size osu_bw/osu_mbw_mr measure
constexpr swy_tag_t kTag = 0x17000000;

/// WorkerPair over shm alone, with the geometry a derived fixture chooses.
class ShmShape : public WorkerPair {
protected:
    swy_ep_attr_t lane() {
        swy_ep_attr_t a{};
        a.field_mask = SWY_EP_ATTR_FIELD_LANE;
        EXPECT_EQ(swy_ep_query(ep_, &a), SWY_OK);
        return a;
    }

    /// Wait for @p r (when a request) and free it; its status.
    swy_status_t finish(swy_status_t posted, swy_request_h r) {
        if (posted != SWY_INPROGRESS) return posted;
        const swy_status_t s = wait(r);
        EXPECT_EQ(swy_request_free(r), SWY_OK);
        return s;
    }

    /// Receive the message tagged @p tag into a buffer of exactly its @p n bytes (and a
    /// guard), and check it equals pattern(n, @p seed).
    void receive_and_check(size_t n, swy_tag_t tag, uint64_t seed) {
        std::vector<uint8_t> in(n + 64, 0xEE);
        swy_tag_recv_info_t info{};
        ASSERT_EQ(receive_on_b(in.data(), n, tag, ~0ull, &info), SWY_OK) << n << " B";
        EXPECT_EQ(info.length, n);
        const std::vector<uint8_t> want = pattern(n, seed);
        EXPECT_EQ(std::memcmp(in.data(), want.data(), n), 0) << n << " B: payload differs";
        for (size_t i = n; i < in.size(); ++i)
            ASSERT_EQ(in[i], 0xEE) << n << " B: byte " << i << " written past the buffer";
    }

    /// One message of @p n bytes a -> b, synchronous or not, received after it arrived
    /// (unexpected) and checked byte for byte.
    void round_trip(size_t n, bool sync, uint64_t seed) {
        const std::vector<uint8_t> out = pattern(n, seed);
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
        p.flags = sync ? SWY_REQ_FLAG_SYNC : 0;
        swy_request_h s = nullptr;
        const swy_status_t posted = swy_tag_send_nb(ep_, out.data(), n, kTag + seed, &p, &s);
        ASSERT_TRUE(posted == SWY_OK || posted == SWY_INPROGRESS) << swy_status_string(posted);
        for (int i = 0; i < 100; ++i)
            progress();
        receive_and_check(n, kTag + seed, seed);
        EXPECT_EQ(finish(posted, s), SWY_OK) << n << " B";
    }

    /// A small message both ways of warm-up: the lane is attached, its PIO ring (if any)
    /// granted, and the receiver's rings are empty afterwards.
    void settle() {
        round_trip(8, false, 0);
        for (int i = 0; i < 1000; ++i)
            progress();
    }
};

/// Every endpoint on the shared FIFO, and a FIFO of two cells: how many messages go out
/// before the receiver drains anything says how many cells each took.
class ShmFifoOfTwoCells : public ShmShape {
protected:
    Settings settings() const override {
        return {{"TLS", "shm"}, {"SHM_PIO_SLOTS", "0"}, {"SHM_FIFO_CELLS", "2"}};
    }
};

/// Endpoints with a dedicated PIO ring (the default geometry).
class ShmWithPioRing : public ShmShape {
protected:
    Settings settings() const override { return {{"TLS", "shm"}}; }
};

TEST_F(ShmFifoOfTwoCells, EightKiBMessageTakesOneCellAndEdgesTakeWhatTheyShould) {
    settle();
    const swy_ep_attr_t a = lane();
    ASSERT_STREQ(a.transport, "shm");
    ASSERT_EQ(a.pio, 0);
    const size_t fragment = a.bcopy_max_size;
    // A one-packet message leaves room for the sync header; a fragment for the first one.
    const size_t single =
        fragment + sizeof(proto::EagerFirstHeader) - sizeof(proto::EagerSyncHeader);
    ASSERT_GE(single, kMpiEightKiB) << "an 8 KiB message does not fit one FIFO cell";
    uint64_t seed = 1;
    for (const size_t n : {kMpiEightKiB, single - 1, single, single + 1, 2 * fragment - 1,
                           2 * fragment, 2 * fragment + 1}) {
        const size_t cells = n <= single ? 1 : (n + fragment - 1) / fragment;
        // Two sends into the empty two-cell FIFO, the receiver not progressed: one-cell
        // messages both go out at once, two-cell ones one, longer ones none.
        const size_t expect_sent = cells == 1 ? 2 : cells == 2 ? 1 : 0;
        std::vector<uint8_t> out[2] = {pattern(n, seed), pattern(n, seed + 1)};
        swy_status_t posted[2];
        swy_request_h req[2] = {nullptr, nullptr};
        for (int i = 0; i < 2; ++i)
            posted[i] = swy_tag_send_nb(ep_, out[i].data(), n, kTag + seed + i, nullptr, &req[i]);
        size_t sent = 0;
        for (swy_status_t s : posted) {
            ASSERT_TRUE(s == SWY_OK || s == SWY_INPROGRESS) << swy_status_string(s);
            sent += s == SWY_OK ? 1 : 0;
        }
        EXPECT_EQ(sent, expect_sent) << n << " B should take " << cells << " cell(s)";
        for (int i = 0; i < 2; ++i)
            receive_and_check(n, kTag + seed + i, seed + i);
        for (int i = 0; i < 2; ++i)
            EXPECT_EQ(finish(posted[i], req[i]), SWY_OK) << n << " B";
        seed += 2;
    }
    // A synchronous 8 KiB send (MPI_Ssend: a 16-byte header) fits one cell too.
    round_trip(kMpiEightKiB, true, seed);
}

TEST_F(ShmWithPioRing, EightKiBMessageIsOneEagerShortRecordAndEdgesArriveIntact) {
    settle();
    const swy_ep_attr_t a = lane();
    ASSERT_STREQ(a.transport, "shm");
    ASSERT_EQ(a.pio, 1) << "the endpoint got no PIO ring";
    ASSERT_GE(a.pio_max_size, kMpiEightKiB) << "an 8 KiB message is not one PIO record";
    // The endpoint's table sends it by eager_short (one record, no fragments).
    std::vector<char> table(16384);
    ASSERT_EQ(swy_ep_print_protocols(ep_, SWY_MEMTYPE_HOST, table.data(), table.size()), SWY_OK);
    unsigned long long lo = 1, hi = 0;
    char proto[64] = {0};
    ASSERT_EQ(std::sscanf(table.data(), "%llu..%llu %63s", &lo, &hi, proto), 3) << table.data();
    EXPECT_EQ(lo, 0u);
    EXPECT_EQ(hi, a.pio_max_size) << table.data();
    EXPECT_STREQ(proto, "eager_short") << table.data();
    const size_t pio = a.pio_max_size;
    const size_t fragment = a.bcopy_max_size;
    uint64_t seed = 100;
    for (const size_t n : {kMpiEightKiB, pio - 1, pio, pio + 1, fragment - 1, fragment,
                           fragment + 1, 2 * fragment - 1, 2 * fragment, 2 * fragment + 1}) {
        round_trip(n, false, seed++);
        round_trip(n, true, seed++);
    }
}

}  // namespace
}  // namespace swy::test
