// Crossing connects over verbs: two workers create endpoints to each other before either has
// seen the other's request. The pair must end on one RC QP (one connection on each side, both
// endpoints on it), with every message queued before and after the switch delivered byte for
// byte and in order, both ways, and the connection must close in order from both sides. Each
// order of events is run: the tie-break's winner (lower uid) handles the loser's request first
// (the loser waits for the winner's connection after the redirect), or the loser handles the
// winner's request first (the winner's connection is there when the redirect comes). Needs an
// RDMA device (rxe0 in the VM: test/verbs/run-vm.sh); skips without one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

#include "common/socket.h"
#include "core/address.h"
#include "core/worker.h"
#include "transports/verbs/verbs_open.h"
#include "transports/verbs/verbs_transport.h"
#include "transports/verbs/verbs_wire.h"
#include "verbs_test_node.h"

namespace {

using Clock = std::chrono::steady_clock;
using swy::test::VerbsNode;
using swy::test::VerbsSettings;

constexpr const char* kKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

using swy::test::connect_counting_failures;
using Failure = swy::test::EpFailure;

const swy::core::Worker* core_of(const VerbsNode& n) {
    return reinterpret_cast<const swy::core::Worker*>(n.worker);
}

swy::tl::verbs::ScaleReport report(const VerbsNode& n) {
    swy::tl::verbs::ScaleReport r;
    EXPECT_TRUE(swy::tl::verbs::scale_report(core_of(n)->interface_named("verbs"), &r));
    return r;
}

uint8_t pattern(size_t i, uint32_t seed) {
    return static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
}

/// One message of a stream: its send and receive, and the buffers they use.
struct Message {
    std::vector<uint8_t> src, dst;
    uint32_t seed = 0;
    swy_request_h send = nullptr, recv = nullptr;
};

/// Sizes across the lane's boundaries: inline (248 B payload), bounce buffer, fragmented
/// eager (8 KiB segments), rendezvous (above SWY_RNDV_THRESH=16K).
constexpr size_t kSizes[] = {0, 8, 248, 249, 8176, 8177, 16383, 16384, 16385, 300000};

/// Queue every size from @p ep's worker @p from to @p to, all under one tag (so a message
/// overtaking another lands in the wrong buffer), receives posted first.
std::vector<Message> post_stream(swy_ep_h ep, const VerbsNode& to, uint32_t seed0) {
    std::vector<Message> stream(std::size(kSizes));
    for (size_t k = 0; k < stream.size(); ++k) {
        Message& m = stream[k];
        m.seed = seed0 + static_cast<uint32_t>(k);
        m.src.resize(kSizes[k]);
        for (size_t i = 0; i < kSizes[k]; ++i)
            m.src[i] = pattern(i, m.seed);
        m.dst.assign(kSizes[k] + 16, 0xEE);
        EXPECT_GE(
            swy_tag_recv_nb(to.worker, m.dst.data(), kSizes[k], 0x77, ~0ull, nullptr, &m.recv), 0);
    }
    for (Message& m : stream)
        EXPECT_GE(swy_tag_send_nb(ep, m.src.data(), m.src.size(), 0x77, nullptr, &m.send), 0);
    return stream;
}

bool settled(std::vector<Message>& stream) {
    for (Message& m : stream) {
        for (swy_request_h* r : {&m.send, &m.recv}) {
            if (*r == nullptr) continue;
            const swy_status_t st = swy_request_test(*r);
            if (st == SWY_INPROGRESS) return false;
            EXPECT_EQ(st, SWY_OK) << m.src.size() << " B";
            swy_request_free(*r);
            *r = nullptr;
        }
    }
    return true;
}

void check_stream(const std::vector<Message>& stream, const char* way) {
    for (const Message& m : stream) {
        SCOPED_TRACE(std::string(way) + ", " + std::to_string(m.src.size()) + " B");
        for (size_t i = 0; i < m.src.size(); ++i)
            ASSERT_EQ(m.dst[i], m.src[i]) << "byte " << i;
        for (size_t i = 0; i < 16; ++i)
            ASSERT_EQ(m.dst[m.src.size() + i], 0xEE) << "guard byte " << i;
    }
}

/// Progress both until both streams completed (30 s at most).
void exchange(VerbsNode& a, VerbsNode& b, std::vector<Message>& ab, std::vector<Message>& ba) {
    const auto end = Clock::now() + std::chrono::seconds(30);
    while (!(settled(ab) && settled(ba)) && Clock::now() < end) {
        swy_worker_progress(a.worker);
        swy_worker_progress(b.worker);
    }
    ASSERT_TRUE(settled(ab) && settled(ba)) << "a stream did not complete";
    check_stream(ab, "a -> b");
    check_stream(ba, "b -> a");
}

/// Close @p eps (endpoints of a or b) with a flush and progress both until every close
/// completed with SWY_OK and neither has a connection left (10 s at most).
void close_until_no_connections(VerbsNode& a, VerbsNode& b, std::vector<swy_ep_h> eps) {
    std::vector<swy_request_h> closing(eps.size(), nullptr);
    for (size_t i = 0; i < eps.size(); ++i)
        swy_ep_close_nb(eps[i], SWY_EP_CLOSE_FLUSH, &closing[i]);
    auto busy = [&] {
        for (swy_request_h r : closing)
            if (r != nullptr) return true;
        return report(a).connections + report(b).connections != 0;
    };
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (busy() && Clock::now() < end) {
        swy_worker_progress(a.worker);
        swy_worker_progress(b.worker);
        for (swy_request_h& r : closing) {
            if (r != nullptr && swy_request_test(r) != SWY_INPROGRESS) {
                EXPECT_EQ(swy_request_test(r), SWY_OK);
                swy_request_free(r);
                r = nullptr;
            }
        }
    }
    for (swy_request_h r : closing)
        EXPECT_EQ(r, nullptr) << "a close did not complete";
    EXPECT_EQ(report(a).connections, 0u) << "a: the shared connection closed in order";
    EXPECT_EQ(report(b).connections, 0u) << "b: the shared connection closed in order";
}

/// Both create endpoints before either progressed, queue a stream each way, then @p first
/// progresses alone for a while before both do.
void cross(const VerbsSettings& settings, bool winner_first) {
    VerbsNode a(settings), b(settings);
    SKIP_WITHOUT_VERBS(a);
    ASSERT_TRUE(b.has_verbs());
    ASSERT_NE(core_of(a)->uid(), core_of(b)->uid());
    const bool a_wins = core_of(a)->uid() < core_of(b)->uid();
    VerbsNode& first = winner_first == a_wins ? a : b;
    SCOPED_TRACE(std::string(winner_first ? "winner" : "loser") + " progresses first");

    Failure fa, fb;
    swy_ep_h ab = connect_counting_failures(a, b, &fa);  // a's request is out
    swy_ep_h ba =
        connect_counting_failures(b, a, &fb);  // and b's, before b has seen a's: they cross
    ASSERT_NE(ab, nullptr);
    ASSERT_NE(ba, nullptr);
    std::vector<Message> to_b = post_stream(ab, b, 100);
    std::vector<Message> to_a = post_stream(ba, a, 200);
    for (int i = 0; i < 200; ++i)
        swy_worker_progress(first.worker);
    exchange(a, b, to_b, to_a);

    // One RC QP for the pair: one connection on each side, both endpoints on it.
    for (VerbsNode* n : {&a, &b}) {
        const swy::tl::verbs::ScaleReport r = report(*n);
        SCOPED_TRACE(n == &a ? "a" : "b");
        EXPECT_EQ(r.connections, 1u);
        EXPECT_EQ(r.qps, 1u);
        EXPECT_EQ(r.shared, 1u) << "both endpoints use the one connection";
    }
    // And the connection keeps working both ways once both are on it.
    std::vector<Message> again_b = post_stream(ab, b, 300);
    std::vector<Message> again_a = post_stream(ba, a, 400);
    exchange(a, b, again_b, again_a);
    EXPECT_EQ(fa.calls + fb.calls, 0) << "no endpoint failed";
    close_until_no_connections(a, b, {ab, ba});
    EXPECT_EQ(fa.calls + fb.calls, 0) << "no endpoint failed while closing";
}

const VerbsSettings kPlain{{"RNDV_THRESH", "16K"}};
const VerbsSettings kKeyed{{"RNDV_THRESH", "16K"}, {"AUTH_KEY", kKey}};

TEST(VerbsCrossing, WinnerFirstEndsOnOneQpWithEveryByteInOrder) { cross(kPlain, true); }
TEST(VerbsCrossing, LoserFirstEndsOnOneQpWithEveryByteInOrder) { cross(kPlain, false); }
TEST(VerbsCrossing, WithAKeyWinnerFirstEndsOnOneQp) { cross(kKeyed, true); }
TEST(VerbsCrossing, WithAKeyLoserFirstEndsOnOneQp) { cross(kKeyed, false); }

TEST(VerbsCrossing, LoserClosingWhileRedirectedGivesTheConnectionBack) {
    VerbsNode a(kPlain), b(kPlain);
    SKIP_WITHOUT_VERBS(a);
    const bool a_wins = core_of(a)->uid() < core_of(b)->uid();
    VerbsNode& winner = a_wins ? a : b;
    VerbsNode& loser = a_wins ? b : a;
    Failure fw, fl;
    swy_ep_h to_loser = connect_counting_failures(winner, loser, &fw);
    swy_ep_h to_winner = connect_counting_failures(loser, winner, &fl);
    ASSERT_NE(to_loser, nullptr);
    ASSERT_NE(to_winner, nullptr);
    // The winner redirects the loser's request; the loser sees the redirect (its endpoint now
    // waits for the winner's connection) and goes away before that connection is up.
    for (int i = 0; i < 50; ++i)
        swy_worker_progress(winner.worker);
    swy_worker_progress(loser.worker);
    swy::test::close_now(to_winner);
    // The winner's endpoint still reaches the loser's worker, byte for byte.
    std::vector<Message> stream = post_stream(to_loser, loser, 500);
    std::vector<Message> none;
    exchange(winner, loser, stream, none);
    for (VerbsNode* n : {&winner, &loser}) {
        SCOPED_TRACE(n == &winner ? "winner" : "loser");
        EXPECT_LE(report(*n).qps, 1u) << "never a second QP for the pair";
    }
    EXPECT_EQ(fw.calls, 0) << "the winner's endpoint did not fail";
    // Closing the winner's endpoint leaves nothing behind on either side.
    close_until_no_connections(winner, loser, {to_loser});
    EXPECT_EQ(fw.calls, 0);
}

/// The verbs section of @p n's address.
swy::tl::verbs::AddressSection verbs_section(const VerbsNode& n) {
    swy::core::WorkerAddress a;
    std::string why;
    swy::tl::verbs::AddressSection v{};
    EXPECT_EQ(swy::core::decode_address(n.address.data(), n.address.size(), &a, &why),
              swy::Status::kOk);
    const swy::core::AddressSection* s = a.find(swy::tl::verbs::kAddressSection);
    EXPECT_TRUE(s != nullptr && s->bytes.size() == sizeof(v));
    if (s != nullptr && s->bytes.size() == sizeof(v)) std::memcpy(&v, s->bytes.data(), sizeof(v));
    return v;
}

TEST(VerbsCrossing, AnUnprovenClaimIsNeverRedirected) {
    // While the winner's connect to the loser is out, someone without the key sends the
    // winner a request in the loser's name (its uid and GID, a wrong proof): exactly what a
    // crossing connect looks like, but unproven. It must be refused, and the winner's
    // connection must not count it as a second owner: once the winner closes its endpoint,
    // nothing stays open (a redirect taken before the proof check would keep the connection
    // waiting for the goodbye of an endpoint that does not exist).
    VerbsNode a(kKeyed), b(kKeyed);
    SKIP_WITHOUT_VERBS(a);
    const bool a_wins = core_of(a)->uid() < core_of(b)->uid();
    VerbsNode& winner = a_wins ? a : b;
    VerbsNode& loser = a_wins ? b : a;
    Failure fw;
    swy_ep_h to_loser = connect_counting_failures(winner, loser, &fw);
    ASSERT_NE(to_loser, nullptr);

    const swy::tl::verbs::AddressSection w = verbs_section(winner);
    const swy::tl::verbs::AddressSection l = verbs_section(loser);
    swy::tl::verbs::CmMessage fake{};
    fake.magic = swy::tl::verbs::kCmMagic;
    fake.version = swy::tl::verbs::kCmVersion;
    fake.type = static_cast<uint8_t>(swy::tl::verbs::CmType::kRequest);
    fake.mtu = 1;
    fake.is_global = 1;
    fake.uid = core_of(loser)->uid();
    fake.qpn = 0x1234;
    fake.psn = 1;
    std::memcpy(fake.gid, l.gid, sizeof(fake.gid));
    fake.rx_credits = 8;
    fake.max_message = 8192;
    std::memset(fake.nonce, 0x5A, sizeof(fake.nonce));
    std::memset(fake.proof, 0xA5, sizeof(fake.proof));
    swy::common::UniqueFd fd;
    std::string why;
    const auto deadline = swy::common::SocketClock::now() + std::chrono::seconds(2);
    ASSERT_EQ(swy::common::connect_with_deadline(
                  swy::common::SocketAddress::from_ip(w.family, w.ip, w.port), deadline, &fd, &why),
              swy::Status::kOk)
        << why;
    ASSERT_EQ(swy::common::write_all(fd.get(), &fake, sizeof(fake), deadline, &why),
              swy::Status::kOk)
        << why;
    // The winner handles the claim while its own connect is still out.
    for (int i = 0; i < 50; ++i)
        swy_worker_progress(winner.worker);
    swy::tl::verbs::CmMessage answer{};
    EXPECT_NE(
        swy::common::read_all(fd.get(), &answer, sizeof(answer),
                              swy::common::SocketClock::now() + std::chrono::seconds(1), &why),
        swy::Status::kOk)
        << "the claim got an answer (type " << int{answer.type} << ")";

    std::vector<Message> stream = post_stream(to_loser, loser, 600);
    std::vector<Message> none;
    exchange(winner, loser, stream, none);
    EXPECT_EQ(fw.calls, 0);
    close_until_no_connections(winner, loser, {to_loser});  // none kept for nobody
}

}  // namespace
