// The verbs interface's device-memory send path, white-box, on a real RDMA device (rxe0 in the
// Soft-RoCE VM) with SWY_VERBS_DM_EMULATE's host-memory stand-in: two interfaces, one
// connection, messages sent with am_send and counted by path (verbs::send_stats). rxe copies a
// SEND's data while it is posted, so reusing a cell too early would not corrupt anything
// here; what the counts show instead is *when* cells come back: never before a completion was
// polled, and always once one was. Skips without an RDMA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transports/verbs/verbs_open.h"

namespace {

using swy::Status;
using namespace swy::tl;
using Clock = std::chrono::steady_clock;

constexpr AmId kAm = 5;

struct Sink final : AmSink {
    std::vector<std::vector<uint8_t>> got;
    int failures = 0;
    void on_am(AmId id, AmSource, const uint8_t* data, size_t length) override {
        if (id == kAm) got.emplace_back(data, data + length);
    }
    void on_remote_failure(uint16_t, uint64_t, Status) override { ++failures; }
};

struct Pair {
    Sink sa, sb;
    std::unique_ptr<Interface> a, b;
    std::unique_ptr<Endpoint> ep;
    Status status = Status::kOk;
    std::string why;

    Pair() {
        verbs::VerbsConfig cfg;
        cfg.dm_emulate = true;
        status = verbs::open(cfg, 0xA, 0, &sa, &a, &why);
        if (status != Status::kOk) return;
        status = verbs::open(cfg, 0xB, 0, &sb, &b, &why);
        if (status != Status::kOk) return;
        const std::vector<uint8_t> address = b->address();
        status =
            verbs::connect(a.get(), 0xB, address.data(), address.size(), true, false, &ep, &why);
    }
    void progress() {
        a->progress();
        b->progress();
    }
    /// am_send, progressing both sides while the connection is still being set up.
    Status send(const std::vector<uint8_t>& hdr, const std::vector<uint8_t>& payload) {
        const auto end = Clock::now() + std::chrono::seconds(30);
        Status s;
        while ((s = ep->am_send(kAm, hdr.data(), hdr.size(), payload.data(), payload.size())) ==
                   Status::kNoResource &&
               Clock::now() < end) {
            progress();
        }
        return s;
    }
    bool wait_received(size_t n) {
        const auto end = Clock::now() + std::chrono::seconds(30);
        while (sb.got.size() < n && Clock::now() < end)
            progress();
        return sb.got.size() >= n;
    }
};

std::vector<uint8_t> bytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i * 13 + seed * 101 + (i >> 8));
    return v;
}

}  // namespace

TEST(VerbsDmIface, CellsComeBackOnlyThroughCompletions) {
    Pair p;
    if (p.status == Status::kNotFound || p.status == Status::kUnsupported) {
        GTEST_SKIP() << "no RDMA device (" << p.why << "): run test/verbs/run-vm.sh";
    }
    ASSERT_EQ(p.status, Status::kOk) << p.why;
    const LaneAttr& attr = p.ep->attr();
    ASSERT_GT(attr.pio_dm_bytes, 0u) << attr.pio_window;
    ASSERT_EQ(attr.pio_credits, verbs::kDmCellsPerSlot);
    const size_t cells = attr.pio_credits;
    const std::vector<uint8_t> hdr = bytes(8, 0);
    const size_t size = attr.pio_inline_max + 100;  // above inline, inside a cell
    ASSERT_LE(size + hdr.size(), attr.pio_max_message);

    // Wire the connection with inline messages, and let every completion come in. A new
    // connection is lent few receive credits, doubled each time the sender used them all:
    // enough messages here that the burst below is limited by device-memory cells only.
    constexpr size_t kWarmup = 64;
    for (size_t k = 0; k < kWarmup; ++k) {
        ASSERT_EQ(p.send(hdr, bytes(8, 1)), Status::kOk) << k;
        ASSERT_TRUE(p.wait_received(1 + k));
    }
    const verbs::SendStats base = verbs::send_stats(p.a.get());
    EXPECT_EQ(base.dm_sends, 0u);

    // 1. No progress between sends: no completion is polled, so exactly `cells` messages go
    //    from device memory and the rest through bounce buffers.
    const size_t burst = 3 * cells;
    for (size_t k = 0; k < burst; ++k) {
        ASSERT_EQ(p.ep->am_send(kAm, hdr.data(), hdr.size(), bytes(size, 10 + k).data(), size),
                  Status::kOk)
            << k;
    }
    verbs::SendStats s = verbs::send_stats(p.a.get());
    EXPECT_EQ(s.dm_sends - base.dm_sends, cells) << "a cell was reused before its completion";
    EXPECT_EQ(s.bounce_sends - base.bounce_sends, burst - cells);
    ASSERT_TRUE(p.wait_received(kWarmup + burst));

    // 2. Progress between sends: completions return the cells, so (nearly) every message
    //    goes from device memory. Cells taken by unsignalled SENDs come back with the next
    //    signalled one, so at most a few fall back while a completion is on its way.
    const verbs::SendStats before = verbs::send_stats(p.a.get());
    const size_t rounds = 60;
    for (size_t k = 0; k < rounds; ++k) {
        ASSERT_EQ(p.send(hdr, bytes(size, 100 + k)), Status::kOk) << k;
        ASSERT_TRUE(p.wait_received(kWarmup + 1 + burst + k));
        for (int i = 0; i < 50; ++i)
            p.progress();
    }
    s = verbs::send_stats(p.a.get());
    EXPECT_GE(s.dm_sends - before.dm_sends, rounds * 9 / 10)
        << "cells did not come back after their SENDs completed (bounce: "
        << s.bounce_sends - before.bounce_sends << ")";
    EXPECT_EQ(s.dm_sends + s.bounce_sends - before.dm_sends - before.bounce_sends, rounds);

    // Every message arrived whole and in order: header + payload, byte for byte.
    ASSERT_EQ(p.sb.got.size(), kWarmup + burst + rounds);
    for (size_t k = 0; k < burst + rounds; ++k) {
        const std::vector<uint8_t> payload = bytes(size, k < burst ? 10 + k : 100 + k - burst);
        std::vector<uint8_t> want = hdr;
        want.insert(want.end(), payload.begin(), payload.end());
        ASSERT_EQ(p.sb.got[kWarmup + k], want) << "message " << k;
    }
    EXPECT_EQ(p.sa.failures + p.sb.failures, 0);
    p.ep.reset();
}
