// A PIO ring's pages are mapped on both sides before its first message (issue 17): the first
// pass over a ring used to take a page fault per page on each side (128 for a 256 KiB ring),
// tens of microseconds each on a virtual machine, which made the first size of every OSU run
// over pml swy slow. Counted with getrusage: page faults are deterministic, a clock is not.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>

#include "worker_pair.h"

namespace {

constexpr swy_tag_t kTag = 0x7e57;
constexpr size_t kMessage = 8;
// 64 credits of 4 KiB: a 256 KiB ring, 64 pages, one 64-byte record per 8-byte message.
constexpr uint64_t kRingBytes = 64 * 4096;
constexpr uint64_t kRecordBytes = 64;
// Twice round the ring: every page of it is written and read at least once.
constexpr int kMessages = static_cast<int>(2 * kRingBytes / kRecordBytes);

long page_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt + u.ru_majflt;
}

class ShmPrefault : public swy::test::WorkerPair {
protected:
    swy::test::Settings settings() const override {
        return {{"TLS", "shm"},
                {"SHM_PIO_SLOTS", "2"},
                {"SHM_PIO_CREDITS", "64"},
                {"SHM_PIO_CELL_SIZE", "4096"}};
    }

    /// One 8-byte message from a_ to b_ carrying @p seq, received and checked byte for byte.
    void one_message(uint64_t seq) {
        unsigned char out[kMessage];
        unsigned char in[kMessage] = {};
        for (size_t i = 0; i < kMessage; ++i)
            out[i] = static_cast<unsigned char>(seq * 131 + i);
        swy_request_h rreq = nullptr;
        swy_status_t rs = swy_tag_recv_nb(b_, in, sizeof(in), kTag, ~swy_tag_t{0}, nullptr, &rreq);
        ASSERT_TRUE(rs == SWY_OK || rs == SWY_INPROGRESS) << swy_status_string(rs);
        swy_request_h sreq = nullptr;
        swy_status_t ss = swy_tag_send_nb(ep_, out, sizeof(out), kTag, nullptr, &sreq);
        ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
        if (ss == SWY_INPROGRESS) {
            ASSERT_EQ(wait(sreq), SWY_OK);
            swy_request_free(sreq);
        }
        if (rs == SWY_INPROGRESS) {
            ASSERT_EQ(wait(rreq), SWY_OK);
            swy_request_free(rreq);
        }
        ASSERT_EQ(std::memcmp(in, out, kMessage), 0) << "message " << seq;
    }
};

TEST_F(ShmPrefault, FirstPassOverPioRingTakesNoPageFaults) {
    // The first message attaches the lane and announces its ring.
    one_message(0);
    swy_ep_attr_t attr{};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE;
    ASSERT_EQ(swy_ep_query(ep_, &attr), SWY_OK);
    ASSERT_EQ(attr.pio, 1) << "the lane is on the shared FIFO: nothing to test";

    const long before = page_faults();
    for (int i = 1; i <= kMessages; ++i) {
        one_message(static_cast<uint64_t>(i));
        if (HasFatalFailure()) return;
    }
    const long faults = page_faults() - before;
    // Without the prefault: 64 write faults (sender) + 64 read faults (receiver). A few are
    // allowed for the test's own memory (gtest, the allocator).
    EXPECT_LT(faults, 16) << faults << " page faults over " << kMessages
                          << " messages through a fresh 256 KiB PIO ring";
}

}  // namespace
