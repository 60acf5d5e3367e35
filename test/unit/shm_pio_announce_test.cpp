// A PIO ring is announced once (kPioOpen through the shared FIFO) and then read by one reader.
// A hostile sender may put announcements anywhere it can write, its own ring included: read
// from inside the ring being drained, such a record used to append to the list of rings that
// the drain held an entry of (a use after free once the list grew), and each one started a
// second reader at the ring's first lap, which delivered every record there again.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "shm_interface_pair.h"

namespace swy::tl::shm {
namespace {

constexpr AmId kData = 9;

class ShmPioAnnounce : public ShmInterfacePair {
protected:
    /// Send @p count one-byte messages numbered from @p first on @p ep.
    static void send_numbered(Endpoint* ep, uint8_t first, uint8_t count) {
        for (uint8_t i = first; i < first + count; ++i) {
            ASSERT_EQ(ep->am_send(kData, &i, 1, nullptr, 0), Status::kOk) << int{i};
        }
    }
    /// Forged announcements of PIO ring @p slot, @p copies of them, sent on @p ep.
    static void announce(Endpoint* ep, uint32_t slot, int copies) {
        uint8_t msg[5];
        msg[0] = static_cast<uint8_t>(ShmControl::kPioOpen);
        std::memcpy(msg + 1, &slot, 4);
        for (int i = 0; i < copies; ++i) {
            ASSERT_EQ(ep->am_send(kShmControlAm, msg, sizeof(msg), nullptr, 0), Status::kOk);
        }
    }
};

TEST_F(ShmPioAnnounce, AnnouncementsFromInsideTheRingAreRefusedAndNothingArrivesTwice) {
    std::unique_ptr<Endpoint> a_to_b = lane(*a_, *b_, kUidB, true);
    ASSERT_TRUE(a_to_b);
    ASSERT_TRUE(a_to_b->attr().pio) << "the test needs a lane with a PIO ring";
    send_numbered(a_to_b.get(), 0, 10);
    ASSERT_TRUE(deliver(sink_b_, 10));
    // Every slot b_ has (one of them is this lane's own ring), many times over: enough to
    // make a list that grew with each one move in memory.
    for (uint32_t slot = 0; slot < 2; ++slot)
        announce(a_to_b.get(), slot, 100);
    send_numbered(a_to_b.get(), 10, 10);
    ASSERT_TRUE(deliver(sink_b_, 20));
    for (int i = 0; i < 1000; ++i)
        b_->progress();  // anything delivered twice shows up now
    ASSERT_EQ(sink_b_.msgs.size(), 20u) << "records of the ring's first lap arrived again";
    for (uint8_t i = 0; i < 20; ++i) {
        EXPECT_EQ(sink_b_.msgs[i].id, kData);
        ASSERT_EQ(sink_b_.msgs[i].data.size(), 1u);
        EXPECT_EQ(sink_b_.msgs[i].data[0], i) << "message " << int{i} << " out of order";
    }
    // The lane still works after the refusals.
    send_numbered(a_to_b.get(), 20, 1);
    ASSERT_TRUE(deliver(sink_b_, 21));
    EXPECT_EQ(sink_b_.msgs[20].data[0], 20);
}

}  // namespace
}  // namespace swy::tl::shm
