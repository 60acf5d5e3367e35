// Specification of switchyard.hpp, the RAII C++ wrapper: ownership, errors only from
// constructors, and a tagged exchange through a worker's endpoint to itself (self transport).
#include <switchyard/switchyard.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

namespace {

static_assert(!std::is_copy_constructible_v<swy::Context>);
static_assert(!std::is_copy_constructible_v<swy::Worker>);
static_assert(!std::is_copy_constructible_v<swy::Endpoint>);
static_assert(!std::is_copy_constructible_v<swy::Request>);
static_assert(std::is_nothrow_move_constructible_v<swy::Context>);
static_assert(std::is_nothrow_move_constructible_v<swy::Worker>);
static_assert(std::is_nothrow_move_constructible_v<swy::Endpoint>);
static_assert(std::is_nothrow_move_constructible_v<swy::Request>);
static_assert(std::is_nothrow_move_assignable_v<swy::Request>);

constexpr swy_tag_t kTag = 0xC0FFEE;

// Completes @p r by progressing @p worker (what Request::wait does, spelled out).
swy_status_t spin(swy::Worker& worker, swy::Request& r) {
    while (!r.done())
        worker.progress();
    return r.test();
}

struct SelfLoop {
    swy::Context context{{{"TLS", "self"}}};
    swy::Worker worker{context};
    swy::Endpoint ep{worker, worker.address()};
};

TEST(CppHeader, SendThenReceiveOnEndpointToSelf) {
    SelfLoop s;
    std::vector<char> out(100), in(100, 0);
    std::iota(out.begin(), out.end(), 1);

    swy::Request send = s.ep.send(out.data(), out.size(), kTag);
    swy::Request recv = s.worker.recv(in.data(), in.size(), kTag);
    EXPECT_EQ(spin(s.worker, recv), SWY_OK);
    EXPECT_EQ(send.wait(), SWY_OK);
    EXPECT_EQ(in, out);

    swy_tag_recv_info_t info{};
    ASSERT_EQ(recv.recv_info(&info), SWY_OK);
    EXPECT_EQ(info.sender_tag, kTag);
    EXPECT_EQ(info.length, out.size());
}

TEST(CppHeader, ReceivePostedBeforeSendMatchesExactTag) {
    SelfLoop s;
    uint64_t a = 0, b = 0;
    const uint64_t va = 0x1111, vb = 0x2222;
    swy::Request ra = s.worker.recv(&a, sizeof a, kTag + 1);
    swy::Request rb = s.worker.recv(&b, sizeof b, kTag + 2);
    EXPECT_FALSE(ra.done());
    swy::Request sb = s.ep.send(&vb, sizeof vb, kTag + 2);
    swy::Request sa = s.ep.send(&va, sizeof va, kTag + 1);
    EXPECT_EQ(rb.wait(), SWY_OK);
    EXPECT_EQ(ra.wait(), SWY_OK);
    EXPECT_EQ(sa.wait(), SWY_OK);
    EXPECT_EQ(sb.wait(), SWY_OK);
    EXPECT_EQ(a, va);
    EXPECT_EQ(b, vb);
}

TEST(CppHeader, ManyMessagesArriveInSendOrder) {
    SelfLoop s;
    constexpr int kCount = 200;
    std::vector<uint32_t> out(kCount), in(kCount, 0);
    std::iota(out.begin(), out.end(), 0u);
    std::vector<swy::Request> sends, recvs;
    for (int i = 0; i < kCount; ++i)
        recvs.push_back(s.worker.recv(&in[i], sizeof in[i], kTag));
    for (int i = 0; i < kCount; ++i)
        sends.push_back(s.ep.send(&out[i], sizeof out[i], kTag));
    for (auto& r : recvs)
        EXPECT_EQ(r.wait(), SWY_OK);
    for (auto& r : sends)
        EXPECT_EQ(r.wait(), SWY_OK);
    EXPECT_EQ(in, out);
}

TEST(CppHeader, LargeMessageRoundTrips) {
    SelfLoop s;
    std::vector<unsigned char> out(4 << 20), in(out.size(), 0);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<unsigned char>(i * 7 + 3);
    swy::Request recv = s.worker.recv(in.data(), in.size(), kTag);
    swy::Request send = s.ep.send(out.data(), out.size(), kTag);
    EXPECT_EQ(recv.wait(), SWY_OK);
    EXPECT_EQ(send.wait(), SWY_OK);
    EXPECT_TRUE(std::memcmp(in.data(), out.data(), out.size()) == 0);
}

TEST(CppHeader, TruncationIsAStatusNotAnException) {
    SelfLoop s;
    char out[64] = {}, in[16] = {};
    swy::Request recv = s.worker.recv(in, sizeof in, kTag);
    swy::Request send = s.ep.send(out, sizeof out, kTag);
    EXPECT_EQ(recv.wait(), SWY_ERR_MESSAGE_TRUNCATED);
    send.wait();  // the send's own status after a truncating receive is transport-defined
}

TEST(CppHeader, CancelUnmatchedReceive) {
    SelfLoop s;
    char in[8];
    swy::Request recv = s.worker.recv(in, sizeof in, kTag);
    EXPECT_EQ(recv.cancel(), SWY_OK);
    EXPECT_EQ(recv.wait(), SWY_ERR_CANCELED);
}

TEST(CppHeader, MovedFromObjectsReleaseNothing) {
    SelfLoop s;
    swy::Endpoint moved = std::move(s.ep);
    EXPECT_EQ(s.ep.get(), nullptr);
    EXPECT_EQ(s.ep.close(), SWY_OK);  // empty: nothing to close
    uint64_t v = 5, w = 0;
    swy::Request r = s.worker.recv(&w, sizeof w, kTag);
    swy::Request r2 = std::move(r);
    EXPECT_EQ(r.get(), nullptr);
    swy::Request sent = moved.send(&v, sizeof v, kTag);
    EXPECT_EQ(r2.wait(), SWY_OK);
    EXPECT_EQ(sent.wait(), SWY_OK);
    EXPECT_EQ(w, v);
    EXPECT_EQ(moved.close(), SWY_OK);
}

TEST(CppHeader, ChildKeepsParentsAlive) {
    // Destroy the Context and Worker objects first: the endpoint still works.
    auto context = std::make_unique<swy::Context>(
        std::initializer_list<std::pair<const char*, const char*>>{{"TLS", "self"}});
    auto worker = std::make_unique<swy::Worker>(*context);
    swy::Endpoint ep(*worker, worker->address());
    swy_worker_h raw_worker = worker->get();
    context.reset();
    swy::Worker still_there = std::move(*worker);
    worker.reset();
    uint32_t v = 42, w = 0;
    swy::Request r = still_there.recv(&w, sizeof w, kTag);
    swy::Request sreq = ep.send(&v, sizeof v, kTag);
    EXPECT_EQ(r.wait(), SWY_OK);
    EXPECT_EQ(sreq.wait(), SWY_OK);
    EXPECT_EQ(w, 42u);
    EXPECT_EQ(still_there.get(), raw_worker);
}

TEST(CppHeader, ConstructorsThrowStatusError) {
    try {
        swy::Context bad({{"NO_SUCH_VARIABLE_FOR_THIS_TEST", "1"}});
        FAIL() << "expected StatusError";
    } catch (const swy::StatusError& e) {
        EXPECT_EQ(e.status(), SWY_ERR_NOT_FOUND);
        EXPECT_NE(std::string(e.what()).find("NO_SUCH_VARIABLE_FOR_THIS_TEST"), std::string::npos);
    }
    swy::Context context({{"TLS", "self"}});
    swy::Worker worker(context);
    std::vector<std::byte> garbage(3, std::byte{0xff});
    EXPECT_THROW(swy::Endpoint(worker, garbage), swy::StatusError);
}

TEST(CppHeader, EndpointDescribesItself) {
    SelfLoop s;
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    ASSERT_EQ(s.ep.query(&attr), SWY_OK);
    ASSERT_NE(attr.transport, nullptr);
    EXPECT_STREQ(attr.transport, "self");
    EXPECT_FALSE(s.ep.protocols().empty());
}

}  // namespace
