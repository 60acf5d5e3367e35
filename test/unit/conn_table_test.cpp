// common::ConnTable: keys (slot, generation) name one connection forever; slots are reused
// late, oldest first, and never while the owner says the old connection must stay.
#include "common/conn_table.h"

#include <gtest/gtest.h>

#include <cstdint>

using swy::common::ConnTable;

namespace {

struct Conn {
    uint16_t index = 0;
    uint32_t generation = 0;
    bool busy = false;  // e.g. a failure still to be reported
};

}  // namespace

TEST(ConnTable, LookupFindsOnlyTheCurrentGeneration) {
    ConnTable<Conn> t(1);
    Conn* a = t.add();
    ASSERT_NE(a, nullptr);
    const uint16_t slot = a->index;
    const uint32_t old_generation = a->generation;
    EXPECT_EQ(t.lookup(slot, old_generation), a);
    t.erase(slot);
    EXPECT_EQ(t.lookup(slot, old_generation), nullptr) << "erased: nothing answers";
    Conn* b = t.add();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->index, slot) << "the only slot is reused";
    EXPECT_NE(b->generation, old_generation);
    EXPECT_EQ(t.lookup(slot, old_generation), nullptr) << "a stale key is refused";
    EXPECT_EQ(t.lookup(slot, b->generation), b);
    EXPECT_EQ(t.lookup(slot, ConnTable<Conn>::kNoGeneration), nullptr);
    EXPECT_EQ(t.lookup(7, 0), nullptr) << "out of range";
}

TEST(ConnTable, ReleasedConnectionStaysFindableUntilItsSlotIsReused) {
    ConnTable<Conn> t(1);
    Conn* a = t.add();
    const uint32_t g = a->generation;
    t.release(a->index);
    EXPECT_EQ(t.lookup(0, g), a) << "a closed connection can still say it is closed";
    Conn* b = t.add();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(t.lookup(0, g), nullptr);
}

TEST(ConnTable, NewSlotsFirstThenTheOneFreedLongestAgo) {
    ConnTable<Conn> t(3);
    Conn* c0 = t.add();
    Conn* c1 = t.add();
    t.erase(c0->index);  // slot 0 free, but slot 2 was never used: it goes first
    Conn* c2 = t.add();
    EXPECT_EQ(c2->index, 2);
    t.erase(c2->index);
    t.erase(c1->index);  // free list: 0, 2, 1
    EXPECT_EQ(t.add()->index, 0);
    EXPECT_EQ(t.add()->index, 2);
    EXPECT_EQ(t.add()->index, 1);
    EXPECT_EQ(t.add(), nullptr) << "every slot in use";
}

TEST(ConnTable, SlotIsNotReusedWhileTheOwnerSaysNo) {
    ConnTable<Conn> t(2);
    Conn* a = t.add();
    Conn* b = t.add();
    a->busy = true;
    t.release(a->index);
    t.release(b->index);
    int retired = 0;
    auto can_reuse = [](const Conn& c) { return !c.busy; };
    auto retire = [&](Conn&) { ++retired; };
    Conn* c = t.add(can_reuse, retire);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->index, 1) << "slot 0 was freed first but is still busy";
    EXPECT_EQ(retired, 1);
    EXPECT_EQ(t.add(can_reuse, retire), nullptr);
    t[0]->busy = false;
    Conn* d = t.add(can_reuse, retire);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->index, 0);
    EXPECT_EQ(retired, 2);
}

TEST(ConnTable, ReleasingTwiceFreesTheSlotOnce) {
    ConnTable<Conn> t(1);
    Conn* a = t.add();
    t.release(a->index);
    t.release(a->index);
    Conn* b = t.add();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(t.add(), nullptr) << "the second release left no extra free-list entry";
}

TEST(ConnTable, GenerationsWrapWithinTheMaskAndStayDistinctForAWhile) {
    ConnTable<Conn> t(1, 0x7);
    uint32_t seen = 0;
    for (int i = 0; i < 20; ++i) {
        Conn* c = t.add();
        ASSERT_NE(c, nullptr);
        EXPECT_LE(c->generation, 0x7u);
        if (i > 0) {
            EXPECT_EQ(c->generation, (seen + 1) & 0x7);
        }
        seen = c->generation;
        t.erase(c->index);
    }
}
