// The message path with real keys, two workers in one process (tcp on lo, and self): puts
// and get replies are placed straight from the socket on tcp; a put that arrives behind a
// read still going out waits its turn (the read sees the old bytes); iov data both ways;
// 32- and 64-bit atomics of every op, posted and fetching.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "core/worker.h"
#include "protocols/rma/rma_engine.h"
#include "test_context.h"

namespace swy::rma {
namespace {

using Clock = std::chrono::steady_clock;

class RmaPaths : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        tcp_ = std::string(GetParam()) == "tcp";
        test::Settings s{{"TLS", tcp_ ? "tcp" : "self"}, {"LOG_LEVEL", "error"}};
        if (tcp_) s.push_back({"NET_DEVICES", "lo"});
        ctx_ = test::make_context(s);
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &a_), SWY_OK);
        b_ = a_;
        if (tcp_) {
            ASSERT_EQ(swy_worker_create(ctx_, nullptr, &b_), SWY_OK);
        }
        void* addr = nullptr;
        size_t n = 0;
        ASSERT_EQ(swy_worker_get_address(b_, &addr, &n), SWY_OK);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr;
        p.remote_address_length = n;
        ASSERT_EQ(swy_ep_create(a_, &p, &ep_), SWY_OK);
        swy_worker_release_address(b_, addr);
        window_.assign(kWindow, 0);
        swy_mem_map_params_t mp{};
        mp.field_mask = SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH;
        mp.address = window_.data();
        mp.length = window_.size();
        ASSERT_EQ(swy_mem_map(ctx_, &mp, &mem_), SWY_OK);
        void* packed = nullptr;
        size_t len = 0;
        ASSERT_EQ(swy_rkey_pack(ctx_, mem_, &packed, &len), SWY_OK);
        ASSERT_EQ(swy_ep_rkey_unpack(ep_, packed, len, &key_), SWY_OK);
        swy_rkey_buffer_release(packed);
    }
    void TearDown() override {
        if (key_ != nullptr) swy_rkey_destroy(key_);
        swy_request_h r = nullptr;
        (void)swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &r);
        if (r != nullptr) swy_request_free(r);
        if (mem_ != nullptr) swy_mem_unmap(ctx_, mem_);
        if (b_ != a_) swy_worker_destroy(b_);
        swy_worker_destroy(a_);
        swy_context_destroy(ctx_);
    }
    uint64_t remote(size_t offset) const {
        return reinterpret_cast<uintptr_t>(window_.data()) + offset;
    }
    swy_status_t wait(swy_status_t st, swy_request_h& r) {
        if (st != SWY_INPROGRESS) return st;
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while ((st = swy_request_test(r)) == SWY_INPROGRESS && Clock::now() < deadline) {
            swy_worker_progress(a_);
            if (b_ != a_) swy_worker_progress(b_);
        }
        swy_request_free(r);
        r = nullptr;
        return st;
    }
    swy_status_t flush() {
        swy_request_h r = nullptr;
        return wait(swy_ep_flush_nb(ep_, nullptr, &r), r);
    }
    uint64_t placed() const {
        uint64_t n = reinterpret_cast<core::Worker*>(a_)->rma().placed_bytes();
        if (b_ != a_) n += reinterpret_cast<core::Worker*>(b_)->rma().placed_bytes();
        return n;
    }

    static constexpr size_t kWindow = size_t{40} << 20;
    bool tcp_ = false;
    swy_context_h ctx_ = nullptr;
    swy_worker_h a_ = nullptr;
    swy_worker_h b_ = nullptr;
    swy_ep_h ep_ = nullptr;
    std::vector<uint8_t> window_;
    swy_mem_h mem_ = nullptr;
    swy_rkey_h key_ = nullptr;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
    return v;
}

TEST_P(RmaPaths, LargePutAndGetAreByteExactAndPlacedFromTheSocketOnTcp) {
    constexpr size_t kLen = size_t{8} << 20;
    const std::vector<uint8_t> src = pattern(kLen, 3);
    const uint64_t placed_before = placed();
    swy_request_h r = nullptr;
    ASSERT_EQ(wait(swy_put_nb(ep_, src.data(), kLen, remote(5), key_, nullptr, &r), r), SWY_OK);
    ASSERT_EQ(flush(), SWY_OK);
    ASSERT_EQ(std::memcmp(window_.data() + 5, src.data(), kLen), 0);
    EXPECT_EQ(window_[4], 0);
    EXPECT_EQ(window_[5 + kLen], 0);
    std::vector<uint8_t> back(kLen + 8, 0xEE);
    ASSERT_EQ(wait(swy_get_nb(ep_, back.data(), kLen, remote(5), key_, nullptr, &r), r), SWY_OK);
    EXPECT_EQ(std::memcmp(back.data(), src.data(), kLen), 0);
    for (size_t i = kLen; i < back.size(); ++i)
        ASSERT_EQ(back[i], 0xEE);
    if (tcp_) {
        // Most of both went straight between socket and memory (the first bytes of each
        // frame come with its header through the receive buffer).
        EXPECT_GT(placed() - placed_before, kLen);
    }
}

TEST_P(RmaPaths, PutBehindAReadStillGoingOutWaitsItsTurn) {
    constexpr size_t kLen = size_t{16} << 20;
    std::memset(window_.data(), 1, kLen);
    std::vector<uint8_t> back(kLen, 0), src(kLen, 2);
    swy_request_h g = nullptr, p = nullptr;
    const swy_status_t sg = swy_get_nb(ep_, back.data(), kLen, remote(0), key_, nullptr, &g);
    const swy_status_t sp = swy_put_nb(ep_, src.data(), kLen, remote(0), key_, nullptr, &p);
    EXPECT_EQ(wait(sp, p), SWY_OK);
    EXPECT_EQ(wait(sg, g), SWY_OK);
    ASSERT_EQ(flush(), SWY_OK);
    EXPECT_EQ(back, std::vector<uint8_t>(kLen, 1));  // the read saw what was there before
    EXPECT_EQ(std::memcmp(window_.data(), src.data(), kLen), 0);
}

TEST_P(RmaPaths, IovWithEmptyEntriesBothWays) {
    std::vector<uint8_t> a = pattern(100000, 1), c = pattern(300001, 2);
    std::vector<uint8_t> b = pattern(5, 3);
    swy_dt_iov_t out[5] = {{a.data(), a.size()},
                           {nullptr, 0},
                           {b.data(), b.size()},
                           {b.data(), 0},
                           {c.data(), c.size()}};
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
    p.datatype = SWY_DATATYPE_IOV;
    swy_request_h r = nullptr;
    ASSERT_EQ(wait(swy_put_nb(ep_, out, 5, remote(1000), key_, &p, &r), r), SWY_OK);
    ASSERT_EQ(flush(), SWY_OK);
    std::vector<uint8_t> all(a);
    all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), c.begin(), c.end());
    ASSERT_EQ(std::memcmp(window_.data() + 1000, all.data(), all.size()), 0);
    std::vector<uint8_t> x(7), y(all.size() - 7);
    swy_dt_iov_t in[3] = {{x.data(), x.size()}, {nullptr, 0}, {y.data(), y.size()}};
    ASSERT_EQ(wait(swy_get_nb(ep_, in, 3, remote(1000), key_, &p, &r), r), SWY_OK);
    x.insert(x.end(), y.begin(), y.end());
    EXPECT_EQ(x, all);
}

TEST_P(RmaPaths, EveryAtomicOpOnBothSizes) {
    struct Case {
        swy_atomic_op_t op;
        uint64_t start, operand, compare, after;
    };
    const Case cases[] = {
        {SWY_ATOMIC_OP_ADD, 40, 2, 0, 42},
        {SWY_ATOMIC_OP_AND, 0xF0F0, 0x0FF0, 0, 0x00F0},
        {SWY_ATOMIC_OP_OR, 0xF000, 0x000F, 0, 0xF00F},
        {SWY_ATOMIC_OP_XOR, 0xFF, 0x0F, 0, 0xF0},
        {SWY_ATOMIC_OP_SWAP, 7, 9, 0, 9},
        {SWY_ATOMIC_OP_CSWAP, 7, 9, 7, 9},
        {SWY_ATOMIC_OP_CSWAP, 7, 9, 8, 7},
    };
    for (size_t size : {size_t{4}, size_t{8}}) {
        for (const Case& c : cases) {
            for (bool fetch : {false, true}) {
                const size_t off = 64;
                std::memset(window_.data() + off - 8, 0x33, 24);
                std::memcpy(window_.data() + off, &c.start, size);  // little-endian low bytes
                uint64_t result = 0x5555555555555555ull;
                swy_request_h r = nullptr;
                const swy_status_t st = swy_atomic_nb(
                    ep_, c.op, size, &c.operand, c.op == SWY_ATOMIC_OP_CSWAP ? &c.compare : nullptr,
                    fetch ? &result : nullptr, remote(off), key_, nullptr, &r);
                ASSERT_EQ(wait(st, r), SWY_OK);
                ASSERT_EQ(flush(), SWY_OK);
                uint64_t now = 0;
                std::memcpy(&now, window_.data() + off, size);
                EXPECT_EQ(now, c.after) << "op " << c.op << " size " << size;
                if (fetch) {
                    uint64_t want = 0x5555555555555555ull;
                    std::memcpy(&want, &c.start, size);
                    EXPECT_EQ(result, want) << "op " << c.op << " size " << size;
                }
                EXPECT_EQ(window_[off - 1], 0x33);
                EXPECT_EQ(window_[off + size], 0x33);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Lanes, RmaPaths, ::testing::Values("self", "tcp"));

}  // namespace
}  // namespace swy::rma
