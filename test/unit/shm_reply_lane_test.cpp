// Replies take a lane we already have to the peer (issue 17): a rendezvous ATS (and RTR, FIN)
// used to open a reply lane of its own, so each pair of peers took two sender slots in each
// other's table, and every reply went through the peer's contended shared FIFO even when the
// application's lane to that peer holds a dedicated PIO ring. Now reply_endpoint() answers
// with our lane to that process, a PIO one first, and opens a reply lane only when there is
// none; a lane that goes away is never answered with again.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "shm_interface_pair.h"

namespace swy::tl::shm {
namespace {

constexpr AmId kPing = 6;
constexpr AmId kPong = 7;

class ShmReplyLane : public ShmInterfacePair {
protected:
    /// a_ sends one ping on @p ep; the sender index b_ saw it from.
    uint16_t ping(Endpoint* ep) {
        const uint8_t byte = 0x5A;
        EXPECT_EQ(ep->am_send(kPing, &byte, 1, nullptr, 0), Status::kOk);
        const size_t before = sink_b_.msgs.size();
        EXPECT_TRUE(deliver(sink_b_, before + 1));
        return sink_b_.msgs.back().src.sender;
    }

    /// b_ answers sender @p sender with @p payload; a_ must receive exactly that, from a
    /// sender index that b_'s uid owns. @return that index.
    uint16_t pong(uint16_t sender, const std::vector<uint8_t>& payload) {
        Endpoint* reply = b_->reply_endpoint(sender);
        EXPECT_NE(reply, nullptr);
        if (reply == nullptr) return 0;
        EXPECT_EQ(reply->am_send(kPong, payload.data(), payload.size(), nullptr, 0), Status::kOk);
        const size_t before = sink_a_.msgs.size();
        EXPECT_TRUE(deliver(sink_a_, before + 1));
        const RecordingSink::Msg& m = sink_a_.msgs.back();
        EXPECT_EQ(m.id, kPong);
        EXPECT_EQ(m.data, payload);
        EXPECT_EQ(a_->sender_uid(m.src.sender), kUidB);
        return m.src.sender;
    }
};

TEST_F(ShmReplyLane, RepliesTakeTheApplicationsPioLaneToThatPeer) {
    std::unique_ptr<Endpoint> a_to_b = lane(*a_, *b_, kUidB, true);
    std::unique_ptr<Endpoint> b_to_a = lane(*b_, *a_, kUidA, true);
    ASSERT_TRUE(a_to_b && b_to_a);
    ASSERT_TRUE(b_to_a->attr().pio) << "b_'s lane to a_ holds a PIO ring";
    // b_'s lane to a_ has sent already, so a_ knows its sender index.
    const uint8_t hello = 1;
    ASSERT_EQ(b_to_a->am_send(kPing, &hello, 1, nullptr, 0), Status::kOk);
    ASSERT_TRUE(deliver(sink_a_, 1));
    const uint16_t b_lane_index = sink_a_.msgs[0].src.sender;

    const uint16_t from_a = ping(a_to_b.get());
    EXPECT_EQ(b_->reply_endpoint(from_a), b_to_a.get())
        << "a reply opened a lane of its own beside the PIO lane to the same process";
    EXPECT_EQ(pong(from_a, {1, 2, 3}), b_lane_index) << "the reply came on another sender slot";
    // Asked again (every ATS asks): the same lane, without a lookup by uid.
    EXPECT_EQ(b_->reply_endpoint(from_a), b_to_a.get());
}

TEST_F(ShmReplyLane, APioLaneIsPreferredToALaneThroughTheFifo) {
    std::unique_ptr<Endpoint> a_to_b = lane(*a_, *b_, kUidB, true);
    std::unique_ptr<Endpoint> fifo_lane = lane(*b_, *a_, kUidA, false);
    std::unique_ptr<Endpoint> pio_lane = lane(*b_, *a_, kUidA, true);
    ASSERT_TRUE(a_to_b && fifo_lane && pio_lane);
    ASSERT_FALSE(fifo_lane->attr().pio);
    ASSERT_TRUE(pio_lane->attr().pio);
    const uint16_t from_a = ping(a_to_b.get());
    EXPECT_EQ(b_->reply_endpoint(from_a), pio_lane.get());
    pong(from_a, {9});
}

TEST_F(ShmReplyLane, ALaneThatIsClosedIsNeverAnsweredWithAgain) {
    std::unique_ptr<Endpoint> a_to_b = lane(*a_, *b_, kUidB, true);
    std::unique_ptr<Endpoint> b_to_a = lane(*b_, *a_, kUidA, true);
    ASSERT_TRUE(a_to_b && b_to_a);
    const uint16_t from_a = ping(a_to_b.get());
    ASSERT_EQ(b_->reply_endpoint(from_a), b_to_a.get());
    pong(from_a, {4, 5});
    // The application closes its lane: the next reply opens a reply lane, which works.
    b_to_a.reset();
    Endpoint* reply = b_->reply_endpoint(from_a);
    ASSERT_NE(reply, nullptr);
    pong(from_a, {6, 7, 8});
    EXPECT_EQ(b_->reply_endpoint(from_a), reply) << "one reply lane per peer";
}

TEST_F(ShmReplyLane, WithoutALaneToThePeerARepliesLaneIsOpened) {
    std::unique_ptr<Endpoint> a_to_b = lane(*a_, *b_, kUidB, true);
    ASSERT_TRUE(a_to_b);
    const uint16_t from_a = ping(a_to_b.get());
    Endpoint* reply = b_->reply_endpoint(from_a);
    ASSERT_NE(reply, nullptr);
    EXPECT_EQ(reply->remote_uid(), kUidA);
    pong(from_a, std::vector<uint8_t>(100, 0xC3));
    EXPECT_EQ(b_->reply_endpoint(from_a), reply);
    // A lane the application opens later is not the cached reply lane's concern: replies keep
    // their lane (both reach the same process).
    std::unique_ptr<Endpoint> b_to_a = lane(*b_, *a_, kUidA, true);
    ASSERT_TRUE(b_to_a);
    EXPECT_NE(b_->reply_endpoint(from_a), nullptr);
    pong(from_a, {1});
}

}  // namespace
}  // namespace swy::tl::shm
