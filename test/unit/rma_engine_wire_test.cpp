// The one-sided message path at the wire: malformed, forged and stale requests and replies
// never crash the target or the initiator and never touch memory; forged keys fail the get or
// atomic that carried them and are reported to the flush after a put; ordering state (fence)
// and failures behave as rma_engine.h says. Runs over self (one worker, its own endpoint) and
// tcp (two workers on lo, where puts and get replies are placed from the socket).
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/endpoint.h"
#include "core/worker.h"
#include "protocols/rma/rma_engine.h"
#include "protocols/rma/rma_wire.h"
#include "protocols/wire.h"
#include "test_context.h"

namespace swy::rma {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> address_of(swy_worker_h w) {
    void* a = nullptr;
    size_t n = 0;
    EXPECT_EQ(swy_worker_get_address(w, &a, &n), SWY_OK);
    std::vector<uint8_t> out(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
    swy_worker_release_address(w, a);
    return out;
}

class RmaWire : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        const bool tcp = std::string(GetParam()) == "tcp";
        test::Settings s{{"TLS", tcp ? "tcp" : "self"}, {"LOG_LEVEL", "error"}};
        if (tcp) s.push_back({"NET_DEVICES", "lo"});
        ctx_ = test::make_context(s);
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &initiator_), SWY_OK);
        target_ = initiator_;
        if (tcp) {
            ASSERT_EQ(swy_worker_create(ctx_, nullptr, &target_), SWY_OK);
        }
        const std::vector<uint8_t> addr = address_of(target_);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr.data();
        p.remote_address_length = addr.size();
        ASSERT_EQ(swy_ep_create(initiator_, &p, &ep_), SWY_OK);
        target_memory_.assign(4096, 0x5A);
    }
    void TearDown() override {
        if (ep_ != nullptr) {
            swy_request_h r = nullptr;
            (void)swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &r);
            if (r != nullptr) swy_request_free(r);
        }
        if (target_ != initiator_) swy_worker_destroy(target_);
        swy_worker_destroy(initiator_);
        swy_context_destroy(ctx_);
    }

    core::Worker* iw() const { return reinterpret_cast<core::Worker*>(initiator_); }
    core::Worker* tw() const { return reinterpret_cast<core::Worker*>(target_); }
    core::Endpoint* ep() const {
        return core::SlotArena<core::Endpoint>::resolve(reinterpret_cast<uintptr_t>(ep_));
    }
    Engine& engine() const { return iw()->rma(); }
    uint64_t target_address(size_t offset = 0) {
        return reinterpret_cast<uintptr_t>(target_memory_.data() + offset);
    }
    /// A key naming target_memory_ that the target's table never issued.
    KeyIdentity forged_key() {
        return KeyIdentity{.slot = 1,
                           .secret = 0x0123456789abcdefull,
                           .base = target_address(),
                           .length = target_memory_.size(),
                           .access = kAccessAll};
    }
    bool target_untouched() const {
        for (uint8_t b : target_memory_) {
            if (b != 0x5A) return false;
        }
        return true;
    }
    void progress() {
        swy_worker_progress(initiator_);
        if (target_ != initiator_) swy_worker_progress(target_);
    }
    /// Progress both until @p r completes; its status.
    swy_status_t wait(swy_request_h r) {
        const auto deadline = Clock::now() + std::chrono::seconds(10);
        swy_status_t s = SWY_INPROGRESS;
        while ((s = swy_request_test(r)) == SWY_INPROGRESS && Clock::now() < deadline)
            progress();
        return s;
    }
    /// Wait for @p r (a handle or null) started with status @p st; the final status.
    swy_status_t finish(Status st, core::Request*& r) {
        if (st != Status::kInProgress) return static_cast<swy_status_t>(st);
        swy_request_h h = r->handle();
        const swy_status_t s = wait(h);
        swy_request_free(h);
        return s;
    }
    void settle(int rounds = 200) {
        for (int i = 0; i < rounds; ++i)
            progress();
    }
    /// Deliver raw bytes to the target as if they came from sender 0 of interface 0.
    void deliver(tl::AmId id, const std::vector<uint8_t>& bytes) {
        tw()->on_am(id, tl::AmSource{0, 0}, bytes.data(), bytes.size());
    }
    template <typename H>
    static std::vector<uint8_t> bytes_of(const H& h, size_t extra = 0, uint8_t fill = 0xEE) {
        std::vector<uint8_t> v(sizeof(H) + extra, fill);
        std::memcpy(v.data(), &h, sizeof(H));
        return v;
    }

    swy_context_h ctx_ = nullptr;
    swy_worker_h initiator_ = nullptr;
    swy_worker_h target_ = nullptr;
    swy_ep_h ep_ = nullptr;
    std::vector<uint8_t> target_memory_;
};

TEST(RmaWireFormat, AtomicOpAndSizeAreValidated) {
    for (unsigned op = 0; op < 256; ++op) {
        for (unsigned size = 0; size < 16; ++size) {
            const bool want = op <= SWY_ATOMIC_OP_CSWAP && (size == 4 || size == 8);
            EXPECT_EQ(valid_atomic(static_cast<uint8_t>(op), static_cast<uint8_t>(size)), want);
        }
    }
    PutHeader h{};
    h.version = kRmaWireVersion;
    std::vector<uint8_t> v(sizeof(h));
    std::memcpy(v.data(), &h, sizeof(h));
    PutHeader out{};
    EXPECT_TRUE(decode_request(v.data(), v.size(), &out));
    EXPECT_FALSE(decode_request(v.data(), v.size() - 1, &out));
    v[offsetof(PutHeader, version)] = kRmaWireVersion + 1;
    EXPECT_FALSE(decode_request(v.data(), v.size(), &out));
}

TEST_P(RmaWire, TruncatedAndMalformedRequestsNeverTouchMemory) {
    const uint64_t before = tw()->rma().refused();
    // Every id, every length up to a whole header and one byte more, zero bytes and random.
    std::mt19937 rng(7);
    for (tl::AmId id = proto::kAmRmaPut; id <= proto::kAmRmaFlushAck; ++id) {
        for (size_t len = 0; len <= sizeof(AtomicHeader) + 1; ++len) {
            std::vector<uint8_t> zeros(len, 0);
            deliver(id, zeros);
            std::vector<uint8_t> noise(len);
            for (auto& b : noise)
                b = static_cast<uint8_t>(rng());
            deliver(id, noise);
        }
    }
    // Well-formed but naming target memory with a forged key, and with bad op / size / version.
    PutHeader put{.secret = 9,
                  .address = target_address(),
                  .slot = 0,
                  .version = kRmaWireVersion,
                  .reserved = {}};
    deliver(proto::kAmRmaPut, bytes_of(put, 64));
    put.version = 0;
    deliver(proto::kAmRmaPut, bytes_of(put, 64));
    for (uint8_t op : {uint8_t{0}, uint8_t{5}, uint8_t{6}, uint8_t{255}}) {
        for (uint8_t size : {uint8_t{0}, uint8_t{4}, uint8_t{7}, uint8_t{8}, uint8_t{16}}) {
            AtomicHeader a{.secret = 9,
                           .address = target_address(),
                           .operand = 0x11,
                           .compare = 0x5A5A5A5A5A5A5A5Aull,
                           .request = 0,
                           .slot = 0,
                           .version = kRmaWireVersion,
                           .op = op,
                           .size = size,
                           .reserved = 0};
            deliver(proto::kAmRmaAtomic, bytes_of(a));
        }
    }
    GetHeader g{.secret = 9,
                .address = target_address(),
                .length = ~uint64_t{0},
                .request = 12345,
                .slot = 0,
                .version = kRmaWireVersion,
                .reserved = {}};
    deliver(proto::kAmRmaGet, bytes_of(g));
    settle();
    EXPECT_TRUE(target_untouched());
    EXPECT_GT(tw()->rma().refused(), before);
}

TEST_P(RmaWire, RepliesNamingNoRequestAreRejected) {
    const uint64_t before = iw()->rejected_controls();
    GetReplyHeader gr{.request = 0x1234567800000001ull, .offset = 0, .status = 0, .reserved = 0};
    iw()->on_am(proto::kAmRmaGetReply, tl::AmSource{0, 0}, bytes_of(gr, 16).data(),
                sizeof(gr) + 16);
    AtomicReplyHeader ar{.request = 0x1234567800000001ull, .value = 1, .status = 0, .reserved = 0};
    iw()->on_am(proto::kAmRmaAtomicReply, tl::AmSource{0, 0}, bytes_of(ar).data(), sizeof(ar));
    FlushAckHeader fa{.id = 777, .status = 0, .reserved = 0};
    iw()->on_am(proto::kAmRmaFlushAck, tl::AmSource{0, 0}, bytes_of(fa).data(), sizeof(fa));
    EXPECT_EQ(iw()->rejected_controls(), before + 3);
}

TEST_P(RmaWire, ForgedKeyFailsGetWithAccessDeniedAndLeavesBuffers) {
    for (size_t n : {size_t{1}, size_t{8}, size_t{4000}}) {
        std::vector<uint8_t> local(n + 16, 0xC3);
        core::Request* r = nullptr;
        const Status st = engine().get(ep(), forged_key(), target_address(), local.data(), n,
                                       SWY_DATATYPE_CONTIG, nullptr, &r);
        EXPECT_EQ(finish(st, r), SWY_ERR_ACCESS_DENIED) << n;
        for (uint8_t b : local)
            ASSERT_EQ(b, 0xC3);
    }
    EXPECT_TRUE(target_untouched());
}

TEST_P(RmaWire, ForgedKeyFailsFetchingAtomicAndLeavesResult) {
    for (size_t size : {size_t{4}, size_t{8}}) {
        uint64_t result = 0x7777777777777777ull;
        core::Request* r = nullptr;
        const Status st = engine().atomic(ep(), forged_key(), target_address(8), SWY_ATOMIC_OP_ADD,
                                          size, 1, 0, &result, nullptr, &r);
        EXPECT_EQ(finish(st, r), SWY_ERR_ACCESS_DENIED);
        EXPECT_EQ(result, 0x7777777777777777ull);
    }
    EXPECT_TRUE(target_untouched());
}

TEST_P(RmaWire, ForgedPutAndPostedAtomicAreReportedByTheNextFlushOnly) {
    std::vector<uint8_t> data(3000, 0x11);
    core::Request* r = nullptr;
    Status st = engine().put(ep(), forged_key(), target_address(), data.data(), data.size(),
                             SWY_DATATYPE_CONTIG, nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_OK);  // local completion knows nothing of the target
    st = engine().flush_ep(ep(), nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_ERR_ACCESS_DENIED);
    st = engine().flush_ep(ep(), nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_OK);  // reported once

    st = engine().atomic(ep(), forged_key(), target_address(), SWY_ATOMIC_OP_SWAP, 8, 1, 0, nullptr,
                         nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_OK);
    st = engine().flush_worker(nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_ERR_ACCESS_DENIED);
    EXPECT_TRUE(target_untouched());
}

TEST_P(RmaWire, NoImmediateCompletionGivesARequest) {
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
    p.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE;
    core::Request* r = nullptr;
    EXPECT_EQ(engine().flush_ep(ep(), &p, &r), Status::kInProgress);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(finish(Status::kInProgress, r), SWY_OK);
    // The flag is read only when its mask bit says so.
    p.field_mask = 0;
    EXPECT_EQ(engine().flush_ep(ep(), &p, &r), Status::kOk);
    EXPECT_EQ(r, nullptr);
}

TEST_P(RmaWire, FenceHoldsDirectOperationsUntilEarlierOnesAreDoneAtTheTarget) {
    EXPECT_TRUE(engine().direct_allowed(ep()));
    engine().fence();  // nothing outstanding: no effect
    EXPECT_TRUE(engine().direct_allowed(ep()));
    std::vector<uint8_t> data(16, 1);
    core::Request* r = nullptr;
    Status st = engine().put(ep(), forged_key(), target_address(), data.data(), data.size(),
                             SWY_DATATYPE_CONTIG, nullptr, &r);
    ASSERT_EQ(finish(st, r), SWY_OK);
    EXPECT_TRUE(engine().direct_allowed(ep()));  // no fence: no order asked for
    engine().fence();
    EXPECT_FALSE(engine().direct_allowed(ep()));  // the put is not known done at the target
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!engine().direct_allowed(ep()) && Clock::now() < deadline)
        progress();
    EXPECT_TRUE(engine().direct_allowed(ep()));
    // What the fence's flush learnt goes to the next flush.
    st = engine().flush_ep(ep(), nullptr, &r);
    EXPECT_EQ(finish(st, r), SWY_ERR_ACCESS_DENIED);
}

TEST_P(RmaWire, ClosingTheEndpointFailsItsOutstandingOperations) {
    uint64_t local = 0;
    core::Request* get = nullptr;
    core::Request* flush = nullptr;
    ASSERT_EQ(engine().get(ep(), forged_key(), target_address(), &local, sizeof(local),
                           SWY_DATATYPE_CONTIG, nullptr, &get),
              Status::kInProgress);
    ASSERT_EQ(engine().flush_ep(ep(), nullptr, &flush), Status::kInProgress);
    swy_request_h c = nullptr;
    (void)swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &c);
    if (c != nullptr) swy_request_free(c);
    ep_ = nullptr;
    swy_request_h g = get->handle();
    swy_request_h f = flush->handle();
    EXPECT_EQ(swy_request_test(g), SWY_ERR_CANCELED);
    EXPECT_EQ(swy_request_test(f), SWY_ERR_CANCELED);
    swy_request_free(g);
    swy_request_free(f);
    settle();  // late replies find no request
}

TEST_P(RmaWire, ReplyBeyondTheReadFailsTheGetAndWritesNothing) {
    std::vector<uint8_t> local(32, 0xC3);
    core::Request* r = nullptr;
    ASSERT_EQ(engine().get(ep(), forged_key(), target_address(), local.data(), 16,
                           SWY_DATATYPE_CONTIG, nullptr, &r),
              Status::kInProgress);
    // Forge the reply before the real one: right id, right lane, offset past the end.
    GetReplyHeader h{.request = r->wire_id(), .offset = 8, .status = 0, .reserved = 0};
    std::vector<uint8_t> v = bytes_of(h, 16, 0x99);
    const tl::AmSource self_src{ep()->iface_index(), 0};
    if (std::string(GetParam()) == "self") {
        iw()->on_am(proto::kAmRmaGetReply, self_src, v.data(), v.size());
        EXPECT_EQ(finish(Status::kInProgress, r), SWY_ERR_MALFORMED);
        for (uint8_t b : local)
            EXPECT_EQ(b, 0xC3);
    } else {
        // Over tcp the sender index of the target's connection is not known here: a reply
        // from another sender index is refused and the get still fails as the target says.
        const uint64_t before = iw()->rejected_controls();
        iw()->on_am(proto::kAmRmaGetReply, tl::AmSource{ep()->iface_index(), 999}, v.data(),
                    v.size());
        EXPECT_EQ(iw()->rejected_controls(), before + 1);
        EXPECT_EQ(finish(Status::kInProgress, r), SWY_ERR_ACCESS_DENIED);
    }
}

INSTANTIATE_TEST_SUITE_P(Lanes, RmaWire, ::testing::Values("self", "tcp"));

}  // namespace
}  // namespace swy::rma
