// Device-memory PIO of the verbs transport end to end, on a real RDMA device (rxe0 in the
// Soft-RoCE VM: test/verbs/run-vm.sh). rxe has no device memory, so these tests turn on
// SWY_VERBS_DM_EMULATE: registered host memory stands in for it and everything else is the
// real path (cells, SENDs from the DM MR's key, reuse after completion, the slot policy).
// Without an RDMA device every test skips with a message.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <switchyard/switchyard.h>

#include "verbs_test_node.h"

namespace {

using Clock = std::chrono::steady_clock;
using Settings = swy::test::VerbsSettings;

constexpr size_t kCell = 2048;  // SWY_VERBS_DM_CELL_SIZE default
constexpr uint32_t kCells = 4;  // cells per slot

using Node = swy::test::VerbsNode;

const Settings kEmulated{{"VERBS_DM_EMULATE", "y"}};

swy_ep_h connect(swy_worker_h from, const std::vector<uint8_t>& to, uint32_t flags = 0) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = to.data();
    p.remote_address_length = to.size();
    p.flags = flags;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from, &p, &ep), SWY_OK);
    return ep;
}

using swy::test::close_now;

swy_ep_attr_t query(swy_ep_h ep) {
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    EXPECT_EQ(swy_ep_query(ep, &attr), SWY_OK);
    return attr;
}

/// Progress both workers until every request in @p reqs completed (or 60 s); frees them.
bool finish_all(std::vector<swy_request_h>& reqs, swy_worker_h a, swy_worker_h b) {
    const auto end = Clock::now() + std::chrono::seconds(60);
    bool ok = true;
    for (swy_request_h& r : reqs) {
        if (r == nullptr) continue;
        swy_status_t st;
        while ((st = swy_request_test(r)) == SWY_INPROGRESS && Clock::now() < end) {
            swy_worker_progress(a);
            swy_worker_progress(b);
        }
        EXPECT_EQ(st, SWY_OK);
        ok = ok && st == SWY_OK;
        if (st != SWY_INPROGRESS) swy_request_free(r);
        r = nullptr;
    }
    return ok;
}

uint8_t pattern(size_t i, uint32_t seed) {
    return static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
}

/// Send every size in @p sizes a → b, all posted before any progress (so many are in flight
/// and cells are reused), then check each message byte for byte and its 64 guard bytes.
void burst(swy_ep_h ep, Node& a, Node& b, const std::vector<size_t>& sizes, uint32_t seed0) {
    std::vector<std::vector<uint8_t>> src(sizes.size()), dst(sizes.size());
    std::vector<swy_request_h> reqs;
    for (size_t k = 0; k < sizes.size(); ++k) {
        src[k].resize(sizes[k]);
        for (size_t i = 0; i < sizes[k]; ++i)
            src[k][i] = pattern(i, seed0 + k);
        dst[k].assign(sizes[k] + 64, 0xEE);
        swy_request_h rr = nullptr;
        ASSERT_GE(
            swy_tag_recv_nb(b.worker, dst[k].data(), sizes[k], 0x7000 + k, ~0ull, nullptr, &rr), 0);
        reqs.push_back(rr);
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
        swy_request_h sr = nullptr;
        ASSERT_GE(swy_tag_send_nb(ep, src[k].data(), sizes[k], 0x7000 + k, nullptr, &sr), 0);
        reqs.push_back(sr);
    }
    ASSERT_TRUE(finish_all(reqs, a.worker, b.worker));
    for (size_t k = 0; k < sizes.size(); ++k) {
        SCOPED_TRACE("message " + std::to_string(k) + ", " + std::to_string(sizes[k]) + " B");
        for (size_t i = 0; i < sizes[k]; ++i)
            ASSERT_EQ(dst[k][i], src[k][i]) << "byte " << i;
        for (size_t i = 0; i < 64; ++i)
            ASSERT_EQ(dst[k][sizes[k] + i], 0xEE) << "guard " << i;
    }
}

/// Payload sizes around the inline limit and the cell, from what the endpoint reports.
std::vector<size_t> boundary_sizes(const swy_ep_attr_t& attr) {
    const size_t header = kCell - attr.pio_max_size;  // eager header on a full cell
    const size_t inline_payload = attr.pio_inline_size - header;
    const size_t cell_payload = attr.pio_max_size;
    return {inline_payload - 1, inline_payload, inline_payload + 1,
            cell_payload - 1,   cell_payload,   cell_payload + 1};
}

}  // namespace

TEST(VerbsDmTransport, WithoutDeviceMemoryTheEndpointSaysInlineOnly) {
    Node a, b;
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    const swy_ep_attr_t attr = query(ep);
    EXPECT_EQ(attr.pio, 1);
    EXPECT_GT(attr.pio_inline_size, 0u);
    EXPECT_EQ(attr.pio_dm_size, 0u);
    EXPECT_EQ(attr.pio_credits, attr.credits) << "inline PIO is limited by the credits only";
    ASSERT_NE(attr.pio_window, nullptr);
    EXPECT_NE(std::string(attr.pio_window).find("inline only: no device memory"), std::string::npos)
        << attr.pio_window;
    EXPECT_LT(attr.pio_max_size, attr.pio_inline_size) << "PIO ends at the inline limit";
    close_now(ep);
}

TEST(VerbsDmTransport, EmulatedDeviceMemoryEndpointReportsItsCells) {
    Node a(kEmulated), b(kEmulated);
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    const swy_ep_attr_t attr = query(ep);
    EXPECT_EQ(attr.pio, 1);
    EXPECT_EQ(attr.pio_dm_size, kCells * kCell);
    EXPECT_EQ(attr.pio_credits, kCells) << "fewer PIO sends in flight than the 64 credits";
    EXPECT_EQ(attr.credits, 64u);
    EXPECT_GT(attr.pio_max_size, attr.pio_inline_size) << "device memory: a larger PIO size";
    EXPECT_LT(attr.pio_max_size, kCell);
    EXPECT_STREQ(attr.small_protocol, "eager_short");
    ASSERT_NE(attr.pio_window, nullptr);
    EXPECT_NE(std::string(attr.pio_window).find("emulated device memory"), std::string::npos)
        << attr.pio_window;
    close_now(ep);
}

TEST(VerbsDmTransport, SizesAroundTheInlineLimitAndTheCellByteForByte) {
    Node a(kEmulated), b(kEmulated);
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    const swy_ep_attr_t attr = query(ep);
    ASSERT_EQ(attr.pio_dm_size, kCells * kCell);
    // One at a time (each completes before the next), then the same sizes all at once.
    uint32_t seed = 1;
    for (size_t n : boundary_sizes(attr))
        burst(ep, a, b, {n}, seed++);
    burst(ep, a, b, boundary_sizes(attr), 100);
    close_now(ep);
}

TEST(VerbsDmTransport, ManyMessagesInFlightReuseCellsOnlyAfterCompletion) {
    Node a(kEmulated), b(kEmulated);
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    const swy_ep_attr_t attr = query(ep);
    ASSERT_EQ(attr.pio_credits, kCells);
    // 200 messages, 4 cells: each cell is used dozens of times while others are in flight;
    // a cell overwritten before its SEND completed would show as another message's bytes.
    std::vector<size_t> sizes;
    for (size_t k = 0; k < 200; ++k) {
        sizes.push_back(attr.pio_inline_size +
                        (k * 37) % (attr.pio_max_size - attr.pio_inline_size));
    }
    burst(ep, a, b, sizes, 1000);
    close_now(ep);
}

TEST(VerbsDmTransport, EndpointWithoutASlotBesideOneWithASlot) {
    // Two slots, one kept for SWY_EP_FLAG_PIO_FIRST: the first plain endpoint gets a slot, the
    // second none, a PIO_FIRST endpoint the reserved one. All three carry the same messages.
    const Settings s{{"VERBS_DM_EMULATE", "y"}, {"VERBS_DM_SLOTS", "2"}, {"PIO_RESERVED", "1"}};
    Node a(s), b(s), c(s), d(s);
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h with = connect(a.worker, b.address);
    swy_ep_h without = connect(a.worker, c.address);
    swy_ep_h first = connect(a.worker, d.address, SWY_EP_FLAG_PIO_FIRST);
    const swy_ep_attr_t aw = query(with), ao = query(without), af = query(first);
    EXPECT_EQ(aw.pio_dm_size, kCells * kCell);
    EXPECT_EQ(ao.pio_dm_size, 0u);
    EXPECT_EQ(af.pio_dm_size, kCells * kCell);
    EXPECT_NE(std::string(ao.pio_window).find("reserved for SWY_EP_FLAG_PIO_FIRST"),
              std::string::npos)
        << ao.pio_window;
    EXPECT_LT(ao.pio_max_size, ao.pio_inline_size);
    EXPECT_EQ(ao.pio_inline_size, aw.pio_inline_size) << "inline PIO is every endpoint's";
    EXPECT_EQ(ao.pio_credits, ao.credits);
    const std::vector<size_t> sizes = boundary_sizes(aw);
    burst(with, a, b, sizes, 1);
    burst(without, a, c, sizes, 2);
    burst(first, a, d, sizes, 3);
    // SWY_EP_FLAG_NO_PIO takes no slot even when one is free.
    Node e(s);
    close_now(first);
    swy_ep_h no_pio = connect(a.worker, e.address, SWY_EP_FLAG_NO_PIO);
    EXPECT_EQ(query(no_pio).pio_dm_size, 0u);
    EXPECT_NE(std::string(query(no_pio).pio_window).find("SWY_EP_FLAG_NO_PIO"), std::string::npos);
    burst(no_pio, a, e, sizes, 4);
    close_now(no_pio);
    close_now(with);
    close_now(without);
}
