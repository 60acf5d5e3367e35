// The short PIO record of ShmEndpoint::am_send (issue 17): a message whose protocol header and
// payload are at most ShmEndpoint::kShortPart bytes each is written into the PIO ring without
// claim(), with the room and ring-end checks of its own. On a tiny ring (six 64-byte lines,
// so every few messages reach its end or find it full) every size around that edge arrives
// byte for byte and in order, expected and unexpected, tagged and as active messages.
#include <gtest/gtest.h>
#include <switchyard/am.h>
#include <switchyard/switchyard.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "worker_pair.h"

namespace swy::test {
namespace {

/// Sizes on both sides of the short record's 16-byte parts, and records of two and three
/// lines in between (a ring end is then reached at every alignment).
constexpr size_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 40, 41, 100};

/// Two workers over shm alone, each with a PIO ring of 2 x 192 bytes.
class ShmShortRecord : public WorkerPair {
protected:
    Settings settings() const override {
        return {{"TLS", "shm"}, {"SHM_PIO_CREDITS", "2"}, {"SHM_PIO_CELL_SIZE", "128"}};
    }

    /// The endpoint holds a PIO ring (the short record is a PIO record).
    void expect_pio_lane() {
        swy_ep_attr_t a{};
        a.field_mask = SWY_EP_ATTR_FIELD_LANE;
        ASSERT_EQ(swy_ep_query(ep_, &a), SWY_OK);
        ASSERT_EQ(a.pio, 1) << "the endpoint got no PIO ring";
    }

    /// Send @p n bytes of pattern(n, seed) tagged @p tag; the request (or null when done).
    swy_request_h send(size_t n, swy_tag_t tag, uint64_t seed, std::vector<uint8_t>* keep) {
        *keep = pattern(n, seed);
        swy_request_h r = nullptr;
        const swy_status_t s = swy_tag_send_nb(ep_, keep->data(), n, tag, nullptr, &r);
        EXPECT_TRUE(s == SWY_OK || s == SWY_INPROGRESS) << swy_status_string(s);
        return r;
    }

    /// Receive into exactly @p n bytes (and a guard) what was sent as pattern(n, seed).
    void receive_and_check(size_t n, swy_tag_t tag, uint64_t seed) {
        std::vector<uint8_t> in(n + 32, 0xEE);
        swy_request_h r = nullptr;
        swy_status_t s = swy_tag_recv_nb(b_, in.data(), n, tag, ~0ull, nullptr, &r);
        if (s == SWY_INPROGRESS) {
            s = wait(r);
            EXPECT_EQ(swy_request_free(r), SWY_OK);
        }
        ASSERT_EQ(s, SWY_OK) << n << " B, message " << seed;
        const std::vector<uint8_t> want = pattern(n, seed);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), in.begin()))
            << n << " B, message " << seed << ": payload differs (out of order or torn)";
        for (size_t i = n; i < in.size(); ++i)
            ASSERT_EQ(in[i], 0xEE) << n << " B: byte " << i << " written past the buffer";
    }
};

// Posted first, then sent: the latency loop's shape (the receive waits in the matcher, the
// record is matched as it is drained). Many laps of the ring at every alignment.
TEST_F(ShmShortRecord, ExpectedReceivesArriveByteForByte) {
    expect_pio_lane();
    uint64_t seed = 0;
    for (int lap = 0; lap < 20; ++lap) {
        for (const size_t n : kSizes) {
            std::vector<uint8_t> in(n + 32, 0xEE);
            swy_request_h rr = nullptr;
            ASSERT_EQ(swy_tag_recv_nb(b_, in.data(), n, 5, ~0ull, nullptr, &rr), SWY_INPROGRESS);
            std::vector<uint8_t> out;
            swy_request_h sr = send(n, 5, ++seed, &out);
            ASSERT_EQ(wait(rr), SWY_OK) << n << " B";
            EXPECT_EQ(swy_request_free(rr), SWY_OK);
            if (sr != nullptr) {
                ASSERT_EQ(wait(sr), SWY_OK);
                EXPECT_EQ(swy_request_free(sr), SWY_OK);
            }
            EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin()))
                << n << " B: payload differs";
            for (size_t i = n; i < in.size(); ++i)
                ASSERT_EQ(in[i], 0xEE) << n << " B: byte " << i << " written past the buffer";
        }
    }
}

// Sent in bursts larger than the ring before anything is received: the short record must
// find the ring full (no overwrite of records not yet drained) and the sends queue behind it;
// one tag for all, so the receives match in send order (MPI's non-overtaking rule).
TEST_F(ShmShortRecord, BurstsLargerThanTheRingKeepTheirOrder) {
    expect_pio_lane();
    uint64_t seed = 1000;
    for (int burst = 0; burst < 6; ++burst) {
        std::deque<std::vector<uint8_t>> kept;
        std::vector<swy_request_h> sends;
        std::vector<std::pair<size_t, uint64_t>> sent;
        for (int rep = 0; rep < 2; ++rep) {
            for (const size_t n : kSizes) {
                kept.emplace_back();
                if (swy_request_h r = send(n, 9, ++seed, &kept.back())) sends.push_back(r);
                sent.emplace_back(n, seed);
            }
        }
        for (const auto& [n, s] : sent)
            receive_and_check(n, 9, s);
        for (swy_request_h r : sends) {
            EXPECT_EQ(wait(r), SWY_OK);
            EXPECT_EQ(swy_request_free(r), SWY_OK);
        }
    }
}

// A receive completed on the fast path leaves only its hot part to clear (Request::
// cold_clean): the slot's next uses (the pool hands the same one back) behave as a new
// request's, for a receive that is cancelled, one matched by a rendezvous message larger than
// the ring, and a synchronous send's request.
TEST_F(ShmShortRecord, ASlotReusedAfterTheFastPathIsANewRequest) {
    expect_pio_lane();
    for (int round = 0; round < 3; ++round) {
        // The fast path: posted alone, completed by the eager packet, freed.
        std::vector<uint8_t> small(8, 0);
        swy_request_h rr = nullptr;
        ASSERT_EQ(swy_tag_recv_nb(b_, small.data(), 8, 11, ~0ull, nullptr, &rr), SWY_INPROGRESS);
        std::vector<uint8_t> out;
        swy_request_h sr = send(8, 11, 9000 + round, &out);
        ASSERT_EQ(sr, nullptr) << "an 8-byte send on a free ring completes in place";
        ASSERT_EQ(wait(rr), SWY_OK);
        EXPECT_EQ(swy_request_free(rr), SWY_OK);
        EXPECT_EQ(small, out);

        // Cancelled: still unmatched, so the cancel takes it.
        swy_request_h c = nullptr;
        ASSERT_EQ(swy_tag_recv_nb(b_, small.data(), 8, 12, ~0ull, nullptr, &c), SWY_INPROGRESS);
        ASSERT_EQ(swy_request_cancel(b_, c), SWY_OK);
        EXPECT_EQ(wait(c), SWY_ERR_CANCELED);
        EXPECT_EQ(swy_request_free(c), SWY_OK);

        // Another fast-path receive, then the slot as a rendezvous receive.
        ASSERT_EQ(swy_tag_recv_nb(b_, small.data(), 8, 11, ~0ull, nullptr, &rr), SWY_INPROGRESS);
        ASSERT_EQ(send(8, 11, 9100 + round, &out), nullptr);
        ASSERT_EQ(wait(rr), SWY_OK);
        EXPECT_EQ(swy_request_free(rr), SWY_OK);
        constexpr size_t kLarge = 64 * 1024;
        std::vector<uint8_t> big(kLarge + 32, 0xEE);
        swy_request_h br = nullptr;
        ASSERT_EQ(swy_tag_recv_nb(b_, big.data(), kLarge, 13, ~0ull, nullptr, &br), SWY_INPROGRESS);
        std::vector<uint8_t> big_out;
        swy_request_h bs = send(kLarge, 13, 9200 + round, &big_out);
        ASSERT_EQ(wait(br), SWY_OK);
        EXPECT_EQ(swy_request_free(br), SWY_OK);
        if (bs != nullptr) {
            ASSERT_EQ(wait(bs), SWY_OK);
            EXPECT_EQ(swy_request_free(bs), SWY_OK);
        }
        EXPECT_EQ(std::memcmp(big.data(), big_out.data(), kLarge), 0) << "rendezvous payload";
        for (size_t i = kLarge; i < big.size(); ++i)
            ASSERT_EQ(big[i], 0xEE) << "byte " << i << " written past the buffer";

        // And a receive posted on the fast path (the slot reused once more) whose message is
        // synchronous: it completes through the general path, which acknowledges the match and
        // must leave the slot marked for a full clear.
        ASSERT_EQ(swy_tag_recv_nb(b_, small.data(), 8, 14, ~0ull, nullptr, &rr), SWY_INPROGRESS);
        const std::vector<uint8_t> sync_out = pattern(8, 9300 + round);
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
        p.flags = SWY_REQ_FLAG_SYNC;
        swy_request_h ss = nullptr;
        const swy_status_t posted = swy_tag_send_nb(ep_, sync_out.data(), 8, 14, &p, &ss);
        ASSERT_EQ(posted, SWY_INPROGRESS) << "a synchronous send waits for its match";
        ASSERT_EQ(wait(rr), SWY_OK);
        EXPECT_EQ(swy_request_free(rr), SWY_OK);
        ASSERT_EQ(wait(ss), SWY_OK);
        EXPECT_EQ(swy_request_free(ss), SWY_OK);
        EXPECT_EQ(small, sync_out);
    }
}

/// What an active-message handler saw.
struct AmSeen {
    std::vector<std::vector<uint8_t>> headers;
    std::vector<std::vector<uint8_t>> data;
};

swy_status_t keep_am(void* arg, const void* header, size_t header_length, void* data,
                     size_t data_length, const swy_am_recv_param_t* /*param*/) {
    auto* seen = static_cast<AmSeen*>(arg);
    const auto* h = static_cast<const uint8_t*>(header);
    const auto* d = static_cast<const uint8_t*>(data);
    seen->headers.emplace_back(h, h + header_length);
    seen->data.emplace_back(d, d + data_length);
    return SWY_OK;
}

// Active messages put the user header next to the protocol's own: every header and data size
// around the short record's parts arrives whole, in order.
TEST_F(ShmShortRecord, ActiveMessagesAroundThePartSizes) {
    expect_pio_lane();
    AmSeen seen;
    ASSERT_EQ(swy_worker_set_am_handler(b_, 3, keep_am, &seen, 0), SWY_OK);
    constexpr size_t kHeaders[] = {0, 1, 7, 8, 9, 15, 16, 17, 24};
    // Eager only (a 128-byte record; larger data would go by rendezvous, a descriptor).
    constexpr size_t kData[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 40, 41};
    std::vector<std::pair<size_t, size_t>> sent;
    uint64_t seed = 5000;
    for (const size_t h : kHeaders) {
        for (const size_t n : kData) {
            const std::vector<uint8_t> header = pattern(h, ++seed);
            const std::vector<uint8_t> data = pattern(n, seed + 77);
            swy_request_h r = nullptr;
            const swy_status_t s =
                swy_am_send_nb(ep_, 3, header.data(), h, data.data(), n, nullptr, &r);
            ASSERT_TRUE(s == SWY_OK || s == SWY_INPROGRESS) << swy_status_string(s);
            if (r != nullptr) {
                ASSERT_EQ(wait(r), SWY_OK);
                EXPECT_EQ(swy_request_free(r), SWY_OK);
            }
            sent.emplace_back(h, n);
            for (int i = 0; i < 100000 && seen.headers.size() < sent.size(); ++i)
                progress();
            ASSERT_EQ(seen.headers.size(), sent.size()) << "header " << h << ", data " << n;
            EXPECT_EQ(seen.headers.back(), header) << "header " << h << ", data " << n;
            EXPECT_EQ(seen.data.back(), data) << "header " << h << ", data " << n;
        }
    }
}

}  // namespace
}  // namespace swy::test
