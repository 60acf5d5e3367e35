// Two processes over shm at the boundary values of the segment geometry (SWY_SHM_FIFO_CELLS,
// SWY_SHM_CELL_SIZE, SWY_SHM_PIO_SLOTS, SWY_SHM_PIO_CREDITS, SWY_SHM_PIO_CELL_SIZE): every
// value the configuration accepts must carry an 8 B, an 8 KiB and a rendezvous-size message
// both ways, expected and unexpected, byte for byte (issue #18: one PIO credit hung an 8 KiB
// message, one FIFO cell without PIO rings an 8 B one).
#include <string>
#include <utility>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr size_t kSizes[] = {8, 8192, 256 * 1024};
constexpr int kUnexpectedLimitRounds = 4;  // more messages than the smallest ring holds

swy_tag_t tag_of(uint64_t round) { return 0x5C00000000000000ull | round; }

/// Rank 0 and 1 each send every size to the other, first with the receives posted, then a
/// burst of kUnexpectedLimitRounds messages of each size before the receiver posts anything.
template <size_t N>
void exchange_all(World& w, Node& n, const size_t (&sizes)[N]) {
    const int peer = 1 - w.rank();
    uint64_t round = 0;
    for (size_t size : sizes) {
        // Expected: receive posted, then both send at once.
        std::vector<unsigned char> in(size + kGuardBytes, kGuardByte), out(size);
        const uint64_t r = round++;
        fill_pattern(out.data(), size, pattern_seed(size, w.rank(), r));
        Recv rv = post_recv(n.worker(), in.data(), size, tag_of(r));
        w.barrier(n.worker());
        Send sd = post_send(n.ep(peer), out.data(), size, tag_of(r));
        ICHECK_OK(finish_send(n.worker(), sd, 10.0));
        ICHECK_OK(finish_recv(n.worker(), rv, 10.0));
        ICHECK_MSG(rv.info.length == size, "length %zu, sent %zu", rv.info.length, size);
        ICHECK_PATTERN(in.data(), size, pattern_seed(size, peer, r), "%zu B expected", size);
        ICHECK(guard_intact(in.data() + size));
        w.barrier(n.worker());
    }
    for (size_t size : sizes) {
        // Unexpected: a burst of sends before the peer posts any receive.
        std::vector<std::vector<unsigned char>> outs, ins;
        std::vector<Send> sends;
        std::vector<Recv> recvs;
        const uint64_t first = round;
        round += kUnexpectedLimitRounds;
        for (int i = 0; i < kUnexpectedLimitRounds; ++i) {
            outs.emplace_back(size);
            fill_pattern(outs.back().data(), size, pattern_seed(size, w.rank(), first + i));
            sends.push_back(post_send(n.ep(peer), outs.back().data(), size, tag_of(first + i)));
        }
        // Progress a little so the messages land unexpected where the rings let them.
        progress_until_unexpected(n.worker(), tag_of(first), ~swy_tag_t{0}, 0.05);
        w.barrier(n.worker());
        for (int i = 0; i < kUnexpectedLimitRounds; ++i) {
            ins.emplace_back(size + kGuardBytes, kGuardByte);
            recvs.push_back(post_recv(n.worker(), ins.back().data(), size, tag_of(first + i)));
        }
        for (auto& s : sends)
            ICHECK_OK(finish_send(n.worker(), s, 10.0));
        for (int i = 0; i < kUnexpectedLimitRounds; ++i) {
            ICHECK_OK(finish_recv(n.worker(), recvs[i], 10.0));
            ICHECK_MSG(recvs[i].info.length == size, "length %zu, sent %zu", recvs[i].info.length,
                       size);
            ICHECK_PATTERN(ins[i].data(), size, pattern_seed(size, peer, first + i),
                           "%zu B unexpected #%d", size, i);
            ICHECK(guard_intact(ins[i].data() + size));
        }
        w.barrier(n.worker());
    }
}

template <size_t N>
void run_geometry(const Settings& settings, const size_t (&sizes)[N]) {
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        NodeOptions opts;
        for (const auto& s : settings)
            opts.config.push_back(s);
        Node n(w, opts);
        n.connect_all();
        exchange_all(w, n, sizes);
        n.finish();
    }));
}

class ShmGeometry : public ::testing::TestWithParam<Settings> {};

TEST_P(ShmGeometry, CarriesEveryProtocolSizeBothWays) { run_geometry(GetParam(), kSizes); }

// FIFO cells keep a message of up to RingView::kInlineBytes in the packed header slot and a
// larger one in the cell's payload area (ring.h): the sizes around that boundary, and a
// full cell, through the FIFO alone (no PIO ring), in a FIFO small enough to wrap, byte for
// byte with the guard after each buffer intact.
TEST(ShmFifoLayout, CarriesSizesAroundTheInlineSlotBothWays) {
    // Payload bytes of a message; the tag layer's header (8 B for eager) comes on top, so
    // these put the record on both sides of kInlineBytes (112) and at the 4 KiB cell's end:
    // a cell carries 4096 B of message (its header is in the slot), so 4080 B is the largest
    // one-cell message (16 B of sync-header room), and 4081 B fills the first cell with a
    // 4064 B fragment behind its 32 B header.
    constexpr size_t kInlineSizes[] = {1, 96, 103, 104, 105, 120, 4079, 4080, 4081};
    // PIO cells may not be larger than FIFO cells (a fragment must fit either lane), even
    // with no PIO ring.
    run_geometry({{"SHM_FIFO_CELLS", "4"},
                  {"SHM_PIO_SLOTS", "0"},
                  {"SHM_CELL_SIZE", "4K"},
                  {"SHM_PIO_CELL_SIZE", "4K"}},
                 kInlineSizes);
}

// The smallest and largest value of each bound (segment_bounds.h), one geometry per test.
INSTANTIATE_TEST_SUITE_P(
    Bounds, ShmGeometry,
    ::testing::Values(
        // Two FIFO cells and no PIO ring: every message through the smallest shared FIFO.
        Settings{{"SHM_FIFO_CELLS", "2"}, {"SHM_PIO_SLOTS", "0"}},
        // Two PIO credits: a full-size record after a small one pads the ring and still fits.
        Settings{{"SHM_PIO_CREDITS", "2"}},
        // The smallest cells: 112-byte fragments on both lanes.
        Settings{{"SHM_CELL_SIZE", "128"}, {"SHM_PIO_CELL_SIZE", "128"}, {"SHM_PIO_CREDITS", "2"}},
        // The most FIFO cells (64 MiB of FIFO, the limit).
        Settings{{"SHM_FIFO_CELLS", "65536"}, {"SHM_CELL_SIZE", "1K"}, {"SHM_PIO_CELL_SIZE", "1K"}},
        // The largest cells and PIO ring (16 MiB), in a segment under 256 MiB.
        Settings{{"SHM_FIFO_CELLS", "64"},
                 {"SHM_CELL_SIZE", "1M"},
                 {"SHM_PIO_CELL_SIZE", "1M"},
                 {"SHM_PIO_CREDITS", "16"}},
        // The most PIO rings.
        Settings{{"SHM_PIO_SLOTS", "256"}}));

}  // namespace
}  // namespace swy_itest
